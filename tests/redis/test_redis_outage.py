"""The outage clauses against the Redis stores, on a single Redis and on Valkey, through a proxy the test cuts.

Each store owns its client, opened at the proxy's address with 0.5 s socket timeouts (and the
default three retries), so a cut server fails an operation in a few seconds. Valkey speaks
the same protocol through the same client: its run (about 6 s) is behind ``AGENT_STORES_HEAVY=1``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest

from agent_stores.redis import RedisAgentFileStore, RedisHistoryProvider, RedisSessionStore
from agent_stores.testing.outage import OutageCapabilities, OutageConformance, OutageProxy
from agent_stores.testing.servers import Server

TIMEOUTS = {"socket_timeout": 0.5, "socket_connect_timeout": 0.5}


class _Outages(OutageConformance):
    capabilities = OutageCapabilities(history=True, files=True, sessions=True)
    unavailable_within = 10.0
    refusal_options: ClassVar[dict[str, Any]] = {"socket_timeout": 30.0}
    server_fixture = ""

    @pytest.fixture
    def outage(self, request: pytest.FixtureRequest) -> Iterator[OutageProxy]:
        server: Server = request.getfixturevalue(self.server_fixture)
        with OutageProxy.for_url(server.url, default_port=6379) as proxy:
            yield proxy

    @pytest.fixture
    def url(self, request: pytest.FixtureRequest, outage: OutageProxy) -> str:
        server: Server = request.getfixturevalue(self.server_fixture)
        return outage.url(server.url)

    @pytest.fixture
    def history_factory(self, url: str, key_prefix: str) -> Callable[..., RedisHistoryProvider]:
        return lambda **options: RedisHistoryProvider.from_url(url, key_prefix=key_prefix, **{**TIMEOUTS, **options})

    @pytest.fixture
    def file_store_factory(self, url: str, key_prefix: str) -> Callable[..., Any]:
        return lambda **options: RedisAgentFileStore.from_url(url, key_prefix=key_prefix, **{**TIMEOUTS, **options})

    @pytest.fixture
    def session_store_factory(self, url: str, key_prefix: str) -> Callable[[], RedisSessionStore]:
        return lambda: RedisSessionStore.from_url(url, key_prefix=key_prefix, **TIMEOUTS)


class TestRedisOutages(_Outages):
    server_fixture = "redis_single"


@pytest.mark.skipif(os.environ.get("AGENT_STORES_HEAVY") != "1", reason="the Valkey run: set AGENT_STORES_HEAVY=1")
class TestValkeyOutages(_Outages):
    server_fixture = "valkey_local"
