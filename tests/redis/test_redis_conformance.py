"""The three conformance suites against the Redis stores: a single Redis, Valkey and a Redis Cluster.

Every store a factory opens in one clause shares one key prefix on one server (its own client
each, as separate processes would have), so restarts, two instances and two processes are
checked; each clause gets a fresh key prefix. The single Redis comes through testcontainers
where an engine answers (CI), Valkey from its local binary (and in a container for the history
suite), the cluster from local binaries; the run's summary names each server and path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
from redis.asyncio import Redis

from agent_stores.redis import (
    RedisAgentFileStore,
    RedisBackend,
    RedisConnection,
    RedisHistoryProvider,
    RedisSessionStore,
)
from agent_stores.testing import (
    FileStoreConformance,
    HistoryProviderConformance,
    SessionStoreConformance,
    corrupt_object_session,
    declared,
)
from agent_stores.testing.servers import Server

ALL_HISTORY = declared(RedisBackend, "history")
ALL_FILES = declared(RedisBackend, "files")
ALL_SESSIONS = declared(RedisBackend, "sessions")


def open_history(url: str, key_prefix: str, **options: Any) -> RedisHistoryProvider:
    """The ``history_process_factory`` spec: a provider owning its own client."""
    return RedisHistoryProvider.from_url(url, key_prefix=key_prefix, **options)


class _History(HistoryProviderConformance):
    capabilities = ALL_HISTORY
    server_fixture = ""

    @pytest.fixture
    def server(self, request: pytest.FixtureRequest) -> Server:
        return request.getfixturevalue(self.server_fixture)

    @pytest.fixture
    def history_factory(self, server: Server, key_prefix: str) -> Callable[..., RedisHistoryProvider]:
        return lambda **options: open_history(server.url, key_prefix, **options)

    @pytest.fixture
    def history_process_factory(self, server: Server, key_prefix: str) -> tuple[str, dict[str, Any]]:
        return f"{__name__}:open_history", {"url": server.url, "key_prefix": key_prefix}


class _Files(FileStoreConformance):
    capabilities = ALL_FILES
    server_fixture = ""

    @pytest.fixture
    def server(self, request: pytest.FixtureRequest) -> Server:
        return request.getfixturevalue(self.server_fixture)

    @pytest.fixture
    def file_store_factory(self, server: Server, key_prefix: str) -> Callable[..., RedisAgentFileStore]:
        return lambda **options: RedisAgentFileStore.from_url(server.url, key_prefix=key_prefix, **options)


class _Sessions(SessionStoreConformance):
    capabilities = ALL_SESSIONS
    server_fixture = ""

    @pytest.fixture
    def server(self, request: pytest.FixtureRequest) -> Server:
        return request.getfixturevalue(self.server_fixture)

    @pytest.fixture
    def session_store_factory(self, server: Server, key_prefix: str) -> Callable[[], RedisSessionStore]:
        return lambda: RedisSessionStore.from_url(server.url, key_prefix=key_prefix)

    @pytest.fixture
    def corrupt_session(self) -> Any:
        return corrupt_object_session


# -- a single Redis (testcontainers where an engine answers) -----------------------------------


class TestRedisHistory(_History):
    server_fixture = "redis_single"


class TestRedisHistoryOnBorrowedDecodingClient(HistoryProviderConformance):
    """Providers borrowing one user-configured client with ``decode_responses=True``, never closing it."""

    capabilities = declared(RedisBackend, "history", multi_process=False)  # the class opens no second process

    @pytest_asyncio.fixture(autouse=True)
    async def client(self, redis_single: Server) -> AsyncIterator[Redis]:
        client = Redis.from_url(redis_single.url, decode_responses=True)
        yield client
        await client.aclose()

    @pytest.fixture
    def history_factory(self, client: Redis, key_prefix: str) -> Callable[..., RedisHistoryProvider]:
        return lambda **options: RedisHistoryProvider(client, key_prefix=key_prefix, **options)


class TestRedisFiles(_Files):
    server_fixture = "redis_single"


class TestRedisSessions(_Sessions):
    server_fixture = "redis_single"


# -- a single Redis through redis-py's own connections (a release the client tuning is not tested on)


@pytest.mark.usefixtures("untuned_redis_py")
class TestRedisHistoryUntuned(_History):
    # The processes of the multi-process clause start afresh, with the installed redis-py's
    # connections: that clause is TestRedisHistory's.
    capabilities = dataclasses.replace(ALL_HISTORY, multi_process=False)
    server_fixture = "redis_single"


@pytest.mark.usefixtures("untuned_redis_py")
class TestRedisFilesUntuned(_Files):
    server_fixture = "redis_single"


@pytest.mark.usefixtures("untuned_redis_py")
class TestRedisSessionsUntuned(_Sessions):
    server_fixture = "redis_single"


# -- Valkey (local binary; the history suite also by the default order, a container in CI) ------


class TestValkeyHistory(_History):
    server_fixture = "valkey_local"


class TestValkeyHistoryDefaultPath(_History):
    server_fixture = "valkey_any"


class TestValkeyFiles(_Files):
    server_fixture = "valkey_local"


class TestValkeySessions(_Sessions):
    server_fixture = "valkey_local"


# -- a Redis Cluster of 3 primaries (local binaries) --------------------------------------------


class TestClusterHistory(_History):
    """Providers on one cluster client per clause (and their own clients in the multi-process clause).

    A new cluster client learns the slot map and the server's command table before its first
    command, which takes longer than the TTL clauses' 0.3 s on a loaded machine; one client
    initialized up front keeps those clauses about expiry rather than client start-up.
    """

    server_fixture = "redis_cluster"

    @pytest_asyncio.fixture(autouse=True)
    async def cluster_client(self, server: Server, key_prefix: str) -> AsyncIterator[RedisConnection]:
        connection = RedisConnection.from_url(server.url, key_prefix=key_prefix)
        await connection.run("initialize", connection.client.ping())
        yield connection
        await connection.aclose()

    @pytest.fixture
    def history_factory(self, cluster_client: RedisConnection) -> Callable[..., RedisHistoryProvider]:
        return lambda **options: RedisHistoryProvider(cluster_client, **options)


class TestClusterFiles(_Files):
    server_fixture = "redis_cluster"


class TestClusterSessions(_Sessions):
    server_fixture = "redis_cluster"
