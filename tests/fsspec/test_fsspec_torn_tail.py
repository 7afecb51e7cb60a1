"""A torn newest segment (a power loss with ``fsync=False``) never bricks a session on a local folder.

The write of a segment can reach the directory before its bytes reach the disk: after a power
loss the newest segment file is empty or cut short. Reads and saves must go on, the torn append
(never durable) is dropped, and the repair is reported through logging.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from agent_framework import Message
from fsspec.implementations.local import LocalFileSystem  # pyright: ignore[reportMissingTypeStubs]

from agent_stores.fsspec import FsspecHistoryProvider

pytestmark = pytest.mark.asyncio


def _segments(root: Path) -> list[Path]:
    """The session's segment files, newest first (names are inverted sequence numbers)."""
    return sorted((p for p in root.rglob("s*") if p.is_file()), key=lambda p: p.name)


@pytest.mark.parametrize("torn", ["empty", "cut-short", "two-empty"])
async def test_a_torn_newest_segment_is_repaired_and_the_session_goes_on(
    tmp_path: Path, torn: str, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "history"
    history = FsspecHistoryProvider(LocalFileSystem(), str(root))
    for text in ["one", "two", "three", "four"]:
        await history.save_messages("s1", [Message(role="user", contents=[text])])
    await history.aclose()
    newest = _segments(root)
    assert len(newest) == 4
    if torn == "empty":
        newest[0].write_bytes(b"")
    elif torn == "cut-short":
        newest[0].write_bytes(newest[0].read_bytes()[:7])
    else:
        newest[0].write_bytes(b"")
        newest[1].write_bytes(b"")
    kept = ["one", "two"] if torn == "two-empty" else ["one", "two", "three"]

    reopened = FsspecHistoryProvider(LocalFileSystem(), str(root))
    try:
        with caplog.at_level(logging.WARNING, logger="agent_stores.objectlog"):
            assert [m.text for m in await reopened.get_messages("s1")] == kept
        assert any("torn" in r.getMessage() for r in caplog.records), "the repair was not reported"
        assert await reopened.count_messages("s1") == len(kept)
        await reopened.save_messages("s1", [Message(role="user", contents=["five"])])
        assert [m.text for m in await reopened.get_messages("s1")] == [*kept, "five"]
        assert await reopened.delete_session("s1") is True
        assert await reopened.get_messages("s1") == []
    finally:
        await reopened.aclose()


async def test_a_torn_tail_file_or_a_torn_segment_under_a_tail_never_changes_a_window(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Tail files (copies of the newest records) cut short by a power loss are dropped; the segments decide."""
    root = tmp_path / "history"
    history = FsspecHistoryProvider(LocalFileSystem(), str(root), max_messages=12)
    texts = [f"m{i}" for i in range(30)]
    for text in texts:
        await history.save_messages("s1", [Message(role="user", contents=[text])])
    assert [m.text for m in await history.get_messages("s1")] == texts[-12:]  # 12 segments read: writes a tail
    await history.aclose()
    (tail,) = [p for p in root.rglob("t*") if p.is_file()]
    tail.write_bytes(tail.read_bytes()[:5])

    reopened = FsspecHistoryProvider(LocalFileSystem(), str(root), max_messages=12)
    try:
        with caplog.at_level(logging.WARNING, logger="agent_stores.objectlog"):
            assert [m.text for m in await reopened.get_messages("s1")] == texts[-12:]
            assert [m.text for m in await reopened.get_messages("s1")] == texts[-12:]
        assert any("tail" in r.getMessage() for r in caplog.records), "the torn tail was not reported"
        assert [p for p in root.rglob("t*") if p.is_file()], "no fresh tail was written"
        _segments(root)[0].write_bytes(b"")  # the newest append, already copied into the tail, torn
        assert [m.text for m in await reopened.get_messages("s1")] == texts[-13:-1]
        assert [m.text for m in await reopened.get_messages("s1")] == texts[-13:-1]
        await reopened.save_messages("s1", [Message(role="user", contents=["next"])])
        assert [m.text for m in await reopened.get_messages("s1")] == [*texts[-12:-1], "next"]
        assert await reopened.delete_session("s1") is True
        assert not [p for p in root.rglob("t*") if p.is_file()], "a deleted session kept a tail"
    finally:
        await reopened.aclose()
