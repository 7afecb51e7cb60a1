"""Conformance clauses for the harness's ``TodoStore`` implementations."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from agent_framework import AgentSession
from agent_framework._harness._todo import TodoItem, TodoStore

from agent_stores.core.lifecycle import adapter_capabilities
from agent_stores.core.todos import ObjectTodoStore

from ._base import ConformanceBase, requires, store_at, unique_id
from .adversarial import adversarial_ids, has_separator, storable

__all__ = [
    "OBJECT_TODO_CAPABILITIES",
    "ObjectTodoStoreConformance",
    "TodoStoreCapabilities",
    "TodoStoreConformance",
    "corrupt_object_todos",
    "todo_store_at",
]

OpenStore = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class TodoStoreCapabilities:
    """What a todo store declares about itself; defaults are the minimal ``TodoStore`` contract.

    Attributes:
        durable: State lives outside the ``AgentSession`` object, keyed by its session id: a
            new ``AgentSession`` with the same id (a restarted process) sees it. The
            framework's ``TodoSessionStore`` keeps state inside ``session.state`` instead.
        separator_session_ids: Session ids holding a path separator are accepted like any other;
            without it they are a ``ValueError`` (``TodoFileStore`` refuses them).
        namespaces: The factory accepts ``namespace=...``; namespaces never share state.
        corruptible: The test class provides a ``corrupt_todos`` fixture: an async callable
            ``(store, session, source_id) -> None`` that overwrites the stored state with bytes
            that are not JSON. Loading must then be a ``ValueError``. For a store built on the
            core's ``ObjectTodoStore``, the fixture returns :func:`corrupt_object_todos`.

    """

    durable: bool = False
    separator_session_ids: bool = True
    namespaces: bool = False
    corruptible: bool = False


#: What the core's ``ObjectTodoStore`` declares on any backend (as ``agent-stores check`` does).
OBJECT_TODO_CAPABILITIES = TodoStoreCapabilities(**adapter_capabilities()["todos"])


def todo_store_at(url: str, backend_options: Mapping[str, Any] | None = None, **options: Any) -> ObjectTodoStore:
    """A todo store on its own ``open_stores(url, **backend_options)``, closed with it.

    A ``todo_store_factory`` for a backend's stores (see :func:`checkpoint_storage_at`).
    """
    return store_at(url, backend_options, lambda stores: stores.todo_store(**options))


async def corrupt_object_todos(store: ObjectTodoStore, session: AgentSession, source_id: str) -> None:
    """Overwrite the stored todo state of ``session`` and ``source_id`` with bytes that are not JSON.

    The ``corrupt_todos`` fixture of any store built on the core's ``ObjectTodoStore``.
    """
    await store.driver.put(store.state_key(session, source_id), b"{not json")


def _items(*titles: str) -> list[TodoItem]:
    return [TodoItem(id=index + 1, title=title) for index, title in enumerate(titles)]


def _session(session_id: str | None = None) -> AgentSession:
    return AgentSession(session_id=session_id or unique_id("session"))


class TodoStoreConformance(ConformanceBase):
    """Clauses every ``TodoStore`` must pass.

    Provide a ``todo_store_factory`` fixture returning a callable (sync or async) that opens a
    store over the same backing data on every call (taking ``namespace=`` when declared).
    """

    capabilities: ClassVar[TodoStoreCapabilities] = TodoStoreCapabilities()
    factory_fixture: ClassVar[str] = "todo_store_factory"
    driver_suite: ClassVar[str | None] = "ObjectDriverConformance"

    async def test_fresh_session_is_empty(self, open_store: OpenStore) -> None:
        """A session never saved loads as no items and next id 1.

        A failure means the store raised or invented items for an unknown session.
        """
        store: TodoStore = await open_store()
        assert await store.load_state(_session(), source_id="todo") == ([], 1)
        assert await store.load_items(_session(), source_id="todo") == []

    async def test_round_trip(self, open_store: OpenStore) -> None:
        """Saved items come back equal and in order (title, description, completion), with the saved next id.

        A failure means a field was dropped or changed; compare ``to_dict()`` of both.
        """
        store: TodoStore = await open_store()
        session = _session()
        items = [
            TodoItem(id=1, title="plan", description="ünïcødé 🙂", is_complete=True),
            TodoItem(id=4, title="build"),
            TodoItem(id=2, title="ship", description=""),
        ]
        await store.save_state(session, items, next_id=9, source_id="todo")
        loaded, next_id = await store.load_state(session, source_id="todo")
        assert [i.to_dict(exclude_none=False) for i in loaded] == [i.to_dict(exclude_none=False) for i in items]
        assert next_id == 9

    async def test_next_id_clamped(self, open_store: OpenStore) -> None:
        """A ``next_id`` at or below an existing item id comes back as one past the highest id (the framework's rule).

        A failure means a later ``todos_add`` would reuse an id already in the list.
        """
        store: TodoStore = await open_store()
        session = _session()
        await store.save_state(session, [TodoItem(id=7, title="x")], next_id=3, source_id="todo")
        assert (await store.load_state(session, source_id="todo"))[1] == 8

    async def test_save_replaces(self, open_store: OpenStore) -> None:
        """A second save replaces the whole list (removals stick), never merges.

        A failure means removed items came back.
        """
        store: TodoStore = await open_store()
        session = _session()
        await store.save_state(session, _items("a", "b", "c"), next_id=4, source_id="todo")
        await store.save_state(session, [TodoItem(id=2, title="b")], next_id=4, source_id="todo")
        items, next_id = await store.load_state(session, source_id="todo")
        assert [i.id for i in items] == [2] and next_id == 4

    async def test_sources_are_isolated(self, open_store: OpenStore) -> None:
        """Two ``source_id`` values on one session keep separate lists.

        A failure means two todo providers on one agent would overwrite each other.
        """
        store: TodoStore = await open_store()
        session = _session()
        await store.save_state(session, _items("one"), next_id=2, source_id="todo")
        await store.save_state(session, _items("x", "y"), next_id=3, source_id="plan")
        assert [i.title for i in await store.load_items(session, source_id="todo")] == ["one"]
        assert [i.title for i in await store.load_items(session, source_id="plan")] == ["x", "y"]

    async def test_adversarial_sessions_are_distinct(self, open_store: OpenStore) -> None:
        """Session ids differing in case, whitespace, separators, ``..``, globs or Unicode never share a list.

        The ids are a unique base alone and with each adversarial fragment every store must keep
        (:func:`agent_stores.testing.adversarial.storable`) after it.

        Without ``separator_session_ids``, ids holding a path separator must be a ``ValueError``.
        A failure means two sessions share state (the assertion names them).
        """
        store: TodoStore = await open_store()
        base = unique_id("adv")
        if not self.capabilities.separator_session_ids:
            for session_id in adversarial_ids(base, where=lambda f: storable(f) and has_separator(f))[1:]:
                with pytest.raises(ValueError):
                    await store.save_state(_session(session_id), _items("refused"), next_id=2, source_id="todo")
            kept = adversarial_ids(base, where=lambda f: storable(f) and not has_separator(f))
        else:
            kept = adversarial_ids(base)
        sessions = [_session(session_id) for session_id in kept]
        for index, session in enumerate(sessions):
            await store.save_state(session, _items(f"item-{index}"), next_id=2, source_id="todo")
        for index, session in enumerate(sessions):
            items = await store.load_items(session, source_id="todo")
            assert [i.title for i in items] == [f"item-{index}"], f"{session.session_id!r} collided"

    async def test_same_session_object_sees_state_across_instances(self, open_store: OpenStore) -> None:
        """A second store instance given the same session sees what the first saved.

        A failure means the state lives in the store instance.
        """
        first: TodoStore = await open_store()
        session = _session()
        await first.save_state(session, _items("kept"), next_id=2, source_id="todo")
        second: TodoStore = await open_store()
        assert [i.title for i in await second.load_items(session, source_id="todo")] == ["kept"]

    @requires("durable")
    async def test_restart_sees_state(self, open_store: OpenStore) -> None:
        """A new ``AgentSession`` with the same id, on a new store instance, sees the saved state.

        A failure means the state did not reach the backing store (or is keyed by the session
        object rather than its id).
        """
        first: TodoStore = await open_store()
        session_id = unique_id("restart")
        await first.save_state(_session(session_id), _items("a", "b"), next_id=5, source_id="todo")
        second: TodoStore = await open_store()
        items, next_id = await second.load_state(_session(session_id), source_id="todo")
        assert [i.title for i in items] == ["a", "b"] and next_id == 5

    async def test_concurrent_sessions(self, open_store: OpenStore) -> None:
        """Concurrent saves of different sessions from two instances all persist.

        A failure means one session's save overwrote another's.
        """
        stores: list[TodoStore] = [await open_store(), await open_store()]
        sessions = [_session() for _ in range(12)]
        await asyncio.gather(
            *(stores[i % 2].save_state(s, _items(f"t{i}"), next_id=2, source_id="todo") for i, s in enumerate(sessions))
        )
        for index, session in enumerate(sessions):
            assert [i.title for i in await stores[0].load_items(session, source_id="todo")] == [f"t{index}"]

    @requires("namespaces")
    async def test_namespaces_are_isolated(self, open_store: OpenStore) -> None:
        """Stores with different namespaces never see each other's todo lists for the same session.

        A failure means the namespace is not part of every key.
        """
        one: TodoStore = await open_store(namespace=unique_id("tenant"))
        two: TodoStore = await open_store(namespace=unique_id("tenant"))
        session = _session()
        await one.save_state(session, _items("mine"), next_id=2, source_id="todo")
        assert await two.load_state(session, source_id="todo") == ([], 1)

    @requires("corruptible")
    async def test_corrupt_state_is_value_error(self, open_store: OpenStore, request: pytest.FixtureRequest) -> None:
        """Stored state that is not JSON is a ``ValueError`` (as ``TodoFileStore`` raises), and a save recovers.

        A failure means the store crashed with another error type or returned an empty list
        silently (the agent would lose its plan without a word).
        """
        corrupt: Callable[[Any, AgentSession, str], Awaitable[None]] = request.getfixturevalue("corrupt_todos")
        store: TodoStore = await open_store()
        session = _session()
        await store.save_state(session, _items("a"), next_id=2, source_id="todo")
        await corrupt(store, session, "todo")
        with pytest.raises(ValueError):
            await store.load_state(session, source_id="todo")
        await store.save_state(session, _items("fresh"), next_id=2, source_id="todo")
        assert [i.title for i in await store.load_items(session, source_id="todo")] == ["fresh"]


class ObjectTodoStoreConformance(TodoStoreConformance):
    """The todo suite for stores built on the core's ``ObjectTodoStore`` (every backend's).

    Declares :data:`OBJECT_TODO_CAPABILITIES` and provides ``corrupt_todos``; a subclass
    provides ``todo_store_factory`` (see :func:`todo_store_at`).
    """

    capabilities = OBJECT_TODO_CAPABILITIES

    @pytest.fixture
    def corrupt_todos(self) -> Callable[[ObjectTodoStore, AgentSession, str], Awaitable[None]]:
        """The stored state overwritten with bytes that are not JSON (:func:`corrupt_object_todos`)."""
        return corrupt_object_todos
