"""The two driver suites against the PostgreSQL drivers, each driver owning its own pool to one database."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_stores.core import OrderedPut, StoreConflictError
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


@pytest.mark.asyncio
async def test_put_in_order_is_one_statement_per_64_items(postgresql_url: str) -> None:
    """Two items are one statement (one round trip); 100 items two, and a refusal in the second keeps the first's."""
    database = PostgreSQLDatabase.from_url(postgresql_url)
    driver = PostgreSQLObjectDriver(database)
    prefix = f"in-order-{uuid.uuid4().hex}/"
    statements: list[str] = []
    fetch = database.fetch

    async def counted(sql: str, parameters: Any = ()) -> list[tuple[Any, ...]]:
        statements.append(sql)
        return await fetch(sql, parameters)

    database.fetch = counted  # pyright: ignore[reportAttributeAccessIssue]
    try:
        versions = await driver.put_in_order(
            [OrderedPut(f"{prefix}r", b"r", if_absent=True), OrderedPut(f"{prefix}e", b"e")]
        )
        assert len(statements) == 1
        assert [await driver.head(f"{prefix}r"), await driver.head(f"{prefix}e")] == versions
        await driver.put(f"{prefix}070", b"taken")
        statements.clear()
        items = [OrderedPut(f"{prefix}{n:03d}", b"x", if_absent=True) for n in range(100)]
        with pytest.raises(StoreConflictError):
            await driver.put_in_order(items)
        assert len(statements) == 2
        written = (await driver.list(prefix, delimiter=None)).keys
        assert written == sorted([f"{prefix}e", f"{prefix}r", *(item.key for item in items[:71])])
    finally:
        await driver.aclose()
