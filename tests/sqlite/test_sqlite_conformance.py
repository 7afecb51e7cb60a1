"""The three conformance suites against the SQLite stores, on a database file (and history in memory too).

Every store opened by a factory in one clause shares one database file, as separate
connections do in production: that is how restarts, two instances and two processes are checked.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
import pytest_asyncio

from agent_stores.sqlite import (
    SQLiteAgentFileStore,
    SQLiteBackend,
    SQLiteDatabase,
    SQLiteHistoryProvider,
    SQLiteSessionStore,
)
from agent_stores.testing import (
    FakeClock,
    FileStoreConformance,
    HistoryProviderConformance,
    SessionStoreConformance,
    corrupt_object_session,
    declared,
)

ALL_HISTORY = declared(SQLiteBackend, "history")


def open_history(path: str, **options: Any) -> SQLiteHistoryProvider:
    """The ``history_process_factory`` spec: a provider owning its own connection to ``path``."""
    return SQLiteHistoryProvider.from_path(path, **options)


class TestSQLiteHistoryOnFile(HistoryProviderConformance):
    """Each provider owns its own connection to one file, as separate processes would."""

    capabilities = ALL_HISTORY
    fake_clock = True

    @pytest.fixture
    def history_factory(self, tmp_path: Path, clock: FakeClock) -> Callable[..., SQLiteHistoryProvider]:
        path = str(tmp_path / "agent.db")
        return lambda **options: open_history(path, clock=clock, **options)

    @pytest.fixture
    def history_process_factory(self, tmp_path: Path) -> tuple[str, dict[str, Any]]:
        return f"{__name__}:open_history", {"path": str(tmp_path / "agent.db")}


class TestSQLiteHistoryOnSharedConnection(HistoryProviderConformance):
    """Providers borrowing one in-memory connection (``sqlite://``), as ``open_stores`` hands them out.

    Not ``multi_process``: an in-memory database lives in one connection of one process.
    """

    capabilities = declared(SQLiteBackend, "history", multi_process=False)  # an in-memory database: one process
    fake_clock = True

    # The factory is resolved inside the suite's async fixture, where only sync or already
    # set-up fixtures can be requested: open without I/O here, close in an autouse fixture.
    @pytest.fixture
    def database(self) -> SQLiteDatabase:
        return SQLiteDatabase.from_url("sqlite://")

    @pytest_asyncio.fixture(autouse=True)
    async def _close_database(self, database: SQLiteDatabase) -> AsyncIterator[None]:
        yield
        await database.aclose()

    @pytest.fixture
    def history_factory(self, database: SQLiteDatabase, clock: FakeClock) -> Callable[..., SQLiteHistoryProvider]:
        return lambda **options: SQLiteHistoryProvider(database, clock=clock, **options)


class TestSQLiteHistoryOnBorrowedConnection(HistoryProviderConformance):
    """Providers borrowing the user's own aiosqlite connection to a file (autocommit)."""

    capabilities = declared(SQLiteBackend, "history", multi_process=False)  # the class opens no second process
    fake_clock = True

    # autouse: set up before the suite's async fixture resolves the (sync) factory below.
    @pytest_asyncio.fixture(autouse=True)
    async def connection(self, tmp_path: Path) -> AsyncIterator[aiosqlite.Connection]:
        connection = await aiosqlite.connect(tmp_path / "agent.db", isolation_level=None)
        yield connection
        await connection.close()

    @pytest.fixture
    def history_factory(
        self, connection: aiosqlite.Connection, clock: FakeClock
    ) -> Callable[..., SQLiteHistoryProvider]:
        return lambda **options: SQLiteHistoryProvider(connection, clock=clock, **options)


class TestSQLiteAgentFileStore(FileStoreConformance):
    capabilities = declared(SQLiteBackend, "files")

    @pytest.fixture
    def file_store_factory(self, tmp_path: Path) -> Callable[..., SQLiteAgentFileStore]:
        path = tmp_path / "agent.db"
        return lambda **options: SQLiteAgentFileStore.from_path(path, **options)


class TestSQLiteSessionStore(SessionStoreConformance):
    capabilities = declared(SQLiteBackend, "sessions")

    @pytest.fixture
    def session_store_factory(self, tmp_path: Path) -> Callable[[], SQLiteSessionStore]:
        path = tmp_path / "agent.db"
        return lambda: SQLiteSessionStore.from_path(path)

    @pytest.fixture
    def corrupt_session(self) -> Any:
        return corrupt_object_session
