"""What the reliability tests import: :class:`Target`, the backends, and the heavy flag."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from agent_stores.testing.servers import Server
from agent_stores.testing.servers.s3 import s3_endpoint

BACKENDS = ["sqlite", "redis", "mongodb", "s3", "fsspec", "postgresql"]

#: ``1`` runs the heavy variants (more rounds, more processes).
HEAVY = os.environ.get("AGENT_STORES_HEAVY", "").strip().lower() in {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Target:
    """One backend's store URL for one test, and the environment a process needs to open it."""

    backend: str
    url: str
    env: dict[str, str] = field(default_factory=dict[str, str])


def s3_url(server: Server, bucket: str, prefix: str) -> Target:
    """The ``s3://`` URL of ``bucket/prefix`` on a SeaweedFS ``server``, credentials in the environment."""
    endpoint = s3_endpoint(server)
    query = f"endpoint_url={endpoint.endpoint_url}&region={endpoint.region}&ordered_listing=false&path_keys=true"
    env = {"AWS_ACCESS_KEY_ID": endpoint.access_key or "", "AWS_SECRET_ACCESS_KEY": endpoint.secret_key or ""}
    return Target("s3", f"s3://{bucket}/{prefix}?{query}", env)
