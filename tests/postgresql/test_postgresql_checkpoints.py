"""The checkpoint and todo suites on PostgreSQL, through ``open_stores(url).checkpoint_storage()`` / ``todo_store()``.

Every store a factory opens in one clause is its own ``open_stores`` (its own pool) on the
test's database, as separate processes would be.
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


class TestPostgreSQLCheckpoints(ObjectCheckpointStorageConformance):
    fake_clock = True

    @pytest.fixture
    def checkpoint_storage_factory(self, postgresql_url: str, clock: FakeClock) -> Any:
        return lambda **options: checkpoint_storage_at(postgresql_url, clock=clock, **options)


class TestPostgreSQLTodos(ObjectTodoStoreConformance):
    @pytest.fixture
    def todo_store_factory(self, postgresql_url: str) -> Any:
        return lambda **options: todo_store_at(postgresql_url, **options)
