"""The checkpoint and todo suites on MongoDB, through ``open_stores(url)``.

Every store a factory opens in one clause has its own client (as separate processes would)
on one collection prefix of the clause's own. The server is ``$AGENT_STORES_MONGODB_URL``,
testcontainers ``mongo:7`` or the nx-27017 stand-in (NOT MongoDB); the run's summary names it.
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
from mongodb_support import client_options, stand_in_divergences

# Clauses the nx-27017 stand-in cannot pass, and why. Empty means it passes them all.
CHECKPOINTS_STAND_IN: dict[str, str] = {}
TODOS_STAND_IN: dict[str, str] = {}


@pytest.mark.usefixtures("stand_in")
class TestMongoDBCheckpoints(ObjectCheckpointStorageConformance):
    fake_clock = True

    @property
    def divergences(self) -> dict[str, str]:  # pyright: ignore[reportIncompatibleVariableOverride]
        return stand_in_divergences(CHECKPOINTS_STAND_IN)

    @pytest.fixture
    def checkpoint_storage_factory(self, mongodb: Server, collection_prefix: str, clock: FakeClock) -> Any:
        backend = {"collection_prefix": collection_prefix, "client_options": client_options()}
        return lambda **options: checkpoint_storage_at(mongodb.url, backend, clock=clock, **options)


@pytest.mark.usefixtures("stand_in")
class TestMongoDBTodos(ObjectTodoStoreConformance):
    @property
    def divergences(self) -> dict[str, str]:  # pyright: ignore[reportIncompatibleVariableOverride]
        return stand_in_divergences(TODOS_STAND_IN)

    @pytest.fixture
    def todo_store_factory(self, mongodb: Server, collection_prefix: str) -> Any:
        backend = {"collection_prefix": collection_prefix, "client_options": client_options()}
        return lambda **options: todo_store_at(mongodb.url, backend, **options)
