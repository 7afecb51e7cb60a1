"""The session-store conformance suite against the framework's reference stores and the core adapter."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_framework import FileSessionStore, SessionStore

from agent_stores.core import ObjectSessionStore
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.testing import SessionStoreCapabilities, SessionStoreConformance, corrupt_object_session


class TestInMemorySessionStore(SessionStoreConformance):
    """The framework's ``SessionStore`` keeps deep copies in the instance: one instance is the whole store."""

    capabilities = SessionStoreCapabilities()

    @pytest.fixture
    def session_store_factory(self) -> Any:
        store = SessionStore()
        return lambda: store


class TestFileSessionStore(SessionStoreConformance):
    capabilities = SessionStoreCapabilities(
        durable=True, max_id_length=FileSessionStore.MAX_SESSION_ID_LENGTH, corruptible=True
    )

    @pytest.fixture
    def session_store_factory(self, tmp_path: Path) -> Any:
        return lambda: FileSessionStore(tmp_path / "sessions")

    @pytest.fixture
    def corrupt_session(self) -> Any:
        async def corrupt(store: FileSessionStore, session_id: str) -> None:
            store._session_file_path(session_id).write_bytes(b"{not a snapshot")  # pyright: ignore[reportPrivateUsage]

        return corrupt


class TestObjectSessionStore(SessionStoreConformance):
    """The core adapter over the in-process object driver."""

    capabilities = SessionStoreCapabilities(durable=True, corruptible=True, versioned=True)

    @pytest.fixture
    def session_store_factory(self) -> Any:
        driver = MemoryObjectDriver()
        return lambda: ObjectSessionStore(driver)

    @pytest.fixture
    def corrupt_session(self) -> Any:
        return corrupt_object_session
