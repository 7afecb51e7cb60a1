"""The two driver suites against sealing drivers over the in-process and SQLite drivers.

Each factory call builds a new sealing driver with its own key cache over the same backing
data and the same stored data keys, as a second process would.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver
from agent_stores.core.sealing import DataKeys, Keyring, SealedLogDriver, SealedObjectDriver
from agent_stores.sqlite import SQLiteDatabase, SQLiteLogDriver, SQLiteObjectDriver
from agent_stores.testing import (
    FakeClock,
    LogDriverCapabilities,
    LogDriverConformance,
    ObjectDriverCapabilities,
    ObjectDriverConformance,
)

KEYRING = Keyring.generate()


class TestSealedMemoryLogDriver(LogDriverConformance):
    capabilities = LogDriverCapabilities(ttl=True, concurrent_instances=True, conditional_delete=True)
    fake_clock = True

    @pytest.fixture
    def log_driver_factory(self, clock: FakeClock) -> Callable[[], SealedLogDriver]:
        logs, keys = MemoryLogDriver(clock=clock), MemoryObjectDriver()
        return lambda: SealedLogDriver(logs, DataKeys(keys, KEYRING))


class TestSealedMemoryObjectDriver(ObjectDriverConformance):
    capabilities = ObjectDriverCapabilities(
        atomic_create_across_instances=True, atomic_if_version_across_instances=True
    )

    @pytest.fixture
    def object_driver_factory(self) -> Callable[[], SealedObjectDriver]:
        objects = MemoryObjectDriver()
        return lambda: SealedObjectDriver(objects, DataKeys(objects, KEYRING))


class TestSealedSQLiteLogDriver(LogDriverConformance):
    """Each driver owns its own connection to one database file, which also holds the data keys."""

    capabilities = LogDriverCapabilities(ttl=True, concurrent_instances=True, conditional_delete=True)
    fake_clock = True

    @pytest.fixture
    def log_driver_factory(self, tmp_path: Path, clock: FakeClock) -> Callable[[], SealedLogDriver]:
        path = tmp_path / "drivers.db"

        def open_driver() -> SealedLogDriver:
            database = SQLiteDatabase.from_path(path)
            return _Owning(SQLiteLogDriver(database, clock=clock), DataKeys(SQLiteObjectDriver(database), KEYRING))

        return open_driver


class TestSealedSQLiteObjectDriver(ObjectDriverConformance):
    capabilities = ObjectDriverCapabilities(
        atomic_create_across_instances=True, atomic_if_version_across_instances=True
    )

    @pytest.fixture
    def object_driver_factory(self, tmp_path: Path) -> Callable[[], SealedObjectDriver]:
        path = tmp_path / "drivers.db"

        def open_driver() -> SealedObjectDriver:
            objects = SQLiteObjectDriver(SQLiteDatabase.from_path(path))
            return _OwningObjects(objects, DataKeys(objects, KEYRING))

        return open_driver


class _Owning(SealedLogDriver):
    """A sealing log driver that closes the driver underneath (one connection per clause's driver)."""

    async def aclose(self) -> None:
        await self.driver.aclose()


class _OwningObjects(SealedObjectDriver):
    async def aclose(self) -> None:
        await self.driver.aclose()
