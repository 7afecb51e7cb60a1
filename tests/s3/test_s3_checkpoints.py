"""The checkpoint and todo suites on S3 (SeaweedFS and moto's server), through ``open_stores(url)``.

Every store a factory opens in one clause has its own boto3 client (as separate processes
would), under a URL prefix of the clause's own, so the prefix of the URL is also checked.
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
from s3_support import S3Target

ALL_CHECKPOINTS = CheckpointStorageCapabilities(
    durable=True, ordered_listing=True, lineage_ties=True, keep_last=True, ttl=True, namespaces=True, corruptible=True
)
ALL_TODOS = TodoStoreCapabilities(durable=True, namespaces=True, corruptible=True)


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


class _Checkpoints(CheckpointStorageConformance):
    capabilities = ALL_CHECKPOINTS
    target_fixture = ""

    @pytest.fixture
    def checkpoint_storage_factory(self, request: pytest.FixtureRequest, s3_prefix: str) -> Any:
        target: S3Target = request.getfixturevalue(self.target_fixture)
        backend = {"session": target.session()}
        return lambda **options: checkpoints_at(target.url(s3_prefix), backend, **options)

    @pytest.fixture
    def corrupt_checkpoint(self) -> Any:
        return truncate_checkpoint


class _Todos(TodoStoreConformance):
    capabilities = ALL_TODOS
    target_fixture = ""

    @pytest.fixture
    def todo_store_factory(self, request: pytest.FixtureRequest, s3_prefix: str) -> Any:
        target: S3Target = request.getfixturevalue(self.target_fixture)
        backend = {"session": target.session()}
        return lambda **options: todos_at(target.url(s3_prefix), backend, **options)

    @pytest.fixture
    def corrupt_todos(self) -> Any:
        return garble_todos


class TestSeaweedFSCheckpoints(_Checkpoints):
    target_fixture = "seaweedfs"


class TestSeaweedFSTodos(_Todos):
    target_fixture = "seaweedfs"


class TestMotoCheckpoints(_Checkpoints):
    target_fixture = "moto_s3"


class TestMotoTodos(_Todos):
    target_fixture = "moto_s3"
