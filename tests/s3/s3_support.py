"""What the S3 test modules import: :class:`S3Target`, one bucket on one server and how to open stores on it.

The fixtures that provide targets (``seaweedfs``, ``moto_s3``, ``s3``, ``s3_prefix``) live in this
folder's ``conftest.py``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

import boto3
import pytest

from agent_stores.s3 import S3AgentFileStore, S3ObjectDriver, S3SessionStore
from agent_stores.testing.servers.s3 import S3Endpoint

__all__ = ["HEAVY", "S3Target", "every_store_suite"]

HEAVY = os.environ.get("AGENT_STORES_HEAVY", "").strip().lower() in {"1", "true", "yes", "on"}

#: For a store suite on a second S3 dialect (moto's server, s3fs). What differs between dialects
#: is the object driver (conditional writes, listing, error codes): its driver suites run on every
#: dialect in every run. The store suites above it are the core's code over that driver and run on
#: SeaweedFS every run; on the other dialects they run with ``AGENT_STORES_HEAVY=1``.
every_store_suite = pytest.mark.skipif(
    not HEAVY, reason="store suite on a second S3 dialect: set AGENT_STORES_HEAVY=1 (its driver suite runs always)"
)

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

    def client(self, *, skimmed: bool = True) -> Any:
        """A new client as the stores make their own (``client_config``, lean listings and answers).

        ``skimmed=False``: without the lean answers (``lean_client``), as a client a user passes in.
        """
        from agent_stores.s3 import _connect

        location = _connect.S3Location(bucket=self.bucket, endpoint_url=self.endpoint.endpoint_url)
        config = _connect.client_config(location)
        with _connect._CLIENT_LOCK:  # pyright: ignore[reportPrivateUsage]
            client = self.session().client("s3", endpoint_url=self.endpoint.endpoint_url, config=config)  # pyright: ignore[reportUnknownMemberType]
        return _connect.lean_client(client) if skimmed else client

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

    def objects(self) -> S3ObjectDriver:
        """A new driver over this bucket, owning its own client (for driver-level suites)."""
        return S3ObjectDriver(self.client(), self.bucket, owns_client=True, **self.driver_options)

    def files(self, prefix: str, **options: Any) -> S3AgentFileStore:
        return S3AgentFileStore.from_url(self.url(prefix), session=self.session(), **options)

    def sessions(self, prefix: str, **options: Any) -> S3SessionStore:
        return S3SessionStore.from_url(self.url(prefix), session=self.session(), **options)
