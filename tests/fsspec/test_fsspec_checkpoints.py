"""The checkpoint and todo suites on fsspec filesystems, through ``open_stores(url)``: a local directory
(``file://``) and fsspec's memory filesystem.

Every store a factory opens in one clause is its own ``open_stores`` on one root.
"""

from __future__ import annotations

import uuid
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


class _Checkpoints(CheckpointStorageConformance):
    capabilities = OBJECT_CHECKPOINT_CAPABILITIES

    @pytest.fixture
    def root_url(self, tmp_path: Path) -> str:
        return f"file://{tmp_path}/agent"

    @pytest.fixture
    def checkpoint_storage_factory(self, root_url: str) -> Any:
        return lambda **options: checkpoint_storage_at(root_url, **options)

    @pytest.fixture
    def corrupt_checkpoint(self) -> Any:
        return corrupt_object_checkpoint


class _Todos(TodoStoreConformance):
    capabilities = OBJECT_TODO_CAPABILITIES

    @pytest.fixture
    def root_url(self, tmp_path: Path) -> str:
        return f"file://{tmp_path}/agent"

    @pytest.fixture
    def todo_store_factory(self, root_url: str) -> Any:
        return lambda **options: todo_store_at(root_url, **options)

    @pytest.fixture
    def corrupt_todos(self) -> Any:
        return corrupt_object_todos


class TestLocalCheckpoints(_Checkpoints):
    pass


class TestLocalTodos(_Todos):
    pass


class TestMemoryFsCheckpoints(_Checkpoints):
    @pytest.fixture
    def root_url(self) -> str:
        return f"fsspec+memory:///agent-{uuid.uuid4().hex[:12]}"


class TestMemoryFsTodos(_Todos):
    @pytest.fixture
    def root_url(self) -> str:
        return f"fsspec+memory:///agent-{uuid.uuid4().hex[:12]}"
