"""The outage clauses against the PostgreSQL stores, through a proxy the test cuts (refused, stalled, reset mid-answer).

Each store owns its pool, opened at the proxy's address with a 2 s connect timeout, a 3 s pool
timeout and a 3 s read timeout, so a cut or stalled server fails an operation within a few
seconds (a stalled statement's connection is shut at the read timeout and discarded), and the
pool connects again once the server is back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest

from agent_stores.postgresql import PostgreSQLAgentFileStore, PostgreSQLHistoryProvider, PostgreSQLSessionStore
from agent_stores.testing.outage import OutageCapabilities, OutageConformance, OutageProxy

QUICK = "connect_timeout=2&pool_timeout=3&read_timeout=3"


class TestPostgreSQLOutages(OutageConformance):
    capabilities = OutageCapabilities(history=True, files=True, sessions=True)
    unavailable_within = 15.0
    # The refusal clauses write 17 MiB with the server up: more than 3 s on a busy machine.
    refusal_options: ClassVar[dict[str, Any]] = {"read_timeout": 60}

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
