"""The two driver suites against the Redis drivers: a single Redis, Valkey and a Redis Cluster.

Every driver a factory opens in one clause owns its own client to one server and shares one
key prefix, as separate processes would; each clause gets a fresh key prefix.
"""

from __future__ import annotations

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
