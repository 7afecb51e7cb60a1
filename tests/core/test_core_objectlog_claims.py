"""Fair claims of the object log: a lost claim teaches the log's end, and a writer saving back to back yields its turn.

Writers of one log race for each next segment with a conditional ``put``. The writer that won
knows the end at once, the ones it beat only after a ``get``: without fair claims a writer
saving back to back wins every next slot and the others lose until it stops. These tests use
the in-process object driver, some behind a fixed delay per request (a round trip), so the
race a test needs is forced, not hoped for.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agent_framework import Message

from agent_stores.core import LogHistoryProvider, LogRecord, ObjectLogDriver, StoreConflictError
from agent_stores.core.memory import MemoryObjectDriver
from objectlog_support import Counting

pytestmark = pytest.mark.asyncio


def _records(*names: str) -> list[LogRecord]:
    return [LogRecord(f"d-{n}", n.encode()) for n in names]


class Distant(MemoryObjectDriver):
    """The in-process object driver a round trip away: half of ``rtt`` before each request, half after."""

    def __init__(self, rtt: float) -> None:
        super().__init__()
        self.half = rtt / 2

    async def get(self, key: str) -> Any:
        await asyncio.sleep(self.half)
        found = await super().get(key)
        await asyncio.sleep(self.half)
        return found

    async def list(self, prefix: str, **kwargs: Any) -> Any:
        await asyncio.sleep(self.half)
        found = await super().list(prefix, **kwargs)
        await asyncio.sleep(self.half)
        return found

    async def put(self, key: str, data: bytes, **kwargs: Any) -> str:
        await asyncio.sleep(self.half)
        try:
            return await super().put(key, data, **kwargs)
        finally:
            await asyncio.sleep(self.half)


async def test_a_lost_claim_teaches_the_end_so_the_retry_claims_with_no_read() -> None:
    objects = Counting()
    first, second = ObjectLogDriver(objects), ObjectLogDriver(objects)
    start = await first.append("k", _records("a"), expected_version=None, session_id="s")
    assert (await second.tail("k", 16)).version == start
    won = await first.append("k", _records("b"), expected_version=start, session_id="s")
    with pytest.raises(StoreConflictError) as lost:
        await second.append("k", _records("c"), expected_version=start, session_id="s")
    end = lost.value.log_end
    assert end is not None and (end.length, end.digests, end.version) == (2, ["d-a", "d-b"], won)
    objects.calls.clear()
    await second.append("k", _records("c"), expected_version=end.version, session_id="s")
    assert objects.calls == ["put"]  # the retry: one claim, no read
    assert await first.read("k") == [b"a", b"b", b"c"]


async def test_the_end_a_lost_claim_found_is_no_tail_read() -> None:
    """What a lost claim found is handed to its retry only: a tail read afterwards reads the log."""
    objects = MemoryObjectDriver()
    first, second = ObjectLogDriver(objects), ObjectLogDriver(objects)
    start = await first.append("k", _records("a"), expected_version=None, session_id="s")
    assert (await second.tail("k", 16)).version == start
    won = await first.append("k", _records("b"), expected_version=start, session_id="s")
    with pytest.raises(StoreConflictError) as lost:
        await second.append("k", _records("c"), expected_version=start, session_id="s")
    assert lost.value.log_end is not None
    newest = await first.append("k", _records("d"), expected_version=won, session_id="s")
    assert await second.tail("k", 16) == (3, ["d-a", "d-b", "d-d"], newest)
    with pytest.raises(StoreConflictError):  # the end found is stale now: the claim says so
        await second.append("k", _records("c"), expected_version=lost.value.log_end.version, session_id="s")


async def test_a_lost_claim_far_behind_reads_the_log_as_usual() -> None:
    objects = MemoryObjectDriver()
    first, second = ObjectLogDriver(objects), ObjectLogDriver(objects)
    version = start = await first.append("k", _records("a"), expected_version=None, session_id="s")
    assert (await second.tail("k", 16)).version == start
    for name in "bcde":  # more segments than the loser looks ahead for
        version = await first.append("k", _records(name), expected_version=version, session_id="s")
    with pytest.raises(StoreConflictError) as lost:
        await second.append("k", _records("x"), expected_version=start, session_id="s")
    assert lost.value.log_end is None  # not found where the log ends: the retry reads it
    tail = await second.tail("k", 16)
    assert (tail.length, tail.version) == (5, version)
    await second.append("k", _records("x"), expected_version=tail.version, session_id="s")
    assert await first.read("k") == [b"a", b"b", b"c", b"d", b"e", b"x"]


async def test_without_fair_claims_a_lost_claim_teaches_no_end() -> None:
    objects = MemoryObjectDriver()
    first, second = ObjectLogDriver(objects), ObjectLogDriver(objects, fair_claims=False)
    start = await first.append("k", _records("a"), expected_version=None, session_id="s")
    assert (await second.tail("k", 16)).version == start
    await first.append("k", _records("b"), expected_version=start, session_id="s")
    with pytest.raises(StoreConflictError) as lost:
        await second.append("k", _records("c"), expected_version=start, session_id="s")
    assert lost.value.log_end is None
    assert second.within("t/").fair_claims is False


async def test_a_writer_alone_on_its_log_claims_with_one_put() -> None:
    objects = Counting()
    log = ObjectLogDriver(objects)
    version = await log.append("k", _records("a"), expected_version=None, session_id="s")
    for name in "bcd":
        objects.calls.clear()
        version = await log.append("k", _records(name), expected_version=version, session_id="s")
        assert objects.calls == ["put"]


def _message(text: str) -> Message:
    return Message(role="user", contents=[text], message_id=text)


@pytest.mark.parametrize("fair", [True, False], ids=["fair", "unfair"])
async def test_a_writer_saving_back_to_back_does_not_keep_another_waiting(fair: bool) -> None:
    """Two writers that met on a session; one saves 20 times back to back, the other once meanwhile.

    With fair claims the single save lands among the first of the streak; without, the writer
    saving back to back wins every slot and the other save lands after the whole streak.
    """
    objects = Distant(rtt=0.02)
    streaker = LogHistoryProvider(ObjectLogDriver(objects, fair_claims=fair))
    other = LogHistoryProvider(ObjectLogDriver(objects, fair_claims=fair))
    # They meet: each loses one claim to the other (each save starts at the end it remembers).
    await other.save_messages("s", [_message("o0")])
    await streaker.save_messages("s", [_message("s0")])
    await other.save_messages("s", [_message("o1")])
    await streaker.save_messages("s", [_message("s1")])
    done: list[str] = []
    streaking = asyncio.Event()

    async def streak() -> None:
        for i in range(2, 22):
            await streaker.save_messages("s", [_message(f"s{i}")])
            done.append(f"s{i}")
            if i == 3:
                streaking.set()

    async def single() -> None:
        await streaking.wait()
        await other.save_messages("s", [_message("o2")])
        done.append("o2")

    await asyncio.gather(streak(), single())
    stored = [m.message_id or "" for m in await streaker.get_messages("s")]
    assert sorted(stored) == sorted(["o0", "s0", "o1", "s1", "o2", *(f"s{i}" for i in range(2, 22))])
    behind = done.index("o2") - done.index("s3") - 1  # saves of the streak that landed before the single one
    if fair:
        assert behind <= 6, done  # (1 to 3 on an idle machine)
    else:
        assert behind >= 12, done  # (all 18 on an idle machine) what fair claims prevent
