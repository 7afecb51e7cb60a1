"""The conformance suites through PgBouncer in transaction mode: no session state, no prepared statement kept.

Every statement may reach another server connection than the one before it; a store that
relied on a prepared statement, a temporary table or a session setting would fail here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import pytest

from agent_stores.postgresql import (
    PostgreSQLAgentFileStore,
    PostgreSQLBackend,
    PostgreSQLDatabase,
    PostgreSQLHistoryProvider,
    PostgreSQLLogDriver,
    PostgreSQLObjectDriver,
    PostgreSQLSessionStore,
    migrate_schema,
)
from agent_stores.postgresql._schema import MIGRATIONS
from agent_stores.testing import (
    FakeClock,
    FileStoreConformance,
    HistoryProviderConformance,
    LogDriverConformance,
    ObjectDriverConformance,
    SessionStoreConformance,
    corrupt_object_session,
    declared,
)
from agent_stores.testing.servers import Server
from postgresql_support import database_url


def open_history(url: str, **options: Any) -> PostgreSQLHistoryProvider:
    """The ``history_process_factory`` spec: a provider owning its own pool, through the pooler."""
    return PostgreSQLHistoryProvider.from_url(url, **options)


class TestPooledHistory(HistoryProviderConformance):
    capabilities = declared(PostgreSQLBackend, "history")
    fake_clock = True

    @pytest.fixture
    def history_factory(self, pooled_url: str, clock: FakeClock) -> Callable[..., PostgreSQLHistoryProvider]:
        return lambda **options: open_history(pooled_url, clock=clock, **options)

    @pytest.fixture
    def history_process_factory(self, pooled_url: str) -> tuple[str, dict[str, Any]]:
        return f"{__name__}:open_history", {"url": pooled_url}


class TestPooledFiles(FileStoreConformance):
    capabilities = declared(PostgreSQLBackend, "files")

    @pytest.fixture
    def file_store_factory(self, pooled_url: str) -> Callable[..., PostgreSQLAgentFileStore]:
        return lambda **options: PostgreSQLAgentFileStore.from_url(pooled_url, **options)


class TestPooledSessions(SessionStoreConformance):
    capabilities = declared(PostgreSQLBackend, "sessions")

    @pytest.fixture
    def session_store_factory(self, pooled_url: str) -> Callable[[], PostgreSQLSessionStore]:
        return lambda: PostgreSQLSessionStore.from_url(pooled_url)

    @pytest.fixture
    def corrupt_session(self) -> Any:
        return corrupt_object_session


class TestPooledLogDriver(LogDriverConformance):
    capabilities = declared(PostgreSQLBackend, "log_driver")
    fake_clock = True

    @pytest.fixture
    def log_driver_factory(self, pooled_url: str, clock: FakeClock) -> Callable[[], PostgreSQLLogDriver]:
        return lambda: PostgreSQLLogDriver(PostgreSQLDatabase.from_url(pooled_url), clock=clock)


class TestPooledObjectDriver(ObjectDriverConformance):
    capabilities = declared(PostgreSQLBackend, "object_driver")

    @pytest.fixture
    def object_driver_factory(self, pooled_url: str) -> Callable[[], PostgreSQLObjectDriver]:
        return lambda: PostgreSQLObjectDriver(PostgreSQLDatabase.from_url(pooled_url))


@pytest.mark.asyncio
async def test_the_schema_is_applied_through_the_pooler(pooler: Server, fresh_postgresql_url: str) -> None:
    pooled_url = database_url(pooler.url, urlsplit(fresh_postgresql_url).path.lstrip("/"))
    assert await migrate_schema(pooled_url) == [version for version, _, _ in MIGRATIONS]
    assert await migrate_schema(pooled_url) == []
