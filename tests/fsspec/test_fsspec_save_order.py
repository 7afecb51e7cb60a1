"""Overlapping saves from one process to one session through one provider land in call order (local folder)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent_framework import Message
from fsspec.implementations.local import LocalFileSystem  # pyright: ignore[reportMissingTypeStubs]

from agent_stores.fsspec import FsspecHistoryProvider

pytestmark = pytest.mark.asyncio

ROUNDS = 30


async def test_save_b_started_a_tick_after_save_a_lands_after_it(tmp_path: Path) -> None:
    history = FsspecHistoryProvider(LocalFileSystem(), str(tmp_path / "history"))
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
