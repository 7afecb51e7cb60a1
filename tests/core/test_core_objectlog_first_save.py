"""The first save of a session that was never written starts its object log with ``create``.

The save's own tail read tells a log that never held a segment (nothing listed) from one that
was deleted or expired (blank segments remain): only the first is started with one conditional
``put`` of its first slot, without the staged-transcript check (a transcript is only ever
staged from a log that was written). A session deleted and written again costs what it did.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from agent_framework import Message

from agent_stores.core import LogHistoryProvider, LogRecord, ObjectLogDriver
from objectlog_support import Counting

pytestmark = pytest.mark.asyncio


def _msg(text: str) -> list[Message]:
    return [Message(role="user", contents=[text], message_id=text)]


def _texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


async def test_a_first_save_is_the_end_listings_and_one_put() -> None:
    objects = Counting()
    history = LogHistoryProvider(ObjectLogDriver(objects))
    await history.save_messages("s", _msg("a"))
    assert objects.calls == ["list", "list", "put"]  # the log's end (segments, tails), then slot 1
    objects.calls.clear()
    await history.save_messages("s", _msg("b"))
    assert objects.calls == ["put"]
    objects.calls.clear()
    loader = LogHistoryProvider(ObjectLogDriver(objects))
    assert await loader.get_messages("t") == []
    objects.calls.clear()
    await loader.save_messages("t", _msg("c"))  # after a load, as an agent saves
    assert objects.calls == ["list", "list", "put"]
    assert _texts(await LogHistoryProvider(ObjectLogDriver(objects)).get_messages("s")) == ["a", "b"]


async def test_a_session_deleted_and_written_again_costs_no_create_request() -> None:
    objects = Counting()
    writer = LogHistoryProvider(ObjectLogDriver(objects))
    await writer.save_messages("s", _msg("a"))
    await writer.delete_session("s")
    for history in (writer, LogHistoryProvider(ObjectLogDriver(objects))):  # the deleter, and a stranger
        objects.calls.clear()
        await history.save_messages("s", _msg(f"again-{id(history)}"))
        assert objects.calls.count("put") == 1, objects.calls  # the claim only: nothing tried slot 1
        await history.delete_session("s")
    again = LogHistoryProvider(ObjectLogDriver(objects))
    await again.save_messages("s", _msg("last"))
    assert _texts(await LogHistoryProvider(ObjectLogDriver(objects)).get_messages("s")) == ["last"]


class Interleaved(Counting):
    """:class:`Counting` that runs ``before_put`` (once) before the next ``put`` reaches the store."""

    def __init__(self) -> None:
        super().__init__()
        self.before_put: Callable[[], Awaitable[None]] | None = None

    async def put(self, key: str, data: bytes, **kwargs: Any) -> str:
        hook, self.before_put = self.before_put, None
        if hook is not None:
            await hook()
        return await super().put(key, data, **kwargs)


async def test_a_first_save_that_loses_its_create_appends_after_the_winner() -> None:
    """The race is forced: another writer starts the log between this save's tail read and its ``create``."""
    objects = Interleaved()
    first, second = LogHistoryProvider(ObjectLogDriver(objects)), LogHistoryProvider(ObjectLogDriver(objects))

    async def first_saves() -> None:
        await first.save_messages("s", _msg("a"))

    objects.before_put = first_saves
    await second.save_messages("s", _msg("b"))
    assert objects.calls.count("put") == 3  # the first's create, the second's lost create, its claim
    assert _texts(await LogHistoryProvider(ObjectLogDriver(objects)).get_messages("s")) == ["a", "b"]


async def test_create_after_another_writer_started_the_log_writes_nothing_and_asks_once() -> None:
    objects = Counting()
    first, second = ObjectLogDriver(objects), ObjectLogDriver(objects)
    assert (await second.tail("k", 4)).version is None
    await first.append("k", [LogRecord("d-a", b"a")], expected_version=None, session_id="s")
    objects.calls.clear()
    assert await second.create("k", [LogRecord("d-b", b"b")], session_id="s") is None
    assert await second.create("k", [LogRecord("d-b", b"b")], session_id="s") is None
    assert objects.calls == ["put"]  # the lost put; the second create knew
    assert await first.read("k") == [b"a"]
