"""Stores on every backend for the agent tests, and the scripted OpenAI-compatible server.

Servers start once per run through ``agent_stores.testing.servers`` (the same providers as the
backend folders' fixtures, which pytest does not share across folders), only when a test asks
for that backend. Each test gets a store of its own: a fresh file, database, bucket prefix or
folder, so tests never see each other's sessions.
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
from agent_stores.testing.servers.s3 import S3Endpoint, provide_seaweedfs, s3_endpoint
from agents_support import BACKENDS, StoreTarget


@pytest.fixture(scope="session")
def agents_redis() -> Iterator[Server]:
    with redis_server() as server:
        yield server


@pytest.fixture(scope="session")
def agents_mongodb() -> Iterator[Server]:
    with mongodb_server() as server:
        yield server


@pytest.fixture(scope="session")
def agents_postgresql() -> Iterator[Server]:
    with postgresql_server() as server:
        yield server


@pytest.fixture(scope="session")
def agents_s3() -> Iterator[tuple[S3Endpoint, str]]:
    """A SeaweedFS bucket: its endpoint and name."""
    with provide_seaweedfs() as server:
        endpoint = s3_endpoint(server)
        yield endpoint, endpoint.create_bucket("agents")


def make_target(backend: str, request: pytest.FixtureRequest, folder: Path) -> StoreTarget:
    """A fresh store on ``backend``; servers come from the session fixtures above."""
    unique = uuid.uuid4().hex[:12]
    if backend == "sqlite":
        return StoreTarget(backend, f"sqlite:///{folder}/agents-{unique}.db")
    if backend == "fsspec":
        return StoreTarget(backend, f"file://{folder}/agents-{unique}")
    if backend == "redis":
        server: Server = request.getfixturevalue("agents_redis")
        return StoreTarget(backend, f"{server.url.rstrip('/')}?key_prefix=agents-{unique}:")
    if backend == "mongodb":
        server = request.getfixturevalue("agents_mongodb")
        scheme, _, rest = server.url.partition("://")
        hosts, _, tail = rest.partition("/")
        _, question, query = tail.partition("?")
        return StoreTarget(backend, f"{scheme}://{hosts}/agents_{unique}" + (f"?{query}" if question else ""))
    if backend == "postgresql":
        import psycopg

        server = request.getfixturevalue("agents_postgresql")
        name = f"agents_{unique}"
        with psycopg.connect(server.url, autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')  # pyright: ignore[reportArgumentType]
        return StoreTarget(backend, urlunsplit(urlsplit(server.url)._replace(path=f"/{name}")))
    if backend == "s3":
        import boto3

        endpoint, bucket = request.getfixturevalue("agents_s3")
        url = (
            f"s3://{bucket}/agents-{unique}?endpoint_url={endpoint.endpoint_url}&region={endpoint.region}"
            "&ordered_listing=false&path_keys=true"
        )
        env = {"AWS_DEFAULT_REGION": endpoint.region}
        if endpoint.access_key is not None:
            env |= {"AWS_ACCESS_KEY_ID": endpoint.access_key, "AWS_SECRET_ACCESS_KEY": endpoint.secret_key or ""}
        return StoreTarget(backend, url, env, {"session": boto3.Session(**endpoint.client_kwargs())})
    raise ValueError(backend)


@pytest.fixture(params=BACKENDS)
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> StoreTarget:
    """A fresh store on each backend in turn."""
    return make_target(request.param, request, tmp_path)


# (source, target) of the migration tests: SQL to key-value, object store to folder, document to SQL,
# embedded SQL to a SQL server and back out of it to key-value.
MIGRATIONS = [
    ("sqlite", "redis"),
    ("s3", "fsspec"),
    ("mongodb", "sqlite"),
    ("sqlite", "postgresql"),
    ("postgresql", "redis"),
]


@pytest.fixture(params=MIGRATIONS, ids=[f"{a}-to-{b}" for a, b in MIGRATIONS])
def store_pair(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[StoreTarget, StoreTarget]:
    """A fresh source and target store on two different backends."""
    source, target = request.param
    return make_target(source, request, tmp_path), make_target(target, request, tmp_path)
