"""The checkpoint and todo suites on SQLite, through ``open_stores(url).checkpoint_storage()`` / ``todo_store()``.

Every store a factory opens in one clause is its own ``open_stores`` on one database file (its
own connection), as separate processes would be.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_stores.testing import (
    OBJECT_CHECKPOINT_CAPABILITIES,
    OBJECT_TODO_CAPABILITIES,
    CheckpointStorageConformance,
    TodoStoreConformance,
    checkpoint_storage_at,
    corrupt_object_checkpoint,
    corrupt_object_todos,
    todo_store_at,
)


class TestSQLiteCheckpoints(CheckpointStorageConformance):
    capabilities = OBJECT_CHECKPOINT_CAPABILITIES

    @pytest.fixture
    def checkpoint_storage_factory(self, tmp_path: Path) -> Any:
        return lambda **options: checkpoint_storage_at(f"sqlite:///{tmp_path}/agent.db", **options)

    @pytest.fixture
    def corrupt_checkpoint(self) -> Any:
        return corrupt_object_checkpoint


class TestSQLiteTodos(TodoStoreConformance):
    capabilities = OBJECT_TODO_CAPABILITIES

    @pytest.fixture
    def todo_store_factory(self, tmp_path: Path) -> Any:
        return lambda **options: todo_store_at(f"sqlite:///{tmp_path}/agent.db", **options)

    @pytest.fixture
    def corrupt_todos(self) -> Any:
        return corrupt_object_todos
