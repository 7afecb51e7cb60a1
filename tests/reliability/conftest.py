"""Fixtures of the reliability suite: one store URL per backend, on its real server.

``target`` runs a test once per backend: a SQLite file, Redis, MongoDB (or the nx-27017
stand-in, which the run's summary names), S3 on SeaweedFS, a local fsspec folder, and
PostgreSQL (a new database per test, made from ``template0``). Servers
come from ``agent_stores.testing.servers`` (URL from the environment → testcontainers → local
binary), one per run and worker; each test gets a fresh namespace on it (a new database file,
folder, key prefix or database). ``reliability_figures.record`` keeps what a test measured (see
``reliability_figures.py``).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from agent_stores.testing.servers import Server
from agent_stores.testing.servers.mongodb import mongodb_server
from agent_stores.testing.servers.postgresql import postgresql_server
from agent_stores.testing.servers.redis import redis_server
from agent_stores.testing.servers.s3 import provide_seaweedfs, s3_endpoint
from reliability_support import BACKENDS, Target, s3_url


@pytest.fixture(scope="session")
def redis_for_reliability() -> Iterator[Server]:
    with redis_server() as server:
        yield server


@pytest.fixture(scope="session")
def mongodb_for_reliability() -> Iterator[Server]:
    with mongodb_server() as server:
        yield server


@pytest.fixture(scope="session")
def seaweedfs_for_reliability() -> Iterator[tuple[Server, str]]:
    """SeaweedFS and a bucket of this run's own."""
    with provide_seaweedfs() as server:
        yield server, s3_endpoint(server).create_bucket("agent-stores-reliability")


@pytest.fixture(scope="session")
def postgresql_for_reliability() -> Iterator[Server]:
    with postgresql_server() as server:
        yield server


def _postgresql_database(server: Server, name: str) -> str:
    """A new empty database ``name`` on ``server``; its URL."""
    import psycopg

    with psycopg.connect(server.url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')  # pyright: ignore[reportArgumentType]
    return urlunsplit(urlsplit(server.url)._replace(path=f"/{name}"))


def _target(name: str, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Target:
    fresh = uuid.uuid4().hex[:12]
    if name == "sqlite":
        found = Target(name, f"sqlite:///{tmp_path}/agent.db")
    elif name == "fsspec":
        found = Target(name, f"file://{tmp_path}/stores")
    elif name == "redis":
        server: Server = request.getfixturevalue("redis_for_reliability")
        found = Target(name, f"{server.url}?key_prefix=r{fresh}:")
    elif name == "mongodb":
        server = request.getfixturevalue("mongodb_for_reliability")
        base, _, query = server.url.partition("?")  # a database of this test's own
        found = Target(name, f"{base.rsplit('/', 1)[0]}/r{fresh}" + (f"?{query}" if query else ""))
    elif name == "postgresql":
        server = request.getfixturevalue("postgresql_for_reliability")
        found = Target(name, _postgresql_database(server, f"r{fresh}"))
    else:
        server, bucket = request.getfixturevalue("seaweedfs_for_reliability")
        found = s3_url(server, bucket, f"r{fresh}")
    for key, value in found.env.items():
        monkeypatch.setenv(key, value)
    return found


@pytest.fixture(params=BACKENDS)
def target(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Target:
    """Each backend in turn, in a namespace of this test's own; its environment is set in this process too."""
    return _target(request.param, request, tmp_path, monkeypatch)


@pytest.fixture
def mongodb_target(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Target:
    """MongoDB alone, a database of this test's own."""
    return _target("mongodb", request, tmp_path, monkeypatch)


@pytest.fixture
def s3_target(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Target:
    """S3 (SeaweedFS) alone, a prefix of this test's own."""
    return _target("s3", request, tmp_path, monkeypatch)
