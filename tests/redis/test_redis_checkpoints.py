"""The checkpoint and todo suites on Redis, Valkey and a Redis Cluster, through ``open_stores(url)``.

Every store a factory opens in one clause has its own client (as separate processes would)
on one key prefix of the clause's own.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_stores.testing import (
    FakeClock,
    ObjectCheckpointStorageConformance,
    ObjectTodoStoreConformance,
    checkpoint_storage_at,
    todo_store_at,
)
from agent_stores.testing.servers import Server


class _Checkpoints(ObjectCheckpointStorageConformance):
    server_fixture = ""
    fake_clock = True  # checkpoints expire by the storage's clock, not by Redis's

    @pytest.fixture
    def checkpoint_storage_factory(self, request: pytest.FixtureRequest, key_prefix: str, clock: FakeClock) -> Any:
        server: Server = request.getfixturevalue(self.server_fixture)
        return lambda **options: checkpoint_storage_at(server.url, {"key_prefix": key_prefix}, clock=clock, **options)


class _Todos(ObjectTodoStoreConformance):
    server_fixture = ""

    @pytest.fixture
    def todo_store_factory(self, request: pytest.FixtureRequest, key_prefix: str) -> Any:
        server: Server = request.getfixturevalue(self.server_fixture)
        return lambda **options: todo_store_at(server.url, {"key_prefix": key_prefix}, **options)


class TestRedisCheckpoints(_Checkpoints):
    server_fixture = "redis_single"


class TestRedisTodos(_Todos):
    server_fixture = "redis_single"


class TestValkeyCheckpoints(_Checkpoints):
    server_fixture = "valkey_local"


class TestValkeyTodos(_Todos):
    server_fixture = "valkey_local"


class TestClusterCheckpoints(_Checkpoints):
    server_fixture = "redis_cluster"


class TestClusterTodos(_Todos):
    server_fixture = "redis_cluster"
