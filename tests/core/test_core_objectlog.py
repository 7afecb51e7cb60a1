"""The core's conditional-object log (``ObjectLogDriver``) under the history suite, and its own promises.

It runs over the in-process object driver and over SQLite's object driver (a real store
shared by separate connections and processes), so the same log code that S3 and fsspec use is
proven here on every clause, including two processes appending to one session.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_stores.core import LogHistoryProvider, LogRecord, ObjectLogDriver, StoreConflictError
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.sqlite import SQLiteDatabase, SQLiteObjectDriver
from agent_stores.testing import (
    OBJECT_LOG_DIVERGENCES,
    HistoryCapabilities,
    HistoryProviderConformance,
    LogDriverCapabilities,
    LogDriverConformance,
)

ALL_BUT_PROCESSES = HistoryCapabilities(
    windowed_load=True, skip_excluded=True, concurrent_instances=True, admin=True, ttl=True
)


def open_sqlite_object_history(path: str, **options: Any) -> LogHistoryProvider:
    """A provider over an object log in the SQLite file ``path``, owning its connection."""
    objects = SQLiteObjectDriver(SQLiteDatabase.from_path(path))
    return LogHistoryProvider(ObjectLogDriver(objects, owns_objects=True), owns_driver=True, **options)


class TestObjectLogOnMemoryObjects(HistoryProviderConformance):
    """Segments in the in-process object driver; a small ``compact_after`` exercises checkpoints."""

    capabilities = ALL_BUT_PROCESSES

    @pytest.fixture
    def history_factory(self) -> Callable[..., LogHistoryProvider]:
        objects = MemoryObjectDriver()
        return lambda **options: LogHistoryProvider(ObjectLogDriver(objects, compact_after=3), **options)


class TestObjectLogOnSQLiteObjects(HistoryProviderConformance):
    """Segments as rows of SQLite's object table, each provider on its own connection, and two processes."""

    capabilities = HistoryCapabilities(
        windowed_load=True, skip_excluded=True, concurrent_instances=True, multi_process=True, admin=True, ttl=True
    )

    @pytest.fixture
    def history_factory(self, tmp_path: Path) -> Callable[..., LogHistoryProvider]:
        path = str(tmp_path / "objects.db")
        return lambda **options: open_sqlite_object_history(path, **options)

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
    log = ObjectLogDriver(objects, compact_after=4)
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


async def test_bad_arguments_are_rejected() -> None:
    log = ObjectLogDriver(MemoryObjectDriver())
    with pytest.raises(ValueError, match="prefix"):
        ObjectLogDriver(MemoryObjectDriver(), prefix="no-slash")
    with pytest.raises(ValueError, match="at least one record"):
        await log.append("k", [], expected_version=None, session_id="s")
    with pytest.raises(ValueError, match="not a version"):
        await log.append("k", _records("a"), expected_version="garbage", session_id="s")


class TestObjectLogDriverOnMemoryObjects(LogDriverConformance):
    """The object log over the in-process object driver, which every instance shares."""

    capabilities = LogDriverCapabilities(ttl=True, concurrent_instances=True)
    divergences = OBJECT_LOG_DIVERGENCES

    @pytest.fixture
    def log_driver_factory(self) -> Callable[[], ObjectLogDriver]:
        objects = MemoryObjectDriver()
        return lambda: ObjectLogDriver(objects, compact_after=3)


class TestObjectLogDriverOnSQLiteObjects(LogDriverConformance):
    """The object log over SQLite's object table, each driver on its own connection."""

    capabilities = LogDriverCapabilities(ttl=True, concurrent_instances=True)
    divergences = OBJECT_LOG_DIVERGENCES

    @pytest.fixture
    def log_driver_factory(self, tmp_path: Path) -> Callable[[], ObjectLogDriver]:
        path = tmp_path / "objects.db"
        return lambda: ObjectLogDriver(SQLiteObjectDriver(SQLiteDatabase.from_path(path)), owns_objects=True)
