"""The core's conditional-object log (``ObjectLogDriver``) under the history suite, and its own promises.

It runs over the in-process object driver and over SQLite's object driver (a real store
shared by separate connections and processes), so the same log code that S3 and fsspec use is
proven here on every clause, including two processes appending to one session.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Message
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_stores.core import CorruptRecordError, LogHistoryProvider, LogRecord, ObjectLogDriver, StoreConflictError
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.core.objectlog import Gap, LogGapError
from agent_stores.sqlite import SQLiteDatabase, SQLiteObjectDriver
from agent_stores.testing import (
    OBJECT_LOG_DIVERGENCES,
    FakeClock,
    HistoryCapabilities,
    HistoryProviderConformance,
    LogDriverCapabilities,
    LogDriverConformance,
)

ALL_BUT_PROCESSES = HistoryCapabilities(
    windowed_load=True, skip_excluded=True, concurrent_instances=True, admin=True, ttl=True, corruptible=True
)


def open_sqlite_object_history(path: str, clock: Callable[[], float] = time.time, **options: Any) -> LogHistoryProvider:
    """A provider over an object log in the SQLite file ``path``, owning its connection."""
    objects = SQLiteObjectDriver(SQLiteDatabase.from_path(path))
    return LogHistoryProvider(ObjectLogDriver(objects, owns_objects=True, clock=clock), owns_driver=True, **options)


class TestObjectLogOnMemoryObjects(HistoryProviderConformance):
    """Segments in the in-process object driver; a small ``compact_after`` exercises checkpoints."""

    capabilities = ALL_BUT_PROCESSES
    fake_clock = True

    @pytest.fixture
    def history_factory(self, clock: FakeClock) -> Callable[..., LogHistoryProvider]:
        objects = MemoryObjectDriver()
        return lambda **options: LogHistoryProvider(ObjectLogDriver(objects, compact_after=3, clock=clock), **options)


class TestObjectLogWithTailsOnMemoryObjects(HistoryProviderConformance):
    """Every windowed read writes a tail object (``tail_after=0``), so each clause also reads through tails."""

    capabilities = ALL_BUT_PROCESSES
    fake_clock = True

    @pytest.fixture
    def history_factory(self, clock: FakeClock) -> Callable[..., LogHistoryProvider]:
        objects = MemoryObjectDriver()
        return lambda **options: LogHistoryProvider(
            ObjectLogDriver(objects, compact_after=3, tail_after=0, clock=clock), **options
        )


class TestObjectLogOnSQLiteObjects(HistoryProviderConformance):
    """Segments as rows of SQLite's object table, each provider on its own connection, and two processes."""

    capabilities = HistoryCapabilities(
        windowed_load=True,
        skip_excluded=True,
        concurrent_instances=True,
        multi_process=True,
        admin=True,
        ttl=True,
        corruptible=True,
    )
    fake_clock = True

    @pytest.fixture
    def history_factory(self, tmp_path: Path, clock: FakeClock) -> Callable[..., LogHistoryProvider]:
        path = str(tmp_path / "objects.db")
        return lambda **options: open_sqlite_object_history(path, clock=clock, **options)

    @pytest.fixture
    def history_process_factory(self, tmp_path: Path) -> tuple[str, dict[str, Any]]:
        return f"{__name__}:open_sqlite_object_history", {"path": str(tmp_path / "objects.db")}


pytestmark = pytest.mark.asyncio


def _records(*names: str) -> list[LogRecord]:
    return [LogRecord(f"d-{n}", n.encode()) for n in names]


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


async def test_segments_are_browsable_and_newest_first() -> None:
    objects = MemoryObjectDriver()
    log = ObjectLogDriver(objects, prefix="h/")
    version = await log.append("ns/src/s1", _records("a"), expected_version=None, session_id="s1")
    await log.append("ns/src/s1", _records("b", "c"), expected_version=version, session_id="s1")
    listing = await objects.list("h/ns/src/s1/", delimiter=None)
    assert len(listing.keys) == 2 and all(k.startswith("h/ns/src/s1/s") for k in listing.keys)
    newest = await objects.get(listing.keys[0])
    assert newest is not None and b"c" in newest.data
    assert await log.read("ns/src/s1") == [b"a", b"b", b"c"]
    assert await log.read("ns/src/s1", last=2) == [b"b", b"c"]


async def test_steady_append_is_one_conditional_put_and_nothing_else() -> None:
    calls: list[str] = []

    class Counting(MemoryObjectDriver):
        async def get(self, key: str) -> Any:
            calls.append("get")
            return await super().get(key)

        async def list(self, prefix: str, **kwargs: Any) -> Any:
            calls.append("list")
            return await super().list(prefix, **kwargs)

        async def put(self, key: str, data: bytes, **kwargs: Any) -> str:
            calls.append("put")
            return await super().put(key, data, **kwargs)

    log = ObjectLogDriver(Counting())
    version = await log.append("k", _records("a"), expected_version=None, session_id="s")
    calls.clear()
    await log.append("k", _records("b"), expected_version=version, session_id="s")
    assert calls == ["put"]


async def test_a_writer_holding_any_old_version_conflicts_after_delete_and_rewrite() -> None:
    log = ObjectLogDriver(MemoryObjectDriver())
    versions = [await log.append("k", _records("a"), expected_version=None, session_id="s")]
    for name in "bcd":
        versions.append(await log.append("k", _records(name), expected_version=versions[-1], session_id="s"))
    assert await log.delete("k") is True
    assert await log.read("k") == [] and await log.length("k") == 0
    rewritten = await log.append("k", _records("x"), expected_version=None, session_id="s")
    assert rewritten not in versions
    for stale in versions:
        with pytest.raises(StoreConflictError):
            await log.append("k", _records("zombie"), expected_version=stale, session_id="s")
    assert await log.read("k") == [b"x"]


async def test_delete_blanks_the_stored_records() -> None:
    objects = MemoryObjectDriver()
    log = ObjectLogDriver(objects, compact_after=1)
    version = await log.append("k", _records("secret-1"), expected_version=None, session_id="s")
    for i in range(4):
        version = await log.append("k", _records(f"secret-{i + 2}"), expected_version=version, session_id="s")
    assert len(await log.read("k")) == 5  # writes a checkpoint
    assert (await objects.list("history/k/c", delimiter=None)).keys
    await log.delete("k")
    for key in (await objects.list("", delimiter=None)).keys:
        stored = await objects.get(key)
        assert stored is not None and b"secret" not in stored.data, key


async def test_full_reads_use_a_checkpoint_and_stay_correct_as_the_log_grows() -> None:
    objects = MemoryObjectDriver()
    log = ObjectLogDriver(objects, compact_after=4, cache_bytes=0)  # every read fetched
    version = None
    expected: list[bytes] = []
    for i in range(30):
        version = await log.append("k", _records(str(i)), expected_version=version, session_id="s")
        expected.append(str(i).encode())
        assert await log.read("k") == expected
        assert await log.read("k", last=3) == expected[-3:]
    checkpoints = (await objects.list("history/k/c", delimiter=None)).keys
    assert len(checkpoints) == 1  # older checkpoints are removed


async def test_expired_log_restarts_and_purge_counts_it() -> None:
    clock = Clock()
    log = ObjectLogDriver(MemoryObjectDriver(), clock=clock)
    old = await log.append("a", _records("1"), expected_version=None, session_id="a", ttl=10)
    await log.append("b", _records("1"), expected_version=None, session_id="b", ttl=100)
    clock.now += 11
    assert await log.tail("a", 5) == (0, [], None)
    with pytest.raises(StoreConflictError):
        await log.append("a", _records("2"), expected_version=old, session_id="a", ttl=10)
    assert await log.purge_expired() == 1
    assert [i.key for i in await log.list_logs("")] == ["b"]
    await log.append("a", _records("3"), expected_version=None, session_id="a", ttl=10)
    assert await log.read("a") == [b"3"]


async def test_listing_pages_each_live_log_once_in_folder_order() -> None:
    log = ObjectLogDriver(MemoryObjectDriver())
    keys = ["p/ab", "p/ab-c", "p/ab.d", "p/b", "p/a", "q/x"]
    for key in keys:
        version = None
        for i in range(3):  # several segments per log, so pages hold partial logs
            version = await log.append(key, _records(str(i)), expected_version=version, session_id=key.upper())
    await log.delete("p/b")
    seen: list[str] = []
    after = None
    for _ in range(20):
        page = await log.list_logs("p/", after=after, limit=2)
        if not page:
            break
        seen.extend(info.key for info in page)
        assert all(info.session_id == info.key.upper() for info in page)
        after = page[-1].key
    assert seen == sorted(["p/ab", "p/ab-c", "p/ab.d", "p/a"], key=lambda k: k + "/")


async def test_concurrent_appends_on_one_version_have_one_winner() -> None:
    log = ObjectLogDriver(MemoryObjectDriver())
    version = await log.append("k", _records("a"), expected_version=None, session_id="s")
    results = await asyncio.gather(
        *(log.append("k", _records(f"w{i}"), expected_version=version, session_id="s") for i in range(5)),
        return_exceptions=True,
    )
    assert sum(1 for r in results if not isinstance(r, BaseException)) == 1
    assert all(isinstance(r, StoreConflictError) for r in results if isinstance(r, BaseException))
    assert len(await log.read("k")) == 2


class Counting(MemoryObjectDriver):
    """The in-process object driver, counting requests by kind and by object kind (``s``, ``t``, …)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def _kind(self, key: str) -> str:
        return key.rpartition("/")[2][:1]

    async def get(self, key: str) -> Any:
        self.calls.append("get " + self._kind(key))
        return await super().get(key)

    async def list(self, prefix: str, **kwargs: Any) -> Any:
        self.calls.append("list " + self._kind(prefix))
        return await super().list(prefix, **kwargs)

    async def put(self, key: str, data: bytes, **kwargs: Any) -> str:
        self.calls.append("put " + self._kind(key))
        return await super().put(key, data, **kwargs)


async def _fill(log: ObjectLogDriver, key: str, segments: int, per_segment: int = 2) -> list[bytes]:
    version = None
    written: list[bytes] = []
    for i in range(segments):
        names = [f"r{i}-{j}" for j in range(per_segment)]
        version = await log.append(key, _records(*names), expected_version=version, session_id="s")
        written += [n.encode() for n in names]
    return written


@pytest.mark.parametrize("segments", [60, 600])
async def test_a_window_costs_the_same_requests_whatever_the_segment_count(segments: int) -> None:
    """After one read wrote a tail, a window of 100 over one segment per turn is 2 listings and a few gets."""
    objects = Counting()
    log = ObjectLogDriver(objects, cache_bytes=0)  # every window fetched, as by a reader new to the log
    written = await _fill(log, "k", segments)
    assert await log.read("k", last=100) == written[-100:]  # reads 50 segments, writes a tail
    assert (await objects.list("history/k/t", delimiter=None)).keys, "no tail was written"
    for turn in range(12):  # an agent: save a turn, load its window
        written += [f"n{turn}".encode()]
        tail = await log.tail("k", 0)
        await log.append("k", _records(f"n{turn}"), expected_version=tail.version, session_id="s")
        objects.calls.clear()
        assert await log.read("k", last=100) == written[-100:]
        lists = [c for c in objects.calls if c.startswith("list")]
        gets = [c for c in objects.calls if c.startswith("get")]
        # Rewriting the tail (after more than tail_after segments) adds its own few requests.
        rewrote = "put t" in objects.calls
        # The tail this driver wrote is fetched by name: only the newest segment is listed.
        assert lists == ["list s"] or rewrote, objects.calls
        assert len(gets) <= 2 + 2 * 8 + (3 if rewrote else 0), objects.calls
    tail = await log.tail("k", 3)
    assert tail.length == len(written) and tail.digests == [f"d-n{t}" for t in (9, 10, 11)]
    fresh = ObjectLogDriver(objects)
    objects.calls.clear()
    assert await fresh.read("k", last=100) == written[-100:]
    lists = [c for c in objects.calls if c.startswith("list")]
    assert lists == ["list s", "list t"], "a driver new to the log lists tails"


async def test_a_guessed_tail_replaced_by_another_reader_is_found_by_listing() -> None:
    """A reader whose remembered tail was removed (another reader wrote a newer one) lists the tails again."""
    objects = Counting()
    reader, writer = ObjectLogDriver(objects), ObjectLogDriver(objects)
    written = await _fill(writer, "k", 30)
    assert await reader.read("k", last=40) == written[-40:]  # writes a tail and remembers it
    first = (await objects.list("history/k/t", delimiter=None)).keys
    tail = await writer.tail("k", 0)
    written += await _fill_more(writer, "k", 20, version=tail.version)
    assert await writer.read("k", last=40) == written[-40:]  # a newer tail; the older one removed
    second = (await objects.list("history/k/t", delimiter=None)).keys
    assert len(first) == len(second) == 1 and first != second
    objects.calls.clear()
    assert await reader.read("k", last=40) == written[-40:]
    assert objects.calls.count("list t") == 1 and "put t" not in objects.calls, objects.calls
    objects.calls.clear()
    assert await reader.read("k", last=40) == written[-40:]
    assert [c for c in objects.calls if c.startswith("list")] == ["list s"], objects.calls


async def test_a_log_written_without_tails_reads_the_same() -> None:
    """A log of the layout before tail objects (segments and checkpoints only) reads whole and windowed."""
    objects = MemoryObjectDriver()
    old = ObjectLogDriver(objects, compact_after=5, tail_after=None)
    written = await _fill(old, "k", 40)
    assert await old.read("k") == written  # writes a checkpoint, the old way
    written += await _fill_more(old, "k", 3)
    assert await old.read("k", last=30) == written[-30:]
    names = (await objects.list("history/k/", delimiter=None)).keys
    assert {n.rpartition("/")[2][0] for n in names} == {"s", "c"}, "the old layout has segments and checkpoints only"
    new = ObjectLogDriver(objects, compact_after=5)
    assert await new.read("k", last=30) == written[-30:]
    assert await new.read("k", last=7) == written[-7:]
    assert await new.read("k") == written
    tail = await new.tail("k", 2)
    assert tail.length == len(written) and tail.digests == [f"d-{p.decode()}" for p in written[-2:]]
    written += await _fill_more(new, "k", 2, version=tail.version)
    assert await new.read("k", last=30) == written[-30:]
    assert await old.read("k", last=30) == written[-30:], "a reader of the earlier release ignores tails"


async def _fill_more(log: ObjectLogDriver, key: str, segments: int, *, version: Any = None) -> list[bytes]:
    if version is None:
        version = (await log.tail(key, 0)).version
    written: list[bytes] = []
    for i in range(segments):
        name = f"m{i}-{len(written)}-{id(version) % 997}"
        version = await log.append(key, _records(name), expected_version=version, session_id="s")
        written.append(name.encode())
    return written


async def test_a_torn_or_stale_tail_is_dropped_and_the_segments_read(caplog: pytest.LogCaptureFixture) -> None:
    objects = MemoryObjectDriver()
    log = ObjectLogDriver(objects, tail_after=0, cache_bytes=0)  # every window fetched, so the tail is read
    written = await _fill(log, "k", 20)
    assert await log.read("k", last=10) == written[-10:]
    (tail_name,) = (await objects.list("history/k/t", delimiter=None)).keys
    stored = await objects.get(tail_name)
    assert stored is not None
    await objects.put(tail_name, stored.data[:9])  # torn by a power loss
    with caplog.at_level(logging.WARNING, logger="agent_stores.objectlog"):
        assert await log.read("k", last=10) == written[-10:]
    assert any("tail" in r.getMessage() and "cannot be decoded" in r.getMessage() for r in caplog.records)
    assert await log.read("k", last=10) == written[-10:]  # a fresh tail written by the read above
    # The newest segment torn after a tail covering it was written: the repair drops that
    # append, so the tail no longer joins the segments and must not be used.
    (segment_name, *_) = (await objects.list("history/k/s", delimiter=None)).keys
    await objects.put(segment_name, b"")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agent_stores.objectlog"):
        assert await log.read("k", last=10) == written[-12:-2]  # repairs the segment
        assert await log.read("k", last=10) == written[-12:-2]  # meets the tail that no longer joins
    assert any("does not join" in r.getMessage() for r in caplog.records), [r.getMessage() for r in caplog.records]
    assert await log.read("k", last=10) == written[-12:-2]
    assert await log.read("k") == written[:-2]


async def test_a_tail_of_a_deleted_log_is_erased_and_never_read() -> None:
    objects = MemoryObjectDriver()
    log = ObjectLogDriver(objects, tail_after=0)
    await _fill(log, "k", 10)
    assert len(await log.read("k", last=5)) == 5
    assert (await objects.list("history/k/t", delimiter=None)).keys
    assert await log.delete("k") is True
    assert (await objects.list("history/k/t", delimiter=None)).keys == []
    written = await _fill(log, "k", 3)
    assert await log.read("k", last=5) == written[-5:]
    assert await log.read("k") == written


async def test_bad_arguments_are_rejected() -> None:
    log = ObjectLogDriver(MemoryObjectDriver())
    with pytest.raises(ValueError, match="prefix"):
        ObjectLogDriver(MemoryObjectDriver(), prefix="no-slash")
    with pytest.raises(ValueError, match="tail_after"):
        ObjectLogDriver(MemoryObjectDriver(), tail_after=-1)
    with pytest.raises(ValueError, match="tail_records"):
        ObjectLogDriver(MemoryObjectDriver(), tail_records=0)
    with pytest.raises(ValueError, match="at least one record"):
        await log.append("k", [], expected_version=None, session_id="s")
    with pytest.raises(ValueError, match="not a version"):
        await log.append("k", _records("a"), expected_version="garbage", session_id="s")


class TestObjectLogDriverOnMemoryObjects(LogDriverConformance):
    """The object log over the in-process object driver, which every instance shares."""

    capabilities = LogDriverCapabilities(ttl=True, concurrent_instances=True, conditional_delete=True)
    divergences = OBJECT_LOG_DIVERGENCES
    fake_clock = True

    @pytest.fixture
    def log_driver_factory(self, clock: FakeClock) -> Callable[[], ObjectLogDriver]:
        objects = MemoryObjectDriver()
        return lambda: ObjectLogDriver(objects, compact_after=3, clock=clock)


class TestObjectLogDriverWithTailsOnMemoryObjects(LogDriverConformance):
    """The object log writing a tail on every windowed read, so every clause also reads through tails."""

    capabilities = LogDriverCapabilities(ttl=True, concurrent_instances=True, conditional_delete=True)
    divergences = OBJECT_LOG_DIVERGENCES
    fake_clock = True

    @pytest.fixture
    def log_driver_factory(self, clock: FakeClock) -> Callable[[], ObjectLogDriver]:
        objects = MemoryObjectDriver()
        return lambda: ObjectLogDriver(objects, compact_after=3, tail_after=0, clock=clock)


class TestObjectLogDriverOnSQLiteObjects(LogDriverConformance):
    """The object log over SQLite's object table, each driver on its own connection."""

    capabilities = LogDriverCapabilities(ttl=True, concurrent_instances=True, conditional_delete=True)
    divergences = OBJECT_LOG_DIVERGENCES
    fake_clock = True

    @pytest.fixture
    def log_driver_factory(self, tmp_path: Path, clock: FakeClock) -> Callable[[], ObjectLogDriver]:
        path = tmp_path / "objects.db"
        return lambda: ObjectLogDriver(
            SQLiteObjectDriver(SQLiteDatabase.from_path(path)), owns_objects=True, clock=clock
        )


async def test_a_tail_after_a_save_or_a_lost_claim_is_one_parallel_round() -> None:
    """A tail read of a log this driver wrote or lost a claim on lists once and fetches only newer segments."""
    objects = Counting()
    mine, other = ObjectLogDriver(objects), ObjectLogDriver(objects)
    written = await _fill(mine, "k", 12)
    version = (await mine.tail("k", 0)).version
    objects.calls.clear()
    tail = await mine.tail("k", 16)
    assert tail.length == len(written) and tail.digests == [f"d-{p.decode()}" for p in written[-16:]]
    assert objects.calls == ["list s", "get s"], objects.calls  # the remembered segment, still there
    # Another writer takes the next slot: the losing append learns its segment.
    theirs = await other.append("k", _records("x", "y"), expected_version=version, session_id="s")
    with pytest.raises(StoreConflictError):
        await mine.append("k", _records("z"), expected_version=version, session_id="s")
    await other.append("k", _records("w"), expected_version=theirs, session_id="s")
    written += [b"x", b"y", b"w"]
    objects.calls.clear()
    tail = await mine.tail("k", 16)
    assert tail.length == len(written) and tail.digests == [f"d-{p.decode()}" for p in written[-16:]]
    # One round: the listing with the winner's segment and the one after it (written by then).
    assert sorted(objects.calls) == ["get s", "get s", "list s"], objects.calls
    assert await mine.append("k", _records("z"), expected_version=tail.version, session_id="s")
    assert await mine.read("k") == [*written, b"z"]


async def test_a_remembered_end_whose_objects_were_replaced_is_not_trusted() -> None:
    """When the log's objects are removed behind the driver and rewritten, the tail reads them afresh."""
    objects = MemoryObjectDriver()
    log = ObjectLogDriver(objects)
    await _fill(log, "k", 3)
    assert (await log.tail("k", 5)).length == 6
    for name in (await objects.list("history/k/", delimiter=None)).keys:
        await objects.delete(name)
    other = ObjectLogDriver(objects)
    rewritten = await _fill(other, "k", 3, per_segment=1)
    tail = await log.tail("k", 5)
    assert tail.length == 3 and tail.digests == [f"d-{p.decode()}" for p in rewritten]


async def test_a_window_read_again_is_one_listing_and_one_get() -> None:
    """A reader that read a window and saved since serves the next window from what it remembers.

    The listing and the ``get`` of the remembered newest segment prove nobody else wrote; the
    segments others wrote since are fetched (all of them, whatever the window) and joined.
    """
    objects = Counting()
    mine, other = ObjectLogDriver(objects), ObjectLogDriver(objects)
    written = await _fill(mine, "k", 60)
    assert await mine.read("k", last=40) == written[-40:]
    for turn in range(5):  # an agent: save a turn, load its window
        version = (await mine.tail("k", 0)).version
        await mine.append("k", _records(f"a{turn}", f"b{turn}"), expected_version=version, session_id="s")
        written += [f"a{turn}".encode(), f"b{turn}".encode()]
        objects.calls.clear()
        assert await mine.read("k", last=40) == written[-40:]
        assert sorted(objects.calls) == ["get s", "list s"], objects.calls
    written += await _fill_more(other, "k", 3)
    objects.calls.clear()
    assert await mine.read("k", last=40) == written[-40:]
    assert sorted(objects.calls) == ["get s"] * 4 + ["list s"], objects.calls
    assert await mine.read("k", last=10) == written[-10:], "a smaller window from the same records"
    objects.calls.clear()
    assert await mine.read("k", last=41) == written[-41:], "a larger window is fetched"
    assert objects.calls.count("list s") == 1 and len(objects.calls) > 2, "fetched without a try from memory"


async def test_a_remembered_window_is_not_trusted_after_a_delete_or_a_replacement() -> None:
    """Another driver's delete and rewrite, and objects replaced behind the driver, are read afresh."""
    objects = MemoryObjectDriver()
    mine, other = ObjectLogDriver(objects), ObjectLogDriver(objects)
    await _fill(mine, "k", 3)
    assert len(await mine.read("k", last=8)) == 6
    # Every object removed by hand and the log written again into the same slots (same life,
    # same lengths): only the remembered segment's token tells them apart.
    for name in (await objects.list("history/k/", delimiter=None)).keys:
        await objects.delete(name)
    version = None
    for name in ("x", "y", "z"):
        version = await other.append("k", _records(name + "1", name + "2"), expected_version=version, session_id="s")
    replaced = [b"x1", b"x2", b"y1", b"y2", b"z1", b"z2"]
    assert await mine.read("k", last=8) == replaced
    assert await other.delete("k") is True
    assert await mine.read("k", last=8) == []
    rewritten = await _fill(other, "k", 2, per_segment=1)
    assert await mine.read("k", last=8) == rewritten
    assert await mine.read("k") == rewritten


async def test_a_remembered_window_of_an_expired_log_reads_as_absent() -> None:
    clock = Clock()
    log = ObjectLogDriver(MemoryObjectDriver(), clock=clock)
    version = await log.append("k", _records("a", "b"), expected_version=None, session_id="s", ttl=60)
    assert await log.read("k", last=5) == [b"a", b"b"]
    await log.append("k", _records("c"), expected_version=version, session_id="s", ttl=60)
    assert await log.read("k", last=5) == [b"a", b"b", b"c"]
    clock.now += 61
    assert await log.read("k", last=5) == []
    assert await log.read("k") == []


async def test_remembered_windows_stay_within_cache_bytes() -> None:
    """Past ``cache_bytes`` the least recently read logs' records are dropped (and fetched again)."""
    objects = Counting()
    per_log = 8 * (1_000 + 128)  # 8 records of 1,000 bytes and the per-record overhead
    log = ObjectLogDriver(objects, cache_bytes=2 * per_log)
    payload = {key: [f"{key}{i}".encode().ljust(1_000, b".") for i in range(8)] for key in "abc"}
    for key, records in payload.items():
        await log.append(
            key, [LogRecord(f"d-{r[:2].decode()}", r) for r in records], expected_version=None, session_id="s"
        )
        assert await log.read(key, last=8) == records
    objects.calls.clear()
    assert await log.read("c", last=8) == payload["c"]
    assert await log.read("b", last=8) == payload["b"]
    assert sorted(objects.calls) == ["get s", "get s", "list s", "list s"], "b and c served from memory"
    objects.calls.clear()
    assert await log.read("a", last=8) == payload["a"]
    assert "list t" in objects.calls or len(objects.calls) > 2, "a was dropped: fetched"
    tiny = ObjectLogDriver(objects, cache_bytes=per_log - 1)
    assert await tiny.read("a", last=8) == payload["a"]
    objects.calls.clear()
    assert await tiny.read("a", last=8) == payload["a"]
    assert len(objects.calls) > 2, "a window larger than cache_bytes is never kept"
    with pytest.raises(ValueError, match="cache_bytes"):
        ObjectLogDriver(objects, cache_bytes=-1)


async def test_remembered_windows_no_read_used_for_cache_idle_are_forgotten() -> None:
    """A log's records no read used for ``cache_idle`` seconds are dropped by the next read (and fetched again)."""
    clock = Clock()
    objects = Counting()
    log = ObjectLogDriver(objects, cache_idle=60, clock=clock)
    assert log.cache_idle == 60
    records = {key: [f"{key}{i}".encode() for i in range(8)] for key in "ab"}
    for key, payloads in records.items():
        await log.append(
            key, [LogRecord(f"d-{p.decode()}", p) for p in payloads], expected_version=None, session_id="s"
        )
        assert await log.read(key, last=8) == payloads
    clock.now += 50
    objects.calls.clear()
    assert await log.read("a", last=8) == records["a"]
    assert sorted(objects.calls) == ["get s", "list s"], "a, used 50 s ago, served from memory"
    clock.now += 20  # b unused for 70 s, a for 20 s
    objects.calls.clear()
    assert await log.read("a", last=8) == records["a"]
    assert sorted(objects.calls) == ["get s", "list s"], "a, used 20 s ago, still served from memory"
    objects.calls.clear()
    assert await log.read("b", last=8) == records["b"]
    assert len(objects.calls) > 2, "b, unused for 70 s, was forgotten: fetched"
    keeps = ObjectLogDriver(objects, cache_idle=None, clock=clock)
    assert await keeps.read("a", last=8) == records["a"]
    clock.now += 10**6
    objects.calls.clear()
    assert await keeps.read("a", last=8) == records["a"]
    assert sorted(objects.calls) == ["get s", "list s"], "cache_idle=None keeps records until evicted"
    for bad in (0, -1, float("inf"), "soon", True):
        with pytest.raises(ValueError, match="cache_idle"):
            ObjectLogDriver(objects, cache_idle=bad)  # type: ignore[arg-type]


_OPS = st.lists(
    st.one_of(
        st.tuples(st.just("append"), st.integers(0, 1), st.integers(1, 3)),
        st.tuples(st.just("read"), st.integers(0, 1), st.one_of(st.none(), st.integers(1, 12))),
        st.tuples(st.just("delete"), st.integers(0, 1), st.just(0)),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(_OPS)
async def test_two_remembering_drivers_always_read_what_was_written(ops: list[tuple[str, int, int | None]]) -> None:
    """Two drivers that remember windows, appending (with their own, maybe stale, versions), reading and
    deleting in any order, read exactly the log's records: what one remembers never hides the other's writes."""
    objects = MemoryObjectDriver()
    drivers = [ObjectLogDriver(objects, tail_after=1), ObjectLogDriver(objects, tail_after=1)]
    versions: list[Any] = [None, None]
    model: list[bytes] = []
    for step, (op, who, arg) in enumerate(ops):
        log = drivers[who]
        if op == "append":
            assert isinstance(arg, int)
            names = [f"{step}-{i}" for i in range(arg)]
            try:
                versions[who] = await log.append("k", _records(*names), expected_version=versions[who], session_id="s")
            except StoreConflictError:
                versions[who] = (await log.tail("k", 0)).version
                continue
            model += [n.encode() for n in names]
        elif op == "read":
            expected = model if arg is None else model[-arg:]
            assert await log.read("k", last=arg) == expected, (step, op, who, arg)
        else:
            await log.delete("k")
            model = []
            versions[who] = None
    for log in drivers:
        assert await log.read("k", last=5) == model[-5:]
        assert await log.read("k") == model


# -- gaps: segments removed behind the log --------------------------------------------------------


async def _remove_oldest_segments(objects: MemoryObjectDriver, key: str, count: int, *, skip: int = 0) -> None:
    """Remove ``count`` segment objects of ``key`` above its ``skip`` oldest, as a lifecycle rule would."""
    names = (await objects.list(f"history/{key}/s", delimiter=None)).keys  # newest first
    for name in names[len(names) - skip - count : len(names) - skip]:
        await objects.delete(name)


async def test_a_gap_is_a_corrupt_record_error_naming_the_missing_segments_and_records() -> None:
    """Reads that need records of removed segments fail with the gap named; windows after it still read."""
    objects = MemoryObjectDriver()
    writer = ObjectLogDriver(objects)
    written = await _fill(writer, "k", 10, per_segment=1)
    assert await writer.read("k", last=4) == written[-4:]
    await _remove_oldest_segments(objects, "k", 3)
    reader = ObjectLogDriver(objects)
    for log in (reader, writer):
        for last, tail in ((None, False), (8, False), (8, True)):
            with pytest.raises(LogGapError) as caught:
                await (log.tail("k", 8) if tail else log.read("k", last=last))
            error = caught.value
            assert isinstance(error, CorruptRecordError) and isinstance(error, ValueError)
            assert not isinstance(error, StoreConflictError), "a gap is not transient: nothing to retry"
            assert error.key == "k" and error.length == 10 and error.gaps == [Gap(1, 3, 0, 3)]
            assert "'k'" in str(error) and "segments 1 to 3 (records 0 to 2)" in str(error), str(error)
        assert await log.read("k", last=7) == written[-7:], "a window wholly after the gap reads"
        tail = await log.tail("k", 7)
        assert tail.length == 10 and tail.digests == [f"d-{p.decode()}" for p in written[-7:]]
    assert await reader.length("k") == 10


async def test_a_gap_in_the_middle_names_the_records_it_held() -> None:
    objects = MemoryObjectDriver()
    log = ObjectLogDriver(objects, tail_after=None, cache_bytes=0)
    written = await _fill(log, "k", 10)  # two records a segment
    await _remove_oldest_segments(objects, "k", 2, skip=4)  # segments 5 and 6: records 8 to 11
    with pytest.raises(LogGapError) as caught:
        await log.read("k", last=13)
    assert caught.value.gaps == [Gap(5, 6, 8, 12)]
    assert "segments 5 to 6 (records 8 to 11)" in str(caught.value)
    assert await log.read("k", last=8) == written[-8:]


async def test_a_history_provider_reports_a_gap_on_load_and_on_save() -> None:
    """Loading the whole session or saving next to the gap fails with a CorruptRecordError, not a conflict."""
    objects = MemoryObjectDriver()
    provider = LogHistoryProvider(ObjectLogDriver(objects))
    for i in range(10):
        await provider.save_messages("s1", [Message(role="user", contents=[f"m{i}"], message_id=f"id{i}")])
    key = provider.keys.history(provider.source_id, "s1")
    await _remove_oldest_segments(objects, key, 3)
    fresh = LogHistoryProvider(ObjectLogDriver(objects))
    with pytest.raises(CorruptRecordError, match="segments 1 to 3"):
        await fresh.get_messages("s1")
    with pytest.raises(CorruptRecordError, match="segments 1 to 3"):
        await fresh.save_messages("s1", [Message(role="user", contents=["next"], message_id="next")])
    windowed = LogHistoryProvider(ObjectLogDriver(objects), max_messages=5)
    assert [m.message_id for m in await windowed.get_messages("s1")] == [f"id{i}" for i in range(5, 10)]


async def test_a_session_long_after_its_gap_still_loads_and_saves() -> None:
    objects = MemoryObjectDriver()
    provider = LogHistoryProvider(ObjectLogDriver(objects), max_messages=10)
    for i in range(40):
        await provider.save_messages("s1", [Message(role="user", contents=[f"m{i}"], message_id=f"id{i}")])
    await _remove_oldest_segments(objects, provider.keys.history(provider.source_id, "s1"), 3)
    fresh = LogHistoryProvider(ObjectLogDriver(objects), max_messages=10)
    await fresh.save_messages("s1", [Message(role="user", contents=["next"], message_id="next")])
    assert [m.message_id for m in await fresh.get_messages("s1")] == [*(f"id{i}" for i in range(31, 40)), "next"]


async def test_a_checkpoint_holding_the_removed_records_keeps_the_log_whole() -> None:
    objects = MemoryObjectDriver()
    log = ObjectLogDriver(objects, compact_after=3)
    written = await _fill(log, "k", 10, per_segment=1)
    assert await log.read("k") == written  # writes a checkpoint of segments 1 to 10
    written += await _fill_more(log, "k", 2)
    await _remove_oldest_segments(objects, "k", 3)
    assert await ObjectLogDriver(objects).read("k") == written
    salvage = await log.salvage("k")
    assert salvage is not None and salvage.gaps == [Gap(1, 3, 0, 3)] and salvage.lost == []


async def test_a_delete_racing_a_read_is_not_a_gap() -> None:
    """A reader meeting segments a concurrent delete blanked reads again and finds the log deleted."""

    class DeletingOnce(MemoryObjectDriver):
        def __init__(self) -> None:
            super().__init__()
            self.trigger: str | None = None
            self.deleter: ObjectLogDriver | None = None

        async def get(self, key: str) -> Any:
            if key == self.trigger and self.deleter is not None:
                self.trigger = None
                assert await self.deleter.delete("k") is True  # blanks this very segment first
            return await super().get(key)

    objects = DeletingOnce()
    reader = ObjectLogDriver(objects, tail_after=None, cache_bytes=0)
    await _fill(reader, "k", 6, per_segment=1)
    objects.trigger = (await objects.list("history/k/s", delimiter=None)).keys[1]  # the segment below the newest
    objects.deleter = ObjectLogDriver(objects)
    assert await reader.read("k") == []
    assert objects.trigger is None, "the race was not forced"


async def test_a_rewrite_keeps_what_was_salvaged_and_the_log_goes_on() -> None:
    objects = MemoryObjectDriver()
    log, other = ObjectLogDriver(objects), ObjectLogDriver(objects)
    written = await _fill(log, "k", 10, per_segment=1)
    assert await other.read("k", last=3) == written[-3:]  # remembers the old end
    stale = (await other.tail("k", 0)).version
    await _remove_oldest_segments(objects, "k", 2, skip=3)  # segments 4 and 5: records 3 and 4
    salvage = await log.salvage("k")
    assert salvage is not None and salvage.length == 10 and salvage.session_id == "s"
    assert salvage.gaps == [Gap(4, 5, 3, 5)] and salvage.lost == [(3, 5)] and salvage.after_gap == 5
    assert [r.payload for r in salvage.records if r is not None] == written[:3] + written[5:]
    kept = [r for r in salvage.records[salvage.after_gap :] if r is not None]
    version = await log.rewrite("k", kept, expected_version=salvage.version, session_id=salvage.session_id)
    assert await log.read("k") == written[5:]
    assert await other.read("k", last=3) == written[-3:] and await other.read("k") == written[5:]
    with pytest.raises(StoreConflictError):
        await other.append("k", _records("zombie"), expected_version=stale, session_id="s")
    with pytest.raises(StoreConflictError):  # the salvage's version is gone too
        await log.rewrite("k", kept, expected_version=salvage.version, session_id="s")
    await log.append("k", _records("next"), expected_version=version, session_id="s")
    assert await other.read("k") == [*written[5:], b"next"]
    repaired = await ObjectLogDriver(objects).salvage("k")
    assert repaired is not None and repaired.gaps == [] and repaired.lost == []
    for name in (await objects.list("history/k/", delimiter=None)).keys:
        stored = await objects.get(name)
        assert stored is not None and all(p not in stored.data for p in written[:3]), name
    assert await log.salvage("absent") is None
    version = (await log.tail("k", 0)).version
    assert await log.rewrite("k", [], expected_version=version, session_id="s") is None, "keeping nothing deletes"
    assert await other.read("k") == [] and await log.length("k") == 0
    with pytest.raises(StoreConflictError):
        await log.rewrite("k", kept, expected_version=version, session_id="s")


async def test_with_cache_bytes_zero_a_driver_keeps_no_records_but_still_knows_the_ends() -> None:
    """``cache_bytes=0`` turns the remembered windows off, not the remembered ends a save's tail read uses."""
    objects = Counting()
    log = ObjectLogDriver(objects, cache_bytes=0)
    assert log.cache_bytes == 0
    written = await _fill(log, "k", 12)
    assert await log.read("k", last=6) == written[-6:]
    objects.calls.clear()
    tail = await log.tail("k", 6)
    assert tail.digests == [f"d-{p.decode()}" for p in written[-6:]]
    assert objects.calls == ["list s", "get s"], objects.calls
    objects.calls.clear()
    assert await log.read("k", last=6) == written[-6:]
    assert len(objects.calls) > 2, "no window served from memory"
