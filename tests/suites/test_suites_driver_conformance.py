"""The two driver suites against the core's in-process drivers and the SQLite drivers.

Every driver a factory opens in one clause works on the same backing data: the one in-process
instance, or one SQLite database file reached through separate connections, as separate
processes would reach it.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver
from agent_stores.core.prefixed import PrefixedLogDriver
from agent_stores.sqlite import SQLiteDatabase, SQLiteLogDriver, SQLiteObjectDriver
from agent_stores.testing import (
    FakeClock,
    LogDriverCapabilities,
    LogDriverConformance,
    ObjectDriverCapabilities,
    ObjectDriverConformance,
)
from test_suites_broken_drivers import RefusesNulInLogKeys


class TestMemoryLogDriver(LogDriverConformance):
    """One driver instance is one store; its operations never await, so each is atomic in the loop."""

    capabilities = LogDriverCapabilities(ttl=True, concurrent_instances=True, conditional_delete=True)
    fake_clock = True

    @pytest.fixture
    def log_driver_factory(self, clock: FakeClock) -> Callable[[], MemoryLogDriver]:
        driver = MemoryLogDriver(clock=clock)
        return lambda: driver


class TestPrefixedLogDriver(LogDriverConformance):
    """A tenant's view of a driver keeps every promise of the driver under it, conditional delete included."""

    capabilities = LogDriverCapabilities(ttl=True, concurrent_instances=True, conditional_delete=True)
    fake_clock = True

    @pytest.fixture
    def log_driver_factory(self, clock: FakeClock) -> Callable[[], PrefixedLogDriver]:
        driver = MemoryLogDriver(clock=clock)
        return lambda: PrefixedLogDriver(driver, "tenants/acme/")


class TestLogDriverRefusingNul(LogDriverConformance):
    """A driver refusing NUL in keys, prefixes and ``after`` with ``ValueError`` passes: ``drivers.py`` allows it."""

    capabilities = LogDriverCapabilities(ttl=True, concurrent_instances=True, conditional_delete=True)
    fake_clock = True

    @pytest.fixture
    def log_driver_factory(self, clock: FakeClock) -> Callable[[], MemoryLogDriver]:
        driver = RefusesNulInLogKeys(clock=clock)
        return lambda: driver


class TestMemoryObjectDriver(ObjectDriverConformance):
    capabilities = ObjectDriverCapabilities(
        atomic_create_across_instances=True, atomic_if_version_across_instances=True
    )

    @pytest.fixture
    def object_driver_factory(self) -> Callable[[], MemoryObjectDriver]:
        driver = MemoryObjectDriver()
        return lambda: driver


class TestSQLiteLogDriver(LogDriverConformance):
    """Each driver owns its own connection to one database file; an append is one conditional INSERT."""

    capabilities = LogDriverCapabilities(ttl=True, concurrent_instances=True, conditional_delete=True)
    fake_clock = True

    @pytest.fixture
    def log_driver_factory(self, tmp_path: Path, clock: FakeClock) -> Callable[[], SQLiteLogDriver]:
        path = tmp_path / "drivers.db"
        return lambda: SQLiteLogDriver(SQLiteDatabase.from_path(path), clock=clock)


class TestSQLiteObjectDriver(ObjectDriverConformance):
    """Each driver owns its own connection; exclusive create and compare-and-set are single statements."""

    capabilities = ObjectDriverCapabilities(
        atomic_create_across_instances=True, atomic_if_version_across_instances=True
    )

    @pytest.fixture
    def object_driver_factory(self, tmp_path: Path) -> Callable[[], SQLiteObjectDriver]:
        path = tmp_path / "drivers.db"
        return lambda: SQLiteObjectDriver(SQLiteDatabase.from_path(path))
