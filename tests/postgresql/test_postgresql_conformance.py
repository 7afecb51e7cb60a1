"""The store conformance suites against the PostgreSQL stores, each test on a database of its own.

Every store a factory opens in one clause owns its own pool to the same database, as separate
processes would; history also runs on a borrowed autocommit connection and a borrowed pool.
The server's default collation is ICU ``en-US`` (see the fixture), so ordering clauses prove
the stores compare keys under ``COLLATE "C"``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import psycopg
import pytest
import pytest_asyncio
from psycopg_pool import AsyncConnectionPool

from agent_stores.postgresql import (
    PostgreSQLAgentFileStore,
    PostgreSQLBackend,
    PostgreSQLHistoryProvider,
    PostgreSQLSessionStore,
)
from agent_stores.testing import (
    FakeClock,
    FileStoreConformance,
    HistoryProviderConformance,
    SessionStoreConformance,
    corrupt_object_session,
    declared,
)


def open_history(url: str, **options: Any) -> PostgreSQLHistoryProvider:
    """The ``history_process_factory`` spec: a provider owning its own pool."""
    return PostgreSQLHistoryProvider.from_url(url, **options)


class TestPostgreSQLHistory(HistoryProviderConformance):
    capabilities = declared(PostgreSQLBackend, "history")
    fake_clock = True

    @pytest.fixture
    def history_factory(self, postgresql_url: str, clock: FakeClock) -> Callable[..., PostgreSQLHistoryProvider]:
        return lambda **options: open_history(postgresql_url, clock=clock, **options)

    @pytest.fixture
    def history_process_factory(self, postgresql_url: str) -> tuple[str, dict[str, Any]]:
        return f"{__name__}:open_history", {"url": postgresql_url}


class TestPostgreSQLHistoryOnBorrowedConnection(HistoryProviderConformance):
    """Providers borrowing the user's one autocommit connection, never closing it."""

    capabilities = declared(PostgreSQLBackend, "history", multi_process=False)  # the class opens no second process
    fake_clock = True

    @pytest_asyncio.fixture(autouse=True)
    async def connection(self, postgresql_url: str) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        connection = await psycopg.AsyncConnection.connect(postgresql_url, autocommit=True, prepare_threshold=None)
        yield connection
        await connection.close()

    @pytest.fixture
    def history_factory(
        self, connection: psycopg.AsyncConnection[Any], clock: FakeClock
    ) -> Callable[..., PostgreSQLHistoryProvider]:
        return lambda **options: PostgreSQLHistoryProvider(connection, clock=clock, **options)


class TestPostgreSQLHistoryOnBorrowedPool(HistoryProviderConformance):
    """Providers borrowing the user's pool, never closing it."""

    capabilities = declared(PostgreSQLBackend, "history", multi_process=False)  # the class opens no second process
    fake_clock = True

    @pytest_asyncio.fixture(autouse=True)
    async def pool(self, postgresql_url: str) -> AsyncIterator[AsyncConnectionPool[Any]]:
        async with AsyncConnectionPool(
            postgresql_url, min_size=1, max_size=4, kwargs={"autocommit": True}, open=False
        ) as pool:
            yield pool

    @pytest.fixture
    def history_factory(
        self, pool: AsyncConnectionPool[Any], clock: FakeClock
    ) -> Callable[..., PostgreSQLHistoryProvider]:
        return lambda **options: PostgreSQLHistoryProvider(pool, clock=clock, **options)


class TestPostgreSQLFiles(FileStoreConformance):
    capabilities = declared(PostgreSQLBackend, "files")

    @pytest.fixture
    def file_store_factory(self, postgresql_url: str) -> Callable[..., PostgreSQLAgentFileStore]:
        return lambda **options: PostgreSQLAgentFileStore.from_url(postgresql_url, **options)


class TestPostgreSQLSessions(SessionStoreConformance):
    capabilities = declared(PostgreSQLBackend, "sessions")

    @pytest.fixture
    def session_store_factory(self, postgresql_url: str) -> Callable[[], PostgreSQLSessionStore]:
        return lambda: PostgreSQLSessionStore.from_url(postgresql_url)

    @pytest.fixture
    def corrupt_session(self) -> Any:
        return corrupt_object_session
