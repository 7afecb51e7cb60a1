"""The checkpoint and todo suites on S3 through ``open_stores(url)``: SeaweedFS; moto with ``AGENT_STORES_HEAVY=1``.

Every store a factory opens in one clause has its own boto3 client (as separate processes
would), under a URL prefix of the clause's own, so the prefix of the URL is also checked.
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from agent_stores.core.checkpoints import ObjectCheckpointStorage
from agent_stores.s3 import S3ObjectDriver
from agent_stores.s3._listing import LISTED_KEYS
from agent_stores.testing import (
    FakeClock,
    ObjectCheckpointStorageConformance,
    ObjectTodoStoreConformance,
    checkpoint_storage_at,
    todo_store_at,
)
from agent_stores.testing.checkpoints import make_checkpoint
from s3_support import S3Target, every_store_suite


class _Checkpoints(ObjectCheckpointStorageConformance):
    target_fixture = ""
    fake_clock = True

    @pytest.fixture
    def checkpoint_storage_factory(self, request: pytest.FixtureRequest, s3_prefix: str, clock: FakeClock) -> Any:
        target: S3Target = request.getfixturevalue(self.target_fixture)
        backend = {"session": target.session()}
        return lambda **options: checkpoint_storage_at(target.url(s3_prefix), backend, clock=clock, **options)


class _Todos(ObjectTodoStoreConformance):
    target_fixture = ""

    @pytest.fixture
    def todo_store_factory(self, request: pytest.FixtureRequest, s3_prefix: str) -> Any:
        target: S3Target = request.getfixturevalue(self.target_fixture)
        backend = {"session": target.session()}
        return lambda **options: todo_store_at(target.url(s3_prefix), backend, **options)


class TestSeaweedFSCheckpoints(_Checkpoints):
    target_fixture = "seaweedfs"


class TestSeaweedFSTodos(_Todos):
    target_fixture = "seaweedfs"


@every_store_suite
class TestMotoCheckpoints(_Checkpoints):
    target_fixture = "moto_s3"


@every_store_suite
class TestMotoTodos(_Todos):
    target_fixture = "moto_s3"


@pytest.mark.asyncio
async def test_purge_lists_the_records_once_on_a_server_listing_out_of_byte_order(seaweedfs: S3Target) -> None:
    # SeaweedFS lists in path order, so a listing resumed after a key reads every key under the
    # prefix again: resumed after each page of removals, a purge read ~N²/128 keys.
    listed: list[int] = []

    def count(parsed: dict[str, Any], **_: Any) -> None:
        listed.append(len(parsed.get(LISTED_KEYS) or parsed.get("Contents", ())))

    client = seaweedfs.client()
    client.meta.events.register("after-call.s3.ListObjectsV2", count)
    driver = S3ObjectDriver(client, seaweedfs.bucket, owns_client=True, **seaweedfs.driver_options)
    clock = FakeClock()
    prefix = f"purge-{uuid.uuid4().hex[:12]}/"
    short = ObjectCheckpointStorage(driver, prefix=prefix, ttl=10, clock=clock, owns_driver=True)
    lasting = ObjectCheckpointStorage(driver, prefix=prefix, ttl=1_000, clock=clock)
    async with short:
        sem = asyncio.Semaphore(16)

        async def save(storage: ObjectCheckpointStorage, at: int) -> str:
            async with sem:
                return await storage.save(make_checkpoint("wf", at=at))

        await asyncio.gather(*(save(short, i) for i in range(200)))
        kept = await asyncio.gather(*(save(lasting, 1_000 + i) for i in range(10)))
        clock.advance(11)
        listed.clear()
        assert await short.purge_expired() == 200
        assert len(listed) == 1 and listed[0] == 210  # one request: each record listed once
        assert sorted(await short.list_checkpoint_ids(workflow_name="wf")) == sorted(kept)
