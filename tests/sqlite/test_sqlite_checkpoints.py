"""The checkpoint and todo suites on SQLite, through ``open_stores(url).checkpoint_storage()`` / ``todo_store()``.

Every store a factory opens in one clause is its own ``open_stores`` on one database file (its
own connection), as separate processes would be.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_framework import AgentSession

from agent_stores.core import open_stores
from agent_stores.core.checkpoints import ObjectCheckpointStorage
from agent_stores.core.todos import ObjectTodoStore
from agent_stores.testing import (
    CheckpointStorageCapabilities,
    CheckpointStorageConformance,
    TodoStoreCapabilities,
    TodoStoreConformance,
)

ALL_CHECKPOINTS = CheckpointStorageCapabilities(
    durable=True, ordered_listing=True, lineage_ties=True, keep_last=True, ttl=True, namespaces=True, corruptible=True
)
ALL_TODOS = TodoStoreCapabilities(durable=True, namespaces=True, corruptible=True)


def checkpoints_at(url: str, **options: Any) -> ObjectCheckpointStorage:
    """Checkpoint storage from its own ``open_stores(url)``, closing that backend when it is closed."""
    stores = open_stores(url)
    storage = stores.checkpoint_storage(**options)
    storage._adopt(stores, owned=True)  # pyright: ignore[reportPrivateUsage]
    return storage


def todos_at(url: str, **options: Any) -> ObjectTodoStore:
    """A todo store from its own ``open_stores(url)``, closing that backend when it is closed."""
    stores = open_stores(url)
    store = stores.todo_store(**options)
    store._adopt(stores, owned=True)  # pyright: ignore[reportPrivateUsage]
    return store


async def truncate_checkpoint(store: ObjectCheckpointStorage, checkpoint_id: str) -> None:
    key = store._record_key(checkpoint_id)  # pyright: ignore[reportPrivateUsage]
    stored = await store.driver.get(key)
    assert stored is not None
    await store.driver.put(key, stored.data[:40])


async def garble_todos(store: ObjectTodoStore, session: AgentSession, source_id: str) -> None:
    await store.driver.put(store._key(session, source_id), b"{not json")  # pyright: ignore[reportPrivateUsage]


class TestSQLiteCheckpoints(CheckpointStorageConformance):
    capabilities = ALL_CHECKPOINTS

    @pytest.fixture
    def checkpoint_storage_factory(self, tmp_path: Path) -> Any:
        return lambda **options: checkpoints_at(f"sqlite:///{tmp_path}/agent.db", **options)

    @pytest.fixture
    def corrupt_checkpoint(self) -> Any:
        return truncate_checkpoint


class TestSQLiteTodos(TodoStoreConformance):
    capabilities = ALL_TODOS

    @pytest.fixture
    def todo_store_factory(self, tmp_path: Path) -> Any:
        return lambda **options: todos_at(f"sqlite:///{tmp_path}/agent.db", **options)

    @pytest.fixture
    def corrupt_todos(self) -> Any:
        return garble_todos
