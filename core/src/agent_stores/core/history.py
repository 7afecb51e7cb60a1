"""``LogHistoryProvider``: the framework's ``HistoryProvider`` over any :class:`LogDriver`."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from typing import Any

from agent_framework import HistoryProvider, Message

from ._lifecycle import OwnedResource
from .codec import count_already_stored, decode_message, encode_message, message_digest
from .drivers import LogDriver, LogRecord
from .errors import StoreConflictError
from .keys import KeySpace

__all__ = ["LogHistoryProvider", "trim_orphans"]

DEFAULT_SOURCE_ID = "history"

# Optimistic-concurrency retries of one save against concurrent writers, with jittered backoff.
_CONFLICT_ATTEMPTS = 32
_BACKOFF_BASE_S = 0.001
_BACKOFF_CAP_S = 0.05

# A message carrying one of these answers an earlier message; at the start of a window it is an orphan.
_ANSWER_CONTENT_TYPES = frozenset({"function_result", "function_approval_response"})


def trim_orphans(window: list[Message]) -> list[Message]:
    """Drop leading messages that answer a message outside the window (tool results, approval responses)."""
    start = 0
    while start < len(window) and _is_answer(window[start]):
        start += 1
    return window[start:] if start else window


def _is_answer(message: Message) -> bool:
    return str(message.role) == "tool" or any(c.type in _ANSWER_CONTENT_TYPES for c in message.contents)


def validate_max_messages(max_messages: int | None) -> int | None:
    """Return ``max_messages`` or raise ``ValueError`` when it is not a positive int."""
    if max_messages is None:
        return None
    if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages <= 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"max_messages must be a positive int or None, got {max_messages!r}")
    return max_messages


class LogHistoryProvider(OwnedResource, HistoryProvider):
    """Chat history in an append-only log per (namespace, source_id, session_id).

    Stores every message verbatim as the JSON of ``Message.to_dict()``. A save stores exactly
    what the framework's ``InMemoryHistoryProvider`` would for the same sequence of saves (the
    framework's ``filter_new_messages`` decides), reading only the digests of the last
    ``len(messages)`` stored messages, and is atomic across processes through a conditional
    append retried on conflict.

    Args:
        driver: The log driver; borrowed unless ``owns_driver``.
        source_id: Provider id; part of every key, so two providers never share history.
        namespace: Tenant or application prefix; isolation is total.
        max_messages: Load only the newest N messages; the window never starts with a tool
            result or approval response whose request lies outside it.
        skip_excluded: Omit messages whose ``additional_properties["_excluded"]`` is truthy.
        owns_driver: Close the driver on ``aclose()``.
        **kwargs: ``load_messages``, ``store_inputs``, ``store_context_messages``,
            ``store_context_from``, ``store_outputs`` as in ``HistoryProvider``.

    Raises:
        ValueError: ``source_id`` is empty or ``max_messages`` is not a positive int.

    """

    def __init__(
        self,
        driver: LogDriver,
        *,
        source_id: str = DEFAULT_SOURCE_ID,
        namespace: str = "",
        max_messages: int | None = None,
        skip_excluded: bool = False,
        owns_driver: bool = False,
        **kwargs: Any,
    ) -> None:
        if not isinstance(source_id, str) or not source_id:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError("source_id must be a non-empty string")
        super().__init__(source_id, **kwargs)
        self.max_messages = validate_max_messages(max_messages)
        self.skip_excluded = skip_excluded
        self.keys = KeySpace(namespace)
        self.driver = driver
        self._adopt(driver, owned=owns_driver)

    @property
    def namespace(self) -> str:
        """The namespace every key of this provider lives in."""
        return self.keys.namespace

    def _key(self, session_id: str | None) -> str:
        return self.keys.history(self.source_id, session_id)

    async def get_messages(
        self, session_id: str | None, *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Message]:
        """Return the session's messages in save order (the newest ``max_messages`` when set).

        Raises:
            CorruptRecordError: A stored record cannot be decoded.

        """
        key = self._key(session_id)
        payloads = await self.driver.read(key, last=self.max_messages)
        messages = [decode_message(p, where=f"history record in {key!r}") for p in payloads]
        if self.max_messages is not None:
            messages = trim_orphans(messages)
        if self.skip_excluded:
            messages = [m for m in messages if not m.additional_properties.get("_excluded", False)]
        return messages

    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Append the messages not already stored, atomically.

        Raises:
            StoreConflictError: Concurrent writers kept winning for every retry.

        """
        if not messages:
            return
        key = self._key(session_id)
        digests = [message_digest(m) for m in messages]
        records: list[LogRecord] | None = None
        for attempt in range(_CONFLICT_ATTEMPTS):
            tail = await self.driver.tail(key, len(digests))
            known = count_already_stored(tail.digests, digests)
            if known == len(digests):
                return
            if records is None:
                records = [LogRecord(d, encode_message(m)) for d, m in zip(digests, messages, strict=True)]
            try:
                await self.driver.append(key, records[known:], expected_length=tail.length)
                return
            except StoreConflictError:
                await asyncio.sleep(random.uniform(0, min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2**attempt)))
        raise StoreConflictError(f"gave up appending to {key!r} after {_CONFLICT_ATTEMPTS} conflicting writes")

    async def count_messages(self, session_id: str | None) -> int:
        """Return how many messages the session holds."""
        return await self.driver.length(self._key(session_id))

    async def delete_session(self, session_id: str | None) -> bool:
        """Delete the session's whole history; return whether it existed."""
        return await self.driver.delete(self._key(session_id))

    async def list_sessions(self, *, after: str | None = None, limit: int = 100) -> list[str]:
        """Return up to ``limit`` session ids of this provider, sorted by key, after the id ``after``.

        Session ids longer than the key segment limit are stored as digests and are not listed.
        """
        prefix = self.keys.history_prefix(self.source_id)
        after_key = None if after is None else self._key(after)
        keys = await self.driver.list_keys(prefix, after=after_key, limit=limit)
        ids = (KeySpace.decode(k[len(prefix) :]) for k in keys)
        return [i for i in ids if i is not None]
