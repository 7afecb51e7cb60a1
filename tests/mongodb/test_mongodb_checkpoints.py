"""The checkpoint and todo suites on MongoDB, through ``open_stores(url)``.

Every store a factory opens in one clause has its own client (as separate processes would)
on one collection prefix of the clause's own. The server is ``$AGENT_STORES_MONGODB_URL``,
testcontainers ``mongo:7`` or the nx-27017 stand-in (NOT MongoDB); the run's summary names it.
"""

from __future__ import annotations

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
from agent_stores.testing.servers import Server
from mongodb_support import client_options, stand_in_divergences

ALL_CHECKPOINTS = CheckpointStorageCapabilities(
    durable=True, ordered_listing=True, lineage_ties=True, keep_last=True, ttl=True, namespaces=True, corruptible=True
)
ALL_TODOS = TodoStoreCapabilities(durable=True, namespaces=True, corruptible=True)

# Clauses the nx-27017 stand-in cannot pass, and why. Empty means it passes them all.
CHECKPOINTS_STAND_IN: dict[str, str] = {}
TODOS_STAND_IN: dict[str, str] = {}


def checkpoints_at(url: str, backend_options: dict[str, Any], **options: Any) -> ObjectCheckpointStorage:
    """Checkpoint storage from its own ``open_stores(url)``, closing that backend when it is closed."""
    stores = open_stores(url, **backend_options)
    storage = stores.checkpoint_storage(**options)
    storage._adopt(stores, owned=True)  # pyright: ignore[reportPrivateUsage]
    return storage


def todos_at(url: str, backend_options: dict[str, Any], **options: Any) -> ObjectTodoStore:
    """A todo store from its own ``open_stores(url)``, closing that backend when it is closed."""
    stores = open_stores(url, **backend_options)
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


@pytest.mark.usefixtures("stand_in")
class TestMongoDBCheckpoints(CheckpointStorageConformance):
    capabilities = ALL_CHECKPOINTS

    @property
    def divergences(self) -> dict[str, str]:  # pyright: ignore[reportIncompatibleVariableOverride]
        return stand_in_divergences(CHECKPOINTS_STAND_IN)

    @pytest.fixture
    def checkpoint_storage_factory(self, mongodb: Server, collection_prefix: str) -> Any:
        backend = {"collection_prefix": collection_prefix, "client_options": client_options()}
        return lambda **options: checkpoints_at(mongodb.url, backend, **options)

    @pytest.fixture
    def corrupt_checkpoint(self) -> Any:
        return truncate_checkpoint


@pytest.mark.usefixtures("stand_in")
class TestMongoDBTodos(TodoStoreConformance):
    capabilities = ALL_TODOS

    @property
    def divergences(self) -> dict[str, str]:  # pyright: ignore[reportIncompatibleVariableOverride]
        return stand_in_divergences(TODOS_STAND_IN)

    @pytest.fixture
    def todo_store_factory(self, mongodb: Server, collection_prefix: str) -> Any:
        backend = {"collection_prefix": collection_prefix, "client_options": client_options()}
        return lambda **options: todos_at(mongodb.url, backend, **options)

    @pytest.fixture
    def corrupt_todos(self) -> Any:
        return garble_todos
