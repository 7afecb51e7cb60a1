"""A real PostgreSQL server for the PostgreSQL tests, one per session, and a fresh database per test.

The server comes from ``agent_stores.testing.servers.postgresql`` (URL from the environment →
a container when an image is named → Debian's binaries in a temp dir → skip, or fail when
``AGENT_STORES_REQUIRE`` names ``postgresql``). Every test starts on a database holding none of
our rows: each test process's own database, emptied before the test (``postgresql_url``), or,
for tests of the schema itself, a new one made from ``template0`` and dropped afterwards
(``fresh_postgresql_url``, where the migrations run from nothing).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any
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
def fresh_postgresql_url(postgresql: Server) -> Iterator[str]:
    """The URL of a new, empty database on the session's server (no schema yet), dropped after the test."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgresql.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')  # pyright: ignore[reportArgumentType]
    try:
        yield database_url(postgresql.url, name)
    finally:
        with psycopg.connect(postgresql.url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # pyright: ignore[reportArgumentType]


@pytest.fixture(scope="session")
def _spare_database(postgresql: Server) -> Iterator[tuple[psycopg.Connection[Any], str]]:
    """One database per test process, reused by every test that needs none of our rows (see below)."""
    name = f"t_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgresql.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')  # pyright: ignore[reportArgumentType]
    url = database_url(postgresql.url, name)
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("SET lock_timeout = '10s'")
        yield connection, url


@pytest.fixture
def postgresql_url(_spare_database: tuple[psycopg.Connection[Any], str]) -> str:
    """The URL of a database holding none of our rows: this process's database, every table of ours emptied.

    Emptying (one ``TRUNCATE``) instead of a database made and dropped per test saves half a second a
    test; the schema stays, as a deployed one does. Tests of the schema itself (first use,
    migrations, ``must_exist``) take :func:`fresh_postgresql_url`.
    """
    connection, url = _spare_database
    tables = [
        row[0]
        for row in connection.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
            "AND tablename LIKE 'agent\\_stores\\_%' AND tablename <> 'agent_stores_migrations'"
        ).fetchall()
    ]
    if tables:
        connection.execute(f"TRUNCATE {', '.join(f'{t}' for t in tables)} CASCADE")  # pyright: ignore[reportArgumentType]
    return url


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
