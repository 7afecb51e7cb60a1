"""The two driver suites against the PostgreSQL drivers, each driver owning its own pool to one database."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


@given(st.text())
def test_session_ids_round_trip_through_the_text_column(session_id: str) -> None:
    """Any session id, NUL and backslashes included, is stored as text without NUL and read back exactly."""
    from agent_stores.postgresql._driver import (  # pyright: ignore[reportPrivateUsage]
        _session_id_of,  # pyright: ignore[reportPrivateUsage]
        _stored_session_id,  # pyright: ignore[reportPrivateUsage]
    )

    stored = _stored_session_id(session_id)
    assert "\x00" not in stored
    assert _session_id_of(stored) == session_id
