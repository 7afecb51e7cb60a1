"""The two driver suites against the PostgreSQL drivers, each driver owning its own pool to one database."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agent_stores.postgresql import (
    PostgreSQLBackend,
    PostgreSQLDatabase,
    PostgreSQLLogDriver,
    PostgreSQLObjectDriver,
)
from agent_stores.testing import FakeClock, LogDriverConformance, ObjectDriverConformance, declared


class TestPostgreSQLLogDriver(LogDriverConformance):
    capabilities = declared(PostgreSQLBackend, "log_driver")
    fake_clock = True

    @pytest.fixture
    def log_driver_factory(self, postgresql_url: str, clock: FakeClock) -> Callable[[], PostgreSQLLogDriver]:
        return lambda: PostgreSQLLogDriver(PostgreSQLDatabase.from_url(postgresql_url), clock=clock)


class TestPostgreSQLObjectDriver(ObjectDriverConformance):
    capabilities = declared(PostgreSQLBackend, "object_driver")

    @pytest.fixture
    def object_driver_factory(self, postgresql_url: str) -> Callable[[], PostgreSQLObjectDriver]:
        return lambda: PostgreSQLObjectDriver(PostgreSQLDatabase.from_url(postgresql_url))
