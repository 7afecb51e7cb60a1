"""S3 fixtures: one SeaweedFS and one moto server per run, one bucket on each, a fresh prefix per test.

Which server each run used is printed in the run's summary (``provide_server`` announces it).
:class:`S3Target`, which test modules import, is in ``s3_support.py`` beside this file.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from agent_stores.testing.servers import Server
from agent_stores.testing.servers.s3 import provide_moto, provide_seaweedfs, s3_endpoint
from s3_support import S3Target, every_store_suite


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
    """A bucket on SeaweedFS (``s3`` in ``AGENT_STORES_REQUIRE``): keys are file paths, listed in component order."""
    with provide_seaweedfs() as server:
        yield from _target(server, ordered_listing=False, path_keys=True)


@pytest.fixture(scope="session")
def moto_s3() -> Iterator[S3Target]:
    """A bucket on moto's server (``s3-moto`` in ``AGENT_STORES_REQUIRE``)."""
    with provide_moto() as server:
        yield from _target(server)


@pytest.fixture(params=["seaweedfs", "moto_s3"])
def s3(request: pytest.FixtureRequest) -> S3Target:
    """Each S3 server in turn."""
    return request.getfixturevalue(request.param)


@pytest.fixture(params=["seaweedfs", pytest.param("moto_s3", marks=every_store_suite)])
def s3_stores(request: pytest.FixtureRequest) -> S3Target:
    """Each S3 server in turn for whole-store tests; moto's with ``AGENT_STORES_HEAVY=1`` (``every_store_suite``)."""
    return request.getfixturevalue(request.param)


@pytest.fixture
def s3_prefix() -> str:
    """A prefix no other test uses."""
    return f"t-{uuid.uuid4().hex[:12]}"
