"""Stores for the operations tests (stats, sweep): SQLite, Redis (log driver) and SeaweedFS S3 (object-store log).

``ops_url`` names a fresh, empty store of each, by URL (what the command line takes);
``open_ops`` opens it. Servers start once per run from ``agent_stores.testing.servers``.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_stores.testing.servers import Server
from agent_stores.testing.servers.redis import redis_server
from agent_stores.testing.servers.s3 import S3Endpoint, provide_seaweedfs, s3_endpoint


@pytest.fixture(scope="session")
def ops_redis() -> Iterator[Server]:
    with redis_server() as server:
        yield server


@pytest.fixture(scope="session")
def ops_bucket() -> Iterator[tuple[S3Endpoint, str]]:
    with provide_seaweedfs() as server:
        endpoint = s3_endpoint(server)
        yield endpoint, endpoint.create_bucket("ops")


@pytest.fixture(params=["sqlite", "redis", "s3"])
def ops_url(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The URL of a fresh, empty store on SQLite, Redis or SeaweedFS."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'ops.db'}"
    if request.param == "redis":
        server: Server = request.getfixturevalue("ops_redis")
        separator = "&" if "?" in server.url else "?"
        return f"{server.url}{separator}key_prefix=ops{uuid.uuid4().hex[:10]}:"
    endpoint, bucket = request.getfixturevalue("ops_bucket")
    monkeypatch.setenv("AWS_DEFAULT_REGION", endpoint.region)
    if endpoint.access_key is not None:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", endpoint.access_key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", endpoint.secret_key or "")
    return (
        f"s3://{bucket}/ops-{uuid.uuid4().hex[:10]}?endpoint_url={endpoint.endpoint_url}"
        f"&region={endpoint.region}&ordered_listing=false&path_keys=true"
    )
