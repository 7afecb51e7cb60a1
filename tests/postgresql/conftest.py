"""A real PostgreSQL server for the PostgreSQL tests, one per session, and a fresh database per test.

The server comes from ``agent_stores.testing.servers.postgresql`` (URL from the environment →
a container when an image is named → Debian's binaries in a temp dir → skip, or fail when
``AGENT_STORES_REQUIRE`` names ``postgresql``). Every test gets a database of its own, made from
``template0`` and dropped afterwards, so tests share the server without seeing each other's rows
and every test starts on an empty schema (the migrations run in it).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import psycopg
import pytest

from agent_stores.testing.servers import Server, ServerUnavailable
from agent_stores.testing.servers.postgresql import postgresql_server
from postgresql_support import database_url


@pytest.fixture(scope="session")
def postgresql() -> Iterator[Server]:
    with postgresql_server() as server:
        yield server


@pytest.fixture
def postgresql_url(postgresql: Server) -> Iterator[str]:
    """The URL of a new, empty database on the session's server, dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgresql.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')  # pyright: ignore[reportArgumentType]
    try:
        yield database_url(postgresql.url, name)
    finally:
        with psycopg.connect(postgresql.url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # pyright: ignore[reportArgumentType]


@pytest.fixture(scope="session")
def pooler(postgresql: Server) -> Iterator[Server]:
    """PgBouncer in transaction mode in front of the session's server (skip unless installed, or required)."""
    from agent_stores.testing.servers import announce, is_required
    from agent_stores.testing.servers.postgresql import pgbouncer

    try:
        with pgbouncer(postgresql) as server:
            announce(str(server))
            yield server
    except ServerUnavailable as err:
        if is_required("pgbouncer"):
            pytest.fail(f"{err} — and AGENT_STORES_REQUIRE requires pgbouncer", pytrace=False)
        pytest.skip(str(err))


@pytest.fixture
def pooled_url(pooler: Server, postgresql_url: str) -> str:
    """The test's new database, reached through PgBouncer in transaction mode."""
    return database_url(pooler.url, urlsplit(postgresql_url).path.lstrip("/"))
