"""The checkpoint and todo suites against the framework's reference stores and the core adapters.

The framework's stores are the references that prove the suites right: every clause they do
not pass is either outside their declared capabilities or a written divergence.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_framework import AgentSession, FileCheckpointStorage, InMemoryCheckpointStorage
from agent_framework._harness._todo import TodoFileStore, TodoSessionStore

from agent_stores.core.checkpoints import ObjectCheckpointStorage
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.core.todos import ObjectTodoStore
from agent_stores.testing import (
    CheckpointStorageCapabilities,
    CheckpointStorageConformance,
    FakeClock,
    ObjectCheckpointStorageConformance,
    ObjectTodoStoreConformance,
    TodoStoreCapabilities,
    TodoStoreConformance,
)


class TestInMemoryCheckpointStorage(CheckpointStorageConformance):
    """The framework's in-memory storage: deep copies in one instance, no encoding."""

    capabilities = CheckpointStorageCapabilities()

    @pytest.fixture
    def checkpoint_storage_factory(self) -> Any:
        store = InMemoryCheckpointStorage()
        return lambda: store


class TestFileCheckpointStorage(CheckpointStorageConformance):
    """The framework's file storage: one JSON file per checkpoint id, named by the id itself."""

    capabilities = CheckpointStorageCapabilities(durable=True, corruptible=True, max_id_length=200)
    divergences = {
        "test_adversarial_names_are_distinct": (
            "ids are file names: an id holding '/' or '..' is refused or fails to save (no such directory)"
        ),
        "test_corrupt_latest_is_not_skipped": (
            "list_checkpoints skips an undecodable file with a logged warning, so get_latest silently "
            "returns an older checkpoint"
        ),
    }

    @pytest.fixture
    def checkpoint_storage_factory(self, tmp_path: Path) -> Any:
        return lambda **options: FileCheckpointStorage(tmp_path / "checkpoints", **options)

    @pytest.fixture
    def corrupt_checkpoint(self) -> Any:
        async def corrupt(store: FileCheckpointStorage, checkpoint_id: str) -> None:
            path = store._validate_file_path(checkpoint_id)  # pyright: ignore[reportPrivateUsage]
            path.write_bytes(path.read_bytes()[:40])

        return corrupt


class TestObjectCheckpointStorage(ObjectCheckpointStorageConformance):
    """The core adapter over the in-process object driver."""

    fake_clock = True

    @pytest.fixture
    def checkpoint_storage_factory(self, clock: FakeClock) -> Any:
        driver = MemoryObjectDriver()
        return lambda **options: ObjectCheckpointStorage(driver, clock=clock, **options)


class TestTodoSessionStore(TodoStoreConformance):
    """The framework's todo store inside ``AgentSession.state``."""

    capabilities = TodoStoreCapabilities()

    @pytest.fixture
    def todo_store_factory(self) -> Any:
        return TodoSessionStore


class TestTodoFileStore(TodoStoreConformance):
    capabilities = TodoStoreCapabilities(durable=True, separator_session_ids=False, corruptible=True)

    @pytest.fixture
    def todo_store_factory(self, tmp_path: Path) -> Any:
        return lambda: TodoFileStore(tmp_path / "todos")

    @pytest.fixture
    def corrupt_todos(self) -> Any:
        async def corrupt(store: TodoFileStore, session: AgentSession, source_id: str) -> None:
            store._get_state_path(session, source_id=source_id).write_bytes(b"{not json")  # pyright: ignore[reportPrivateUsage]

        return corrupt


class TestObjectTodoStore(ObjectTodoStoreConformance):
    @pytest.fixture
    def todo_store_factory(self) -> Any:
        driver = MemoryObjectDriver()
        return lambda **options: ObjectTodoStore(driver, **options)
