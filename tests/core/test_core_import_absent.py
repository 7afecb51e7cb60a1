"""``import_log(..., absent=True)``: a migration's import into a session it found empty.

The hint saves the reads of the log's end; it must never lose or reorder anything when the
session does have a log, or a staged transcript a stopped retention left.
"""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import Message

from agent_stores.core import LogHistoryProvider
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.core.objectlog import ObjectLogDriver
from agent_stores.testing.history import SimulatedCrash, SuiteCompaction, crash_log_history
from objectlog_support import Counting

pytestmark = pytest.mark.asyncio


def _messages(*texts: str) -> list[Message]:
    return [Message(role="user", contents=[t], message_id=t) for t in texts]


def _texts(messages: list[Any]) -> list[str]:
    return [m.text for m in messages]


async def test_an_import_into_a_session_never_written_is_one_write() -> None:
    objects = Counting()
    history = LogHistoryProvider(ObjectLogDriver(objects))
    await history.import_log("s", _messages("a", "b"), absent=True)
    assert objects.calls == ["put"]  # the first segment, claimed only if that slot was never written
    objects.calls.clear()
    await LogHistoryProvider(ObjectLogDriver(objects)).import_log("t", _messages("a", "b"))
    assert objects.calls == ["list", "list", "put"], "the ordinary import reads the log's end: the hint saves that"
    assert _texts(await history.export_log("s")) == ["a", "b"]


async def test_the_hint_on_a_session_that_has_a_log_appends_after_it() -> None:
    objects = MemoryObjectDriver()
    await LogHistoryProvider(ObjectLogDriver(objects)).import_log("s", _messages("a"))
    other = LogHistoryProvider(ObjectLogDriver(objects))  # knows nothing of the log
    await other.import_log("s", _messages("b", "c"), absent=True)
    assert _texts(await other.export_log("s")) == ["a", "b", "c"]
    await other.import_log("s", _messages("d"), absent=True)  # and after its own
    assert _texts(await LogHistoryProvider(ObjectLogDriver(objects)).export_log("s")) == ["a", "b", "c", "d"]


async def test_the_hint_beside_a_staged_transcript_restores_it_first() -> None:
    objects = MemoryObjectDriver()
    provider = LogHistoryProvider(ObjectLogDriver(objects))
    await provider.save_messages("s", _messages("m0", "m1", "m2", "m3", "m4"))
    assert await provider.compact("s", SuiteCompaction(keep=2))
    kept = _texts(await LogHistoryProvider(ObjectLogDriver(objects), skip_excluded=True).get_messages("s"))
    crash_log_history(provider, 3)  # stop the retention before its swap: the log absent, a staged one beside it
    with pytest.raises(SimulatedCrash):
        await provider.retain("s")
    fresh = LogHistoryProvider(ObjectLogDriver(objects), skip_excluded=True)
    await fresh.import_log("s", _messages("later"), absent=True)
    assert _texts(await fresh.get_messages("s")) == [*kept, "later"]
