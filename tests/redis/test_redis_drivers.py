"""The two driver suites against the Redis drivers: a single Redis, Valkey and a Redis Cluster.

Every driver a factory opens in one clause owns its own client to one server and shares one
key prefix, as separate processes would; each clause gets a fresh key prefix.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from agent_stores.redis import RedisBackend, RedisConnection, RedisLogDriver, RedisObjectDriver
from agent_stores.testing import (
    LogDriverConformance,
    ObjectDriverConformance,
    declared,
)
from agent_stores.testing.servers import Server

# Expiry is Redis's own PEXPIRE; conditions are checked inside one script on the server.
LOG = declared(RedisBackend, "log_driver")
OBJECTS = declared(RedisBackend, "object_driver")


class _Log(LogDriverConformance):
    capabilities = LOG
    server_fixture = ""

    @pytest.fixture
    def log_driver_factory(self, request: pytest.FixtureRequest, key_prefix: str) -> Callable[[], RedisLogDriver]:
        server: Server = request.getfixturevalue(self.server_fixture)
        return lambda: RedisLogDriver(RedisConnection.from_url(server.url, key_prefix=key_prefix))


class _Objects(ObjectDriverConformance):
    capabilities = OBJECTS
    server_fixture = ""

    @pytest.fixture
    def object_driver_factory(self, request: pytest.FixtureRequest, key_prefix: str) -> Callable[[], RedisObjectDriver]:
        server: Server = request.getfixturevalue(self.server_fixture)
        return lambda: RedisObjectDriver(RedisConnection.from_url(server.url, key_prefix=key_prefix))


class TestRedisLogDriver(_Log):
    server_fixture = "redis_single"


class TestRedisObjectDriver(_Objects):
    server_fixture = "redis_single"


# Owned clients with redis-py's own connections (a release the client tuning is not tested on).


@pytest.mark.usefixtures("untuned_redis_py")
class TestRedisLogDriverUntuned(_Log):
    server_fixture = "redis_single"


@pytest.mark.usefixtures("untuned_redis_py")
class TestRedisObjectDriverUntuned(_Objects):
    server_fixture = "redis_single"


class TestValkeyLogDriver(_Log):
    server_fixture = "valkey_local"


class TestValkeyObjectDriver(_Objects):
    server_fixture = "valkey_local"


class TestClusterLogDriver(_Log):
    server_fixture = "redis_cluster"


class TestClusterObjectDriver(_Objects):
    server_fixture = "redis_cluster"


@pytest.mark.asyncio
@pytest.mark.parametrize("server_fixture", ["redis_single", "redis_cluster"])
@pytest.mark.parametrize("shards", [1, 16])
async def test_get_many_of_more_keys_than_one_script_reads(
    request: pytest.FixtureRequest, key_prefix: str, server_fixture: str, shards: int
) -> None:
    """Over 512 keys of one shard go in several scripts; the answer is still ``get`` of each, in order."""
    server: Server = request.getfixturevalue(server_fixture)
    driver = RedisObjectDriver(RedisConnection.from_url(server.url, key_prefix=key_prefix, shards=shards))
    try:
        keys = [f"many/{i:04d}" for i in range(1_200)]
        for start in range(0, len(keys), 100):
            await asyncio.gather(*(driver.put(k, k.encode()) for k in keys[start : start + 100] if k[-1] != "7"))
        asked = [*reversed(keys), "many/absent", keys[3]]
        found = await driver.get_many(asked)
        assert found == [await driver.get(k) for k in asked]
        first = [None if item is None else item.data.decode() for item in found[:4]]
        assert first == ["many/1199", "many/1198", None, "many/1196"]
        assert sum(item is None for item in found) == 121  # the 120 never written, and the absent one
    finally:
        await driver.aclose()
