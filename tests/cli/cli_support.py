"""What the CLI test modules import: :class:`Bucket`, the run's SeaweedFS bucket (fixtures in ``conftest.py``)."""

from __future__ import annotations

from dataclasses import dataclass

from agent_stores.testing.servers.s3 import S3Endpoint

__all__ = ["Bucket"]


@dataclass(frozen=True)
class Bucket:
    """A bucket on the run's SeaweedFS, and how to name stores in it (and beside it) by URL."""

    endpoint: S3Endpoint
    name: str

    def url(self, prefix: str, *, bucket: str | None = None) -> str:
        """The ``s3://`` URL of ``prefix`` in this bucket (or in ``bucket``, which may not exist)."""
        return (
            f"s3://{bucket or self.name}/{prefix}?endpoint_url={self.endpoint.endpoint_url}"
            f"&region={self.endpoint.region}&ordered_listing=false&path_keys=true"
        )

    def exists(self, bucket: str) -> bool:
        """Whether ``bucket`` exists on the server (one ``HeadBucket``)."""
        import boto3
        from botocore.exceptions import ClientError

        session = boto3.Session(**self.endpoint.client_kwargs())
        client = session.client("s3", endpoint_url=self.endpoint.endpoint_url)  # pyright: ignore[reportUnknownMemberType]
        try:
            client.head_bucket(Bucket=bucket)
        except ClientError:
            return False
        finally:
            client.close()
        return True
