"""``ObjectTodoStore``: the harness's ``TodoStore`` over any :class:`ObjectDriver`."""

from __future__ import annotations

import json
from typing import Any, cast

from agent_framework import AgentSession
from agent_framework._harness._todo import (  # the framework's own parsing and id rule
    TodoItem,
    TodoStore,
    _parse_todo_items,  # pyright: ignore[reportPrivateUsage]
    _safe_next_id,  # pyright: ignore[reportPrivateUsage]
)

from .drivers import ObjectDriver
from .errors import CorruptRecordError
from .keys import KeySpace, key_segment
from .lifecycle import OwnedResource
from .telemetry import store_operation

__all__ = ["ObjectTodoStore", "decode_todo_state", "encode_todo_state"]


def encode_todo_state(items: list[TodoItem], next_id: int) -> bytes:
    """Encode todo state exactly as the framework's ``TodoFileStore`` writes its JSON file.

    ``next_id`` is clamped above every item id, as the framework does.
    """
    payload = {"items": [item.to_dict(exclude_none=False) for item in items], "next_id": _safe_next_id(items, next_id)}
    return (json.dumps(payload) + "\n").encode("utf-8")


def decode_todo_state(data: bytes, *, where: str) -> tuple[list[TodoItem], int]:
    """Decode what :func:`encode_todo_state` (or ``TodoFileStore``) wrote.

    Raises:
        CorruptRecordError: The bytes are not JSON (also a ``ValueError``).
        ValueError: The JSON has the wrong shape, as ``TodoFileStore`` reports it.
    """
    try:
        raw: object = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise CorruptRecordError(f"todo state {where} is not valid JSON (corrupt or truncated)") from err
    if not isinstance(raw, dict):
        raise ValueError(f"todo state {where} must contain a JSON object")
    payload = cast(dict[str, Any], raw)
    raw_items: object = payload.get("items", [])
    raw_next_id: object = payload.get("next_id", 1)
    if not isinstance(raw_items, list):
        raise ValueError(f"todo state {where} has a non-list 'items' field")
    if not isinstance(raw_next_id, int) or isinstance(raw_next_id, bool):
        raise ValueError(f"todo state {where} has a non-integer 'next_id' field")
    items = _parse_todo_items(cast(list[Any], raw_items), source_description=f"todo state {where}")
    return items, _safe_next_id(items, raw_next_id)


class ObjectTodoStore(OwnedResource, TodoStore):
    """Harness todo state as one object per session and ``source_id``, in ``TodoFileStore``'s JSON.

    The state lives outside ``AgentSession.state``, keyed by the session's id, so it survives
    a process restart and is shared by every process that opens the same store. Each save
    replaces the whole state (one object write, last-writer-wins across processes); the
    framework's ``TodoProvider`` serialises mutations of one session within a process.
    Loading a session never saved is ``([], 1)``.

    Security posture:
        Todo items are stored as plaintext JSON. Session ids and source ids map injectively
        to key segments, so no id reaches another session's state.

    Args:
        driver: The object driver; borrowed unless ``owns_driver``.
        prefix: Key prefix of every object (``""`` or ending with ``/``).
        namespace: Application prefix; namespaces never share state.
        tenant: Keep every object under ``tenants/<tenant>/`` (what a tenant view passes).
        owns_driver: Close the driver on ``aclose()``.

    Raises:
        ValueError: ``prefix`` does not end with ``/``, or ``tenant`` is empty.
    """

    def __init__(
        self,
        driver: ObjectDriver,
        *,
        prefix: str = "todos/",
        namespace: str = "",
        tenant: str | None = None,
        owns_driver: bool = False,
    ) -> None:
        keys = KeySpace(namespace, tenant)
        super().__init__()
        self.driver = driver
        self.prefix = keys.under(prefix)
        self.namespace = namespace
        self.tenant = tenant
        self._root = f"{self.prefix}{keys.namespace_segment}/"
        self._adopt(driver, owned=owns_driver)

    def _key(self, session: AgentSession, source_id: str) -> str:
        session_id: object = session.session_id
        if not isinstance(session_id, str) or not isinstance(source_id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"session and source ids are strings, got {session_id!r} and {source_id!r}")
        return f"{self._root}{key_segment(session_id)}/{key_segment(source_id)}.json"

    def state_key(self, session: AgentSession, source_id: str) -> str:
        """Return the driver key the todo state of ``session`` and ``source_id`` is stored under.

        For tools and tests that reach a stored record through ``driver`` directly (the
        conformance suite's ``corrupt_todos`` fixture, see
        :func:`agent_stores.testing.corrupt_object_todos`).

        Raises:
            ValueError: The session id or ``source_id`` is not a string.
        """
        return self._key(session, source_id)

    @store_operation("todos", "load_state", session=True)
    async def load_state(self, session: AgentSession, *, source_id: str) -> tuple[list[TodoItem], int]:
        """Return the session's todo items and next id (``([], 1)`` when none were saved).

        Raises:
            CorruptRecordError: The stored state is not JSON (a ``ValueError``); it is left in place.
            ValueError: The stored state has the wrong shape.
        """
        key = self._key(session, source_id)
        stored = await self.driver.get(key)
        if stored is None:
            return [], 1
        return decode_todo_state(stored.data, where=repr(key))

    @store_operation("todos", "save_state", session=True)
    async def save_state(self, session: AgentSession, items: list[TodoItem], *, next_id: int, source_id: str) -> None:
        """Replace the session's todo state (``next_id`` clamped above every item id)."""
        await self.driver.put(self._key(session, source_id), encode_todo_state(items, next_id))

    @store_operation("todos", "delete_state", session=True)
    async def delete_state(self, session: AgentSession, *, source_id: str) -> bool:
        """Remove the session's todo state; return whether there was one."""
        return await self.driver.delete(self._key(session, source_id))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.driver!r}, prefix={self.prefix!r}, namespace={self.namespace!r}, "
            f"tenant={self.tenant!r})"
        )
