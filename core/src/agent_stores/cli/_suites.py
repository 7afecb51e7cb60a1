"""The conformance classes ``agent-stores check`` builds for one run, read by the generated test module.

``check`` fills :data:`PLAN` in its own process, writes a two-line test module that calls
:func:`build_classes`, and runs pytest on it: the factories (a live URL's stores or the user's
``module:attr``) never have to be serialised.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
import pytest_asyncio
from agent_framework import AgentSession

from agent_stores.core import ObjectSessionStore, Stores, open_stores
from agent_stores.core.checkpoints import ObjectCheckpointStorage
from agent_stores.core.todos import ObjectTodoStore
from agent_stores.testing import (
    CheckpointStorageConformance,
    ConformanceBase,
    FileStoreConformance,
    HistoryProviderConformance,
    LogDriverConformance,
    ObjectDriverConformance,
    SessionStoreConformance,
    TodoStoreConformance,
    corrupt_object_checkpoint,
    corrupt_object_session,
    corrupt_object_todos,
)

__all__ = ["PLAN", "SUITES", "ClauseScope", "SuitePlan", "build_classes", "history_from_url"]

#: Suite name -> conformance class, in the order ``check`` runs them.
SUITES: dict[str, type[ConformanceBase]] = {
    "history": HistoryProviderConformance,
    "files": FileStoreConformance,
    "sessions": SessionStoreConformance,
    "checkpoints": CheckpointStorageConformance,
    "todos": TodoStoreConformance,
    "log_driver": LogDriverConformance,
    "object_driver": ObjectDriverConformance,
}

#: The fixture name of each suite's "corrupt a stored record" helper.
CORRUPT_FIXTURES = {"sessions": "corrupt_session", "checkpoints": "corrupt_checkpoint", "todos": "corrupt_todos"}


class ClauseScope:
    """What one clause opened through a URL: every ``Stores`` is closed when the clause ends."""

    def __init__(self, url: str | None, *, shared: bool) -> None:
        self.url = url
        self.shared = shared
        self.opened: list[Stores] = []

    def stores(self) -> Stores:
        """Open the URL's stores (one per call, or one per clause for an in-process store)."""
        assert self.url is not None, "only URL targets open stores"
        if self.shared and self.opened:
            return self.opened[0]
        stores = open_stores(self.url)
        self.opened.append(stores)
        return stores

    async def aclose(self) -> None:
        """Close every ``Stores`` the clause opened."""
        for stores in reversed(self.opened):
            await stores.aclose()


@dataclass
class SuitePlan:
    """One suite to run: how to open a store, what it declares, and its helper fixtures.

    Attributes:
        name: The suite (a key of :data:`SUITES`).
        opener: ``opener(scope)`` returns the factory fixture's value for one clause.
        capabilities: An instance of the suite's capabilities class.
        divergences: Declared divergences (clause name -> reason).
        fixtures: Extra fixtures by name (``corrupt_session``, ``history_process_factory``...).
    """

    name: str
    opener: Callable[[ClauseScope], Callable[..., Any]]
    capabilities: Any
    divergences: dict[str, str] = field(default_factory=dict[str, str])
    fixtures: dict[str, Any] = field(default_factory=dict[str, Any])


@dataclass
class Plan:
    """Everything the generated module needs."""

    url: str | None = None
    shared: bool = False
    suites: list[SuitePlan] = field(default_factory=list[SuitePlan])


#: Filled by ``check`` before it runs pytest in the same process.
PLAN = Plan()


def _value_fixture(value: Any) -> Any:
    def fixture(self: Any) -> Any:
        del self
        return value

    return pytest.fixture(fixture)


def _factory_fixture(opener: Callable[[ClauseScope], Callable[..., Any]]) -> Any:
    def fixture(self: Any, agent_stores_check_scope: ClauseScope) -> Callable[..., Any]:
        del self
        return opener(agent_stores_check_scope)

    return pytest.fixture(fixture)


@pytest_asyncio.fixture(autouse=True)
async def agent_stores_check_scope() -> AsyncIterator[ClauseScope]:
    """Open stores for one clause and close them after it (and after the suite closed its stores)."""
    scope = ClauseScope(PLAN.url, shared=PLAN.shared)
    yield scope
    await scope.aclose()


def build_classes() -> dict[str, Any]:
    """Return the module's globals: one test class per planned suite (``Test_<suite>``) and the scope fixture."""
    classes: dict[str, Any] = {"agent_stores_check_scope": agent_stores_check_scope}
    for suite in PLAN.suites:
        base = SUITES[suite.name]
        namespace: dict[str, Any] = {
            "capabilities": suite.capabilities,
            "divergences": dict(suite.divergences),
            base.factory_fixture: _factory_fixture(suite.opener),
            "__doc__": f"The {suite.name} suite.",
        }
        for name, value in suite.fixtures.items():
            namespace[name] = _value_fixture(value)
        name = "Test_" + suite.name
        classes[name] = type(name, (base,), namespace)
    return classes


# -- helpers for stores built on the core's adapters -------------------------------------------


async def corrupt_session(store: Any, session_id: str) -> None:
    """Overwrite a stored snapshot of an ``ObjectSessionStore`` with bytes that are not a snapshot."""
    if not isinstance(store, ObjectSessionStore):
        pytest.fail(f"corruptible is declared but no corrupt_session helper was given for {type(store).__name__}")
    await corrupt_object_session(store, session_id)


async def corrupt_checkpoint(store: Any, checkpoint_id: str) -> None:
    """Truncate a stored checkpoint of an ``ObjectCheckpointStorage``."""
    if not isinstance(store, ObjectCheckpointStorage):
        pytest.fail(f"corruptible is declared but no corrupt_checkpoint helper was given for {type(store).__name__}")
    await corrupt_object_checkpoint(store, checkpoint_id)


async def corrupt_todos(store: Any, session: AgentSession, source_id: str) -> None:
    """Overwrite the stored todo state of an ``ObjectTodoStore`` with bytes that are not JSON."""
    if not isinstance(store, ObjectTodoStore):
        pytest.fail(f"corruptible is declared but no corrupt_todos helper was given for {type(store).__name__}")
    await corrupt_object_todos(store, session, source_id)


GENERIC_CORRUPTERS: dict[str, Any] = {
    "sessions": corrupt_session,
    "checkpoints": corrupt_checkpoint,
    "todos": corrupt_todos,
}


def history_from_url(url: str, namespace: str, **options: Any) -> Any:
    """The ``history_process_factory`` of a URL check: a provider in a child process, owning its stores."""
    stores = open_stores(url)
    provider = stores.history_provider(namespace=namespace, **options)
    adopt = getattr(provider, "_adopt", None)
    if adopt is not None:
        adopt(stores, owned=True)
    return provider
