"""The outage clauses against the PostgreSQL stores, through a proxy the test cuts (refused, reset mid-answer).

Each store owns its pool, opened at the proxy's address with a 2 s connect timeout and a 3 s
pool timeout, so a cut server fails an operation within a few seconds, and the pool connects
again once the server is back. A stalled server (connections open, nothing answered) is not
among the declared outages: libpq has no timeout for an answer, so a statement waits until
the operating system gives the connection up (see docs/backends/postgresql.md).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest

from agent_stores.postgresql import PostgreSQLAgentFileStore, PostgreSQLHistoryProvider, PostgreSQLSessionStore
from agent_stores.testing.outage import OutageCapabilities, OutageConformance, OutageProxy

QUICK = "connect_timeout=2&pool_timeout=3"


class TestPostgreSQLOutages(OutageConformance):
    capabilities = OutageCapabilities(history=True, files=True, sessions=True, stall=False)
    unavailable_within = 15.0
    refusal_options: ClassVar[dict[str, Any]] = {}

    @pytest.fixture
    def outage(self, postgresql_url: str) -> Iterator[OutageProxy]:
        with OutageProxy.for_url(postgresql_url, default_port=5432) as proxy:
            yield proxy

    @pytest.fixture
    def url(self, outage: OutageProxy, postgresql_url: str) -> str:
        return outage.url(postgresql_url) + "?" + QUICK

    @pytest.fixture
    def history_factory(self, url: str) -> Callable[..., PostgreSQLHistoryProvider]:
        return lambda **options: PostgreSQLHistoryProvider.from_url(url, **options)

    @pytest.fixture
    def file_store_factory(self, url: str) -> Callable[..., Any]:
        return lambda **options: PostgreSQLAgentFileStore.from_url(url, **options)

    @pytest.fixture
    def session_store_factory(self, url: str) -> Callable[[], PostgreSQLSessionStore]:
        return lambda: PostgreSQLSessionStore.from_url(url)
