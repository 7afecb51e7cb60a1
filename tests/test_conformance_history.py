"""The chat-history conformance suite against the framework's reference providers and the core adapter."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from contextlib import closing
from pathlib import Path
from typing import Any, TypeVar, get_args

import pytest
from agent_framework import FileHistoryProvider, InMemoryHistoryProvider
from agent_framework._types import ContentType

from agent_stores.core import LogHistoryProvider, LogRecord, LogTail, StoreConflictError
from agent_stores.core.memory import MemoryLogDriver
from agent_stores.testing import HistoryCapabilities, HistoryProviderConformance
from agent_stores.testing.history import sample_contents

T = TypeVar("T")


class TestInMemoryHistoryProvider(HistoryProviderConformance):
    """History lives in ``AgentSession.state``: the suite's session objects are the store.

    Saves never await, so instances sharing one session's state cannot interleave: concurrent
    saves in one event loop are safe. Nothing is shared across processes.
    """

    capabilities = HistoryCapabilities(skip_excluded=True, concurrent_instances=True)

    @pytest.fixture
    def history_factory(self) -> Callable[..., InMemoryHistoryProvider]:
        return lambda **options: InMemoryHistoryProvider(**options)


class TestFileHistoryProvider(HistoryProviderConformance):
    """One JSONL file per session; a per-file thread lock and event-loop lock guard saves within one process."""

    capabilities = HistoryCapabilities(skip_excluded=True, concurrent_instances=True)
    divergences = {
        "test_source_ids_are_isolated": (
            "FileHistoryProvider names its files after the session id only: two providers with different "
            "source_id over one storage_path read and write the same file."
        ),
        "test_long_session_ids_keep_separate_histories": (
            "FileHistoryProvider uses a lowercase-safe session id verbatim as the file name, at any length: "
            "a 300-character id fails with ENAMETOOLONG (_storage_key_segment digests only ids it encodes)."
        ),
    }

    @pytest.fixture
    def history_factory(self, tmp_path: Path) -> Callable[..., FileHistoryProvider]:
        return lambda **options: FileHistoryProvider(tmp_path / "history", **options)


class TestLogHistoryProviderInMemory(HistoryProviderConformance):
    """The core adapter over the in-process driver; one driver per clause is the backing store."""

    capabilities = HistoryCapabilities(windowed_load=True, skip_excluded=True, concurrent_instances=True, admin=True)

    @pytest.fixture
    def history_factory(self) -> Callable[..., LogHistoryProvider]:
        driver = MemoryLogDriver()
        return lambda **options: LogHistoryProvider(driver, **options)


class SqliteFileLogDriver:
    """A test-only ``LogDriver`` over one SQLite file, shared by processes.

    It gives the multi-process clause a store to run against here (the in-process drivers
    cannot declare ``multi_process``) and exercises the core's conditional append under real
    thread hops. Every operation opens its own connection in a worker thread.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._call(
            lambda db: db.execute(
                "CREATE TABLE IF NOT EXISTS log (k TEXT, seq INT, d TEXT, p BLOB, PRIMARY KEY (k, seq))"
            )
        )

    def _call(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        with closing(sqlite3.connect(self.path, timeout=30, isolation_level=None)) as db:
            return operation(db)

    async def _run(self, operation: Callable[[sqlite3.Connection], T]) -> T:
        return await asyncio.to_thread(self._call, operation)

    async def tail(self, key: str, count: int) -> LogTail:
        def tail(db: sqlite3.Connection) -> LogTail:
            db.execute("BEGIN")
            (length,) = db.execute("SELECT count(*) FROM log WHERE k = ?", (key,)).fetchone()
            rows = db.execute("SELECT d FROM log WHERE k = ? ORDER BY seq DESC LIMIT ?", (key, count)).fetchall()
            db.execute("COMMIT")
            return LogTail(length, [d for (d,) in reversed(rows)])

        return await self._run(tail)

    async def append(self, key: str, records: Sequence[LogRecord], *, expected_length: int) -> None:
        def append(db: sqlite3.Connection) -> None:
            db.execute("BEGIN IMMEDIATE")
            (length,) = db.execute("SELECT count(*) FROM log WHERE k = ?", (key,)).fetchone()
            if length != expected_length:
                db.execute("ROLLBACK")
                raise StoreConflictError(f"log {key!r} has {length} records, expected {expected_length}")
            rows = [(key, length + i, r.digest, r.payload) for i, r in enumerate(records)]
            db.executemany("INSERT INTO log VALUES (?, ?, ?, ?)", rows)
            db.execute("COMMIT")

        await self._run(append)

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        limit = -1 if last is None else last
        query = "SELECT p FROM log WHERE k = ? ORDER BY seq DESC LIMIT ?"
        rows = await self._run(lambda db: db.execute(query, (key, limit)).fetchall())
        return [bytes(p) for (p,) in reversed(rows)]

    async def length(self, key: str) -> int:
        rows = await self._run(lambda db: db.execute("SELECT count(*) FROM log WHERE k = ?", (key,)).fetchall())
        return int(rows[0][0])

    async def delete(self, key: str) -> bool:
        return await self._run(lambda db: db.execute("DELETE FROM log WHERE k = ?", (key,)).rowcount > 0)

    async def list_keys(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[str]:
        query = "SELECT DISTINCT k FROM log WHERE substr(k, 1, ?) = ? AND k > ? ORDER BY k LIMIT ?"
        rows = await self._run(lambda db: db.execute(query, (len(prefix), prefix, after or "", limit)).fetchall())
        return [k for (k,) in rows]

    async def aclose(self) -> None:
        return None


def open_sqlite_history(path: str, **options: Any) -> LogHistoryProvider:
    """Open the core adapter over :class:`SqliteFileLogDriver`: the ``history_process_factory`` spec below."""
    return LogHistoryProvider(SqliteFileLogDriver(path), **options)


class TestLogHistoryProviderOverSqliteFile(HistoryProviderConformance):
    """The core adapter over a driver shared by processes: every capability, including ``multi_process``."""

    capabilities = HistoryCapabilities(
        windowed_load=True, skip_excluded=True, concurrent_instances=True, multi_process=True, admin=True
    )

    @pytest.fixture
    def history_factory(self, tmp_path: Path) -> Callable[..., LogHistoryProvider]:
        path = str(tmp_path / "history.sqlite")
        return lambda **options: open_sqlite_history(path, **options)

    @pytest.fixture
    def history_process_factory(self, tmp_path: Path) -> tuple[str, dict[str, Any]]:
        return f"{__name__}:open_sqlite_history", {"path": str(tmp_path / "history.sqlite")}


def test_samples_cover_every_content_type() -> None:
    """The round-trip clause must exercise every ``Content`` type the installed framework defines."""
    assert {c.type for c in sample_contents()} == set(get_args(ContentType))
