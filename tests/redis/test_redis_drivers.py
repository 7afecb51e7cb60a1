"""The two driver suites against the Redis drivers: a single Redis, Valkey and a Redis Cluster.

Every driver a factory opens in one clause owns its own client to one server and shares one
key prefix, as separate processes would; each clause gets a fresh key prefix.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from agent_stores.core import OrderedPut, StoreConflictError
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


@pytest.mark.asyncio
@pytest.mark.parametrize(("server_fixture", "shards", "scripts"), [("redis_single", 16, 1), ("redis_cluster", 1, 1)])
async def test_put_in_order_is_one_script_where_one_can_reach_every_key(
    request: pytest.FixtureRequest, key_prefix: str, server_fixture: str, shards: int, scripts: int
) -> None:
    """One script writes the items in order: on one server always, on a cluster when their keys share a shard.

    A refused ``if_absent`` item stops the script: the items before it stay, those after it are
    not written. On a cluster with items in several shards (the default 16 shards, a
    checkpoint's record and entry mostly apart), the items are put one after the other instead.
    """
    server: Server = request.getfixturevalue(server_fixture)
    connection = RedisConnection.from_url(server.url, key_prefix=key_prefix, shards=shards)
    driver = RedisObjectDriver(connection)
    ran: list[int] = []
    script = connection.object_put_in_order

    async def counted(keys: Sequence[str], args: Sequence[str | bytes | int]) -> Any:
        ran.append(len(keys))
        return await script(keys, args)

    connection.object_put_in_order = counted  # pyright: ignore[reportAttributeAccessIssue]
    try:
        await driver.put("taken", b"old")
        items = [OrderedPut(f"item/{n}", f"{n}".encode(), if_absent=n == 0) for n in range(4)]
        versions = await driver.put_in_order(items)
        assert [await driver.head(item.key) for item in items] == versions
        assert ran == [2 * len(items)] * scripts
        with pytest.raises(StoreConflictError):
            await driver.put_in_order(
                [OrderedPut("before", b"1"), OrderedPut("taken", b"2", if_absent=True), OrderedPut("after", b"3")]
            )
        assert await driver.get("before") is not None
        old = await driver.get("taken")
        assert old is not None and old.data == b"old"
        assert await driver.get("after") is None
        assert len(ran) == 2 * scripts
    finally:
        await driver.aclose()


@pytest.mark.asyncio
async def test_put_in_order_on_a_cluster_across_shards_puts_one_after_the_other(
    redis_cluster: Server, key_prefix: str
) -> None:
    """Keys in different shards of a cluster: no script (it could not reach them all), the items in order."""
    connection = RedisConnection.from_url(redis_cluster.url, key_prefix=key_prefix, shards=16)
    driver = RedisObjectDriver(connection)
    try:
        items = [OrderedPut(f"spread/{n}", b"x", if_absent=True) for n in range(8)]
        assert len({connection.object_keys(item.key)[1] for item in items}) > 1
        versions = await driver.put_in_order(items)
        assert [await driver.head(item.key) for item in items] == versions
        with pytest.raises(StoreConflictError):
            await driver.put_in_order([OrderedPut("spread/new", b"1"), items[3], OrderedPut("spread/after", b"2")])
        assert await driver.get("spread/new") is not None
        assert await driver.get("spread/after") is None
    finally:
        await driver.aclose()
