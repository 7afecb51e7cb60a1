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
    FakeClock,
    ObjectCheckpointStorageConformance,
    ObjectTodoStoreConformance,
    checkpoint_storage_at,
    todo_store_at,
)


class _Checkpoints(ObjectCheckpointStorageConformance):
    fake_clock = True

    @pytest.fixture
    def root_url(self, tmp_path: Path) -> str:
        return f"file://{tmp_path}/agent"

    @pytest.fixture
    def checkpoint_storage_factory(self, root_url: str, clock: FakeClock) -> Any:
        return lambda **options: checkpoint_storage_at(root_url, clock=clock, **options)


class _Todos(ObjectTodoStoreConformance):
    @pytest.fixture
    def root_url(self, tmp_path: Path) -> str:
        return f"file://{tmp_path}/agent"

    @pytest.fixture
    def todo_store_factory(self, root_url: str) -> Any:
        return lambda **options: todo_store_at(root_url, **options)


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
