"""``export_logs``: many sessions' logs read back from one listing of the object store, as ``export_log`` reads each."""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import Message

from agent_stores.core import LogHistoryProvider
from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver
from agent_stores.core.objectlog import ObjectLogDriver
from agent_stores.testing.history import SimulatedCrash, SuiteCompaction, crash_log_history
from objectlog_support import Counting

pytestmark = pytest.mark.asyncio


def _messages(*texts: str) -> list[Message]:
    return [Message(role="user", contents=[t], message_id=t) for t in texts]


def _as_records(entries: list[Any]) -> list[Any]:
    return [e.to_dict() if isinstance(e, Message) else e.payload for e in entries]


async def test_every_kind_of_log_reads_back_as_export_log_reads_it() -> None:
    objects = MemoryObjectDriver()
    clock = [1000.0]
    provider = LogHistoryProvider(ObjectLogDriver(objects, clock=lambda: clock[0]))
    await provider.import_log("one", _messages("a", "b"), absent=True)  # one segment
    await provider.save_messages("many", _messages("a"))
    await provider.save_messages("many", _messages("b"))  # two segments
    await provider.save_messages("compacted", _messages(*(f"m{i}" for i in range(5))))
    assert await provider.compact("compacted", SuiteCompaction(keep=2))
    await provider.save_messages("deleted", _messages("gone"))
    await provider.delete_session("deleted")
    await provider.save_messages("staged", _messages("s0", "s1", "s2", "s3"))
    assert await provider.compact("staged", SuiteCompaction(keep=1))
    crash_log_history(provider, 3)  # a retention stopped before its swap: the log absent, a staged one beside it
    with pytest.raises(SimulatedCrash):
        await provider.retain("staged")
    expiring = LogHistoryProvider(ObjectLogDriver(objects, clock=lambda: clock[0]), ttl=60)
    await expiring.import_log("expired", _messages("old"), absent=True)
    clock[0] += 120
    sessions = ["one", "many", "compacted", "deleted", "staged", "expired", "never"]
    reader = LogHistoryProvider(ObjectLogDriver(objects, clock=lambda: clock[0]))  # remembers nothing
    expected = [_as_records(await reader.export_log(s)) for s in sessions]
    assert [_as_records(e) for e in await reader.export_logs(sessions)] == expected
    assert [len(e) for e in expected[:2]] == [2, 2] and expected[3] == expected[5] == expected[6] == []
    assert expected[4], "the staged transcript is read where the log is absent"


async def test_single_segment_logs_cost_one_listing_and_a_get_each() -> None:
    objects = Counting()
    provider = LogHistoryProvider(ObjectLogDriver(objects))
    sessions = [f"s{i}" for i in range(12)]
    for session_id in sessions:
        await provider.import_log(session_id, _messages(f"{session_id}-a", f"{session_id}-b"), absent=True)
    objects.calls.clear()
    held = await LogHistoryProvider(ObjectLogDriver(objects)).export_logs(sessions)
    assert [[getattr(m, "text", None) for m in entries] for entries in held] == [[f"{s}-a", f"{s}-b"] for s in sessions]
    assert sorted(objects.calls) == ["get"] * len(sessions) + ["list"]


class _Listed(Counting):
    """Also counts the keys each listing returns."""

    def __init__(self) -> None:
        super().__init__()
        self.listed = 0

    async def list(self, prefix: str, **kwargs: Any) -> Any:
        listing = await super().list(prefix, **kwargs)
        self.listed += len(listing.keys)
        return listing


async def test_a_chunk_of_sessions_lists_its_own_range_not_the_whole_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_stores.core.objectlog import _driver

    monkeypatch.setattr(_driver, "_MANY_PAGE", 5, raising=False)
    objects = _Listed()
    provider = LogHistoryProvider(ObjectLogDriver(objects))
    sessions = [f"s{i:02d}" for i in range(40)]
    for session_id in sessions:
        await provider.import_log(session_id, _messages(f"{session_id}-a"), absent=True)
    reader = LogHistoryProvider(ObjectLogDriver(objects))
    listed = [s async for s in reader.iter_sessions()]
    chunk = listed[10:14]  # a run of sessions as a listing returns them
    objects.calls.clear()
    objects.listed = 0
    held = await reader.export_logs(chunk)
    assert [[m.text for m in entries if isinstance(m, Message)] for entries in held] == [[f"{s}-a"] for s in chunk]
    assert sorted(objects.calls) == ["get"] * len(chunk) + ["list"]
    assert objects.listed <= len(chunk) + 5, f"the listing returned {objects.listed} objects for {len(chunk)} logs"


async def test_a_range_longer_than_a_listing_page_is_listed_page_by_page(monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_stores.core.objectlog import _driver

    monkeypatch.setattr(_driver, "_MANY_PAGE", 3)
    objects = Counting()
    provider = LogHistoryProvider(ObjectLogDriver(objects))
    sessions = [f"s{i:02d}" for i in range(12)]
    for session_id in sessions:
        await provider.import_log(session_id, _messages(f"{session_id}-a"), absent=True)
    objects.calls.clear()
    held = await LogHistoryProvider(ObjectLogDriver(objects)).export_logs(sessions[2:9])
    assert [[m.text for m in entries if isinstance(m, Message)] for entries in held] == [
        [f"{s}-a"] for s in sessions[2:9]
    ]
    assert objects.calls.count("get") == 7, "every log was found single in the paged listing"
    assert objects.calls.count("list") == 3, "the listing stopped past the last log"


async def test_a_new_session_is_one_write_and_a_written_one_is_never_overwritten() -> None:
    objects = Counting()
    provider = LogHistoryProvider(ObjectLogDriver(objects))
    await provider.save_messages("s", _messages("a"))
    await provider.delete_session("s")  # the first slot now holds a blank, not nothing
    objects.calls.clear()
    await LogHistoryProvider(ObjectLogDriver(objects)).import_log("s", _messages("b"), absent=True)
    assert objects.calls.count("put") >= 2, "the taken first slot sent the import the ordinary way"
    assert [m.text for m in await LogHistoryProvider(ObjectLogDriver(objects)).export_messages("s")] == ["b"]


async def test_a_log_driver_without_read_many_reads_each_session_alone() -> None:
    provider = LogHistoryProvider(MemoryLogDriver())
    assert not provider.reads_many and LogHistoryProvider(ObjectLogDriver(MemoryObjectDriver())).reads_many
    sessions = [f"s{i}" for i in range(40)]
    for session_id in sessions[::2]:
        await provider.save_messages(session_id, _messages(f"{session_id}-a"))
    held = await provider.export_logs(sessions)
    assert [[getattr(m, "text", None) for m in entries] for entries in held] == [
        [f"{s}-a"] if i % 2 == 0 else [] for i, s in enumerate(sessions)
    ]
