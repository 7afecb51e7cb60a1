"""A conditional write whose answer is lost is stored exactly once and reported as done (issue 17, defect 2).

Against SeaweedFS and moto: the server stores the object, the answer is dropped, botocore retries
and the retry meets the object it wrote (412). Nothing may be doubled and no false error raised.
"""

from __future__ import annotations

import pytest
from agent_framework import Message

from agent_stores.s3 import S3AgentFileStore, S3HistoryProvider, S3ObjectDriver
from s3_faults import conditional, drop_answers
from s3_support import S3Target

pytestmark = pytest.mark.asyncio


def _driver(s3: S3Target) -> tuple[S3ObjectDriver, object]:
    client = s3.client()
    return S3ObjectDriver(client, s3.bucket, owns_client=True, **s3.driver_options), client


async def test_import_after_a_lost_answer_stores_each_message_once(s3: S3Target, s3_prefix: str) -> None:
    driver, client = _driver(s3)
    history = S3HistoryProvider(driver, prefix=s3_prefix)
    try:
        dropped = drop_answers(client, "PutObject", when=conditional)
        await history.import_messages("s1", [Message(role="user", contents=[f"m{i}"]) for i in range(3)])
        assert dropped, "the fault was not injected"
        stored = await history.get_messages("s1")
        assert [m.text for m in stored] == ["m0", "m1", "m2"]
        # A message without an id, saved once, is stored once.
        drop_answers(client, "PutObject", when=conditional)
        await history.save_messages("s1", [Message(role="user", contents=["again"])])
        assert [m.text for m in await history.get_messages("s1")] == ["m0", "m1", "m2", "again"]
    finally:
        await history.aclose()
        await driver.aclose()


async def test_exclusive_create_after_a_lost_answer_succeeds(s3: S3Target, s3_prefix: str) -> None:
    driver, client = _driver(s3)
    files = S3AgentFileStore(driver, prefix=s3_prefix)
    try:
        dropped = drop_answers(client, "PutObject", when=conditional)
        await files.write("notes/a.md", "hello", overwrite=False)
        assert dropped, "the fault was not injected"
        assert await files.read("notes/a.md") == "hello"
        with pytest.raises(FileExistsError):
            await files.write("notes/a.md", "other", overwrite=False)  # a real conflict still is one
        # Compare-and-set (If-Match) with a lost answer is also our own write.
        etag = await driver.put(f"{s3_prefix}/cas", b"v1")
        drop_answers(client, "PutObject", when=conditional)
        await driver.put(f"{s3_prefix}/cas", b"v2", if_version=etag)
        stored = await driver.get(f"{s3_prefix}/cas")
        assert stored is not None and stored.data == b"v2"
    finally:
        await files.aclose()
        await driver.aclose()
