"""CLI fixtures: one SeaweedFS bucket for the run's command-line tests (:class:`Bucket`, in ``cli_support.py``).

The CLI opens stores from URLs, so credentials reach it through the standard AWS environment
variables (set per test with ``monkeypatch``), as they would for a user.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest

from agent_stores.testing.servers.s3 import provide_seaweedfs, s3_endpoint
from cli_support import Bucket


@pytest.fixture(scope="session")
def seaweedfs_bucket() -> Iterator[Bucket]:
    with provide_seaweedfs() as server:
        endpoint = s3_endpoint(server)
        yield Bucket(endpoint, endpoint.create_bucket("cli"))


@pytest.fixture
def bucket(seaweedfs_bucket: Bucket, monkeypatch: pytest.MonkeyPatch) -> Bucket:
    """The run's bucket, with its credentials in this test's environment (where the CLI finds them)."""
    endpoint = seaweedfs_bucket.endpoint
    monkeypatch.setenv("AWS_DEFAULT_REGION", endpoint.region)
    if endpoint.access_key is not None:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", endpoint.access_key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", endpoint.secret_key or "")
    return seaweedfs_bucket


@pytest.fixture
def s3_prefix() -> str:
    """A prefix no other test uses."""
    return f"cli-{uuid.uuid4().hex[:12]}"
