"""The checkpoint and todo suites on SQLite, through ``open_stores(url).checkpoint_storage()`` / ``todo_store()``.

Every store a factory opens in one clause is its own ``open_stores`` on one database file (its
own connection), as separate processes would be.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_stores.testing import (
    FakeClock,
    ObjectCheckpointStorageConformance,
    ObjectTodoStoreConformance,
    checkpoint_storage_at,
    todo_store_at,
)


class TestSQLiteCheckpoints(ObjectCheckpointStorageConformance):
    fake_clock = True

    @pytest.fixture
    def checkpoint_storage_factory(self, tmp_path: Path, clock: FakeClock) -> Any:
        return lambda **options: checkpoint_storage_at(f"sqlite:///{tmp_path}/agent.db", clock=clock, **options)


class TestSQLiteTodos(ObjectTodoStoreConformance):
    @pytest.fixture
    def todo_store_factory(self, tmp_path: Path) -> Any:
        return lambda **options: todo_store_at(f"sqlite:///{tmp_path}/agent.db", **options)
