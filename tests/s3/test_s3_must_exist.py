"""S3 with ``must_exist``: a missing bucket is ``StoreNotFoundError`` and never created, even with ``create_bucket``."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

import pytest
from botocore.exceptions import ClientError

from agent_stores.core import StoreNotFoundError, open_stores
from s3_support import S3Target


def _missing_bucket_url(s3: S3Target, **query: str) -> tuple[str, str]:
    bucket = f"agent-stores-missing-{uuid.uuid4().hex[:8]}"
    return bucket, s3.url("p", **query).replace(f"s3://{s3.bucket}/", f"s3://{bucket}/", 1)


@pytest.mark.asyncio
async def test_a_missing_bucket_is_not_created_with_must_exist(
    s3: S3Target, reads_not_found: Callable[..., Awaitable[None]]
) -> None:
    bucket, url = _missing_bucket_url(s3, create_bucket="true")
    await reads_not_found(url, bucket, session=s3.session())
    client = s3.client()
    try:
        with pytest.raises(ClientError):
            client.head_bucket(Bucket=bucket)
    finally:
        client.close()


@pytest.mark.asyncio
async def test_a_missing_bucket_is_store_not_found_without_must_exist_too(s3: S3Target) -> None:
    bucket, url = _missing_bucket_url(s3)
    async with open_stores(url, session=s3.session()) as stores:
        with pytest.raises(StoreNotFoundError, match=bucket):
            await stores.session_store().get("s")


@pytest.mark.asyncio
async def test_a_bucket_that_exists_reads_and_writes_as_usual(s3: S3Target, s3_prefix: str) -> None:
    async with open_stores(s3.url(s3_prefix), session=s3.session(), must_exist=True) as stores:
        assert await stores.session_store().get("s") is None
        await stores.file_store().write("a.md", "x")
        assert await stores.file_store().read("a.md") == "x"
