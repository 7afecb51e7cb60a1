"""S3 fixtures: one SeaweedFS and one moto server per run, one bucket on each, a fresh prefix per test.

Registered from ``conftest.py`` (``pytest_plugins``). Which server each run used is printed in
the run's summary (``provide_server`` announces it).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from agent_stores.s3 import S3AgentFileStore, S3SessionStore
from agent_stores.testing.servers import Server
from agent_stores.testing.servers.s3 import S3Endpoint, provide_moto, provide_seaweedfs, s3_endpoint

_sessions: dict[S3Endpoint, boto3.Session] = {}


def _session(endpoint: S3Endpoint) -> boto3.Session:
    if endpoint not in _sessions:
        _sessions[endpoint] = boto3.Session(**endpoint.client_kwargs())
    return _sessions[endpoint]


@dataclass(frozen=True)
class S3Target:
    """One bucket on one server, and how to open stores on it."""

    name: str
    endpoint: S3Endpoint
    bucket: str
    #: What the server needs declared (``S3ObjectDriver`` options), also passed in every URL.
    driver_options: dict[str, Any] = field(default_factory=dict[str, Any])

    def session(self) -> boto3.Session:
        """This target's boto3 session, shared (making one costs about 0.2 s); clients are made under a lock."""
        return _session(self.endpoint)

    def client(self) -> Any:
        from agent_stores.s3 import _connect

        with _connect._CLIENT_LOCK:  # pyright: ignore[reportPrivateUsage]
            return self.session().client("s3", endpoint_url=self.endpoint.endpoint_url)  # pyright: ignore[reportUnknownMemberType]

    def url(self, prefix: str = "", **query: str) -> str:
        declared = {k: str(v).lower() for k, v in self.driver_options.items()}
        options = {
            "endpoint_url": self.endpoint.endpoint_url or "",
            "region": self.endpoint.region,
            **declared,
            **query,
        }
        text = "&".join(f"{k}={v}" for k, v in options.items() if v)
        return f"s3://{self.bucket}/{prefix}?{text}"

    def files(self, prefix: str, **options: Any) -> S3AgentFileStore:
        return S3AgentFileStore.from_url(self.url(prefix), session=self.session(), **options)

    def sessions(self, prefix: str, **options: Any) -> S3SessionStore:
        return S3SessionStore.from_url(self.url(prefix), session=self.session(), **options)


def _target(server: Server, **driver_options: Any) -> Iterator[S3Target]:
    endpoint = s3_endpoint(server)
    target = S3Target(server.store, endpoint, f"agent-stores-test-{uuid.uuid4().hex[:12]}", driver_options)
    client = target.client()
    try:
        client.create_bucket(Bucket=target.bucket)
        yield target
    finally:
        client.close()


@pytest.fixture(scope="session")
def seaweedfs() -> Iterator[S3Target]:
    """A bucket on SeaweedFS (``s3`` in ``AGENT_STORES_REQUIRE``), which lists in path-component order."""
    with provide_seaweedfs() as server:
        yield from _target(server, ordered_listing=False)


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[S3Target]:
    """A bucket on moto's server (``s3-moto`` in ``AGENT_STORES_REQUIRE``)."""
    with provide_moto() as server:
        yield from _target(server)


@pytest.fixture(params=["seaweedfs", "moto_s3"])
def s3(request: pytest.FixtureRequest) -> S3Target:
    """Each S3 server in turn."""
    return request.getfixturevalue(request.param)


@pytest.fixture
def s3_prefix() -> str:
    """A prefix no other test uses."""
    return f"t-{uuid.uuid4().hex[:12]}"
