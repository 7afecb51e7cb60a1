"""MongoDB fixtures: one server per run, fresh collections per test.

The server comes from ``agent_stores.testing.servers.mongodb``: ``$AGENT_STORES_MONGODB_URL``,
else testcontainers ``mongo:7``, else the nx-27017 stand-in, which is NOT MongoDB; the run's
summary says which. Helpers the test modules import (client options, URLs, the stand-in's
divergences) are in ``mongodb_support.py`` beside this file.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from agent_stores.testing.servers import Server, announce
from agent_stores.testing.servers.mongodb import describe, is_stand_in, mongodb_server
from mongodb_support import SERVER


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


@pytest.fixture(scope="session")
def stand_in(mongodb: Server) -> bool:
    """Whether this run's server is the nx-27017 stand-in (then its declared divergences apply)."""
    if "stand_in" not in SERVER:
        SERVER["stand_in"] = is_stand_in(mongodb.url)
    return SERVER["stand_in"]


@pytest.fixture
def collection_prefix() -> str:
    """A collection prefix of this test's own: nothing else in the database is touched."""
    return f"t{uuid.uuid4().hex[:10]}_"
