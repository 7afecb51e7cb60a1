"""Shared fixtures of the MongoDB tests: one server per run, fresh collections per test.

Registered as a plugin by ``tests/conftest.py``, so every test module can request the fixtures.
The server comes from ``agent_stores.testing.servers.mongodb``: ``$AGENT_STORES_MONGODB_URL``,
else testcontainers ``mongo:7``, else the nx-27017 stand-in, which is NOT MongoDB; the run's
summary says which, and so does every test id's class through :data:`SERVER_KIND`.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from agent_stores.testing.servers import Server, announce
from agent_stores.testing.servers.mongodb import describe, is_stand_in, mongodb_server

__all__ = [
    "SERVER",
    "client_options",
    "collection_prefix",
    "mongodb",
    "stand_in",
    "stand_in_divergences",
    "url_with_database",
]

#: Client options of every store the tests open: fail fast when the server is gone.
CLIENT_OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000}


def client_options() -> dict[str, Any]:
    return dict(CLIENT_OPTIONS)


def url_with_database(url: str, database: str) -> str:
    """``url`` naming ``database`` instead of its own (query options kept)."""
    scheme, _, rest = url.partition("://")
    hosts, _, tail = rest.partition("/")
    _, question, query = tail.partition("?")
    return f"{scheme}://{hosts}/{database}" + (f"?{query}" if question else "")


@pytest.fixture(scope="session")
def mongodb() -> Iterator[Server]:
    """The MongoDB server of this run (started once, stopped at the end)."""
    with mongodb_server() as server:
        if is_stand_in(server.url):
            announce(
                "mongodb: the nx-27017 stand-in answered. It is NOT MongoDB; clauses it cannot pass run as "
                "declared divergences of the stand-in (strict xfail)."
            )
        else:
            announce(f"mongodb: the server answers as {describe(server.url)}")
        yield server


#: Filled once per run by :func:`stand_in`: whether the server is the nx-27017 stand-in.
SERVER: dict[str, bool] = {}


@pytest.fixture(scope="session")
def stand_in(mongodb: Server) -> bool:
    """Whether this run's server is the nx-27017 stand-in (then its declared divergences apply)."""
    if "stand_in" not in SERVER:
        SERVER["stand_in"] = is_stand_in(mongodb.url)
    return SERVER["stand_in"]


def stand_in_divergences(divergences: dict[str, str]) -> dict[str, str]:
    """``divergences`` when this run's server is the stand-in, else none (real MongoDB must pass every clause).

    Read by the conformance classes' ``divergences`` property, after the session fixture
    :func:`stand_in` ran (session-scoped fixtures are set up before the clause rules).
    """
    return divergences if SERVER.get("stand_in") else {}


@pytest.fixture
def collection_prefix() -> str:
    """A collection prefix of this test's own: nothing else in the database is touched."""
    return f"t{uuid.uuid4().hex[:10]}_"
