"""Overlapping saves from one process to one session through one provider land in call order (SeaweedFS, moto)."""

from __future__ import annotations

import asyncio

import pytest
from agent_framework import Message

from agent_stores.s3 import S3HistoryProvider
from s3_support import S3Target

pytestmark = pytest.mark.asyncio

ROUNDS = 30


async def test_save_b_started_a_tick_after_save_a_lands_after_it(s3: S3Target, s3_prefix: str) -> None:
    driver = s3.objects()
    history = S3HistoryProvider(driver, prefix=s3_prefix)
    try:
        for i in range(ROUNDS):
            first = asyncio.create_task(history.save_messages("s1", [Message(role="user", contents=[f"A{i}"])]))
            await asyncio.sleep(0)
            second = asyncio.create_task(history.save_messages("s1", [Message(role="user", contents=[f"B{i}"])]))
            await asyncio.gather(first, second)
        stored = [m.text for m in await history.get_messages("s1")]
        assert stored == [t for i in range(ROUNDS) for t in (f"A{i}", f"B{i}")]
    finally:
        await history.aclose()
        await driver.aclose()
