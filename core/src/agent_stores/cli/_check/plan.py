"""What ``agent-stores check`` will run: the suites, each with its opener, capabilities and helper fixtures."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
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
    SealingConformance,
    SessionStoreConformance,
    TodoStoreConformance,
    corrupt_object_checkpoint,
    corrupt_object_session,
    corrupt_object_todos,
)

__all__ = [
    "CORRUPT_FIXTURES",
    "GENERIC_CORRUPTERS",
    "SUITES",
    "ClauseScope",
    "Plan",
    "SuitePlan",
    "close_store",
]

#: Suite name -> conformance class, in the order ``check`` runs them.
SUITES: dict[str, type[ConformanceBase]] = {
    "history": HistoryProviderConformance,
    "files": FileStoreConformance,
    "sessions": SessionStoreConformance,
    "checkpoints": CheckpointStorageConformance,
    "todos": TodoStoreConformance,
    "log_driver": LogDriverConformance,
    "object_driver": ObjectDriverConformance,
    "sealing": SealingConformance,
}

#: The fixture name of each suite's "corrupt a stored record" helper.
CORRUPT_FIXTURES = {"sessions": "corrupt_session", "checkpoints": "corrupt_checkpoint", "todos": "corrupt_todos"}


class ClauseScope:
    """What one clause opened through a URL: every ``Stores`` is closed when the clause ends."""

    def __init__(self, url: str | None, *, shared: bool, clock: Callable[[], float] | None = None) -> None:
        self.url = url
        self.shared = shared
        self.clock = clock
        self.opened: list[Stores] = []

    def stores(self) -> Stores:
        """Open the URL's stores (one per call, or one per clause for an in-process store), on the clause's clock."""
        assert self.url is not None, "only URL targets open stores"
        if self.shared and self.opened:
            return self.opened[0]
        stores = open_stores(self.url) if self.clock is None else open_stores(self.url, clock=self.clock)
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
        fake_clock: The stores follow the clause's ``clock`` (the ttl clauses move it instead of waiting).
    """

    name: str
    opener: Callable[[ClauseScope], Callable[..., Any]]
    capabilities: Any
    divergences: dict[str, str] = field(default_factory=dict[str, str])
    fixtures: dict[str, Any] = field(default_factory=dict[str, Any])
    fake_clock: bool = False


@dataclass
class Plan:
    """The suites one check runs, and the URL their clauses open (``None`` for a factory)."""

    url: str | None = None
    shared: bool = False
    suites: list[SuitePlan] = field(default_factory=list[SuitePlan])
    #: The URL's stores follow a clock given to ``open_stores`` (the clause's ``clock`` is passed).
    on_clock: bool = False
    #: ``(suite, clause)`` left out of the run (reported as not run, with the reason).
    skip: set[tuple[str, str]] = field(default_factory=set[tuple[str, str]])


async def close_store(store: Any) -> None:
    """Close a store or driver of any kind: ``aclose()`` if it has one (sync or async), else nothing."""
    close = getattr(store, "aclose", None)
    if close is not None:
        result = close()
        if inspect.isawaitable(result):
            await result


# -- "corrupt a stored record" helpers for stores built on the core's adapters ---------------------


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
