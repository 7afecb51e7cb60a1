"""Limits: a 10 MB message and a 10 MB file round-trip on every backend; what a backend cannot hold is refused first.

MongoDB keeps one document per history batch and per file, at most 16 MiB: a larger save or
file is a ``ValueError`` before the write, and what was stored before is unchanged. S3 keys are
at most 1,024 bytes: a longer file path is a ``ValueError`` before any request. The limits of
every backend are in ``docs/reliability.md``.
"""

from __future__ import annotations

import pytest
from agent_framework import AgentSession, Message

from agent_stores.core import open_stores
from reliability_figures import record
from reliability_support import Target

pytestmark = pytest.mark.asyncio

TEN_MB = 10 * 1000 * 1000
#: MongoDB's document limit (16 MiB), plus a margin.
OVER_MONGODB = 16 * 1024 * 1024 + 1024


def _text(size: int, seed: str) -> str:
    """``size`` characters of text, not one repeated character (so nothing compresses it away), ending in non-ASCII."""
    block = f"{seed} the quick brown fox jumps over the lazy dog 0123456789\n"
    return (block * (size // len(block) + 1))[: size - 2] + "é."


async def test_ten_megabytes_round_trip(target: Target) -> None:
    """A 10 MB message, a 10 MB file and a 10 MB session state are stored and read back exactly."""
    message_text, file_text, state_text = _text(TEN_MB, "message"), _text(TEN_MB, "file"), _text(TEN_MB, "state")
    async with open_stores(target.url) as stores:
        history, files, sessions = (
            stores.history_provider(source_id="limits"),
            stores.file_store(),
            stores.session_store(),
        )
        await history.save_messages("big", [Message(role="user", contents=[message_text], message_id="m1")])
        await history.save_messages("big", [Message(role="assistant", contents=["small"], message_id="m2")])
        loaded = await history.get_messages("big")
        assert [m.message_id for m in loaded] == ["m1", "m2"]
        assert loaded[0].text == message_text

        await files.write("big/notes.md", file_text)
        assert await files.read("big/notes.md") == file_text

        session = AgentSession(session_id="big")
        session.state["notes"] = state_text
        await sessions.set("big", session)
        restored = await sessions.get("big")
        assert restored is not None and restored.state["notes"] == state_text
    record(
        {
            "suite": "limits",
            "backend": target.backend,
            "message_bytes": len(message_text.encode()),
            "file_bytes": len(file_text.encode()),
        }
    )


async def test_mongodb_refuses_a_document_over_16_mib_before_the_write(mongodb_target: Target) -> None:
    """A save, a file or a snapshot over 16 MiB is a ``ValueError`` naming the limit; what was stored stays."""
    target = mongodb_target
    huge = _text(OVER_MONGODB, "huge")
    async with open_stores(target.url) as stores:
        history, files, sessions = (
            stores.history_provider(source_id="limits"),
            stores.file_store(),
            stores.session_store(),
        )
        await history.save_messages("s", [Message(role="user", contents=["before"], message_id="m1")])
        await files.write("f.md", "before")
        kept = AgentSession(session_id="s")
        kept.state["v"] = "before"
        await sessions.set("s", kept)

        with pytest.raises(ValueError, match="16 MiB"):
            await history.save_messages("s", [Message(role="user", contents=[huge], message_id="m2")])
        with pytest.raises(ValueError, match="16 MiB"):
            await files.write("f.md", huge)
        with pytest.raises(ValueError, match="16 MiB"):
            await files.write("new.md", huge)
        too_big = AgentSession(session_id="s")
        too_big.state["v"] = huge
        with pytest.raises(ValueError, match="16 MiB"):
            await sessions.set("s", too_big)

        assert [m.message_id for m in await history.get_messages("s")] == ["m1"]
        assert await files.read("f.md") == "before"
        assert [e.name for e in await files.list_children()] == ["f.md"]
        restored = await sessions.get("s")
        assert restored is not None and restored.state == {"v": "before"}
        # The session goes on.
        await history.save_messages("s", [Message(role="user", contents=["after"], message_id="m3")])
        assert [m.message_id for m in await history.get_messages("s")] == ["m1", "m3"]
    record({"suite": "limits", "backend": target.backend, "refused": 4, "half_written": 0})


async def test_s3_refuses_a_key_over_1024_bytes_before_the_write(s3_target: Target) -> None:
    """A file path whose key would pass S3's 1,024 bytes is a ``ValueError``; nothing is written."""
    target = s3_target
    async with open_stores(target.url) as stores:
        files = stores.file_store()
        long_path = "/".join(["d" * 200] * 5) + "/file.md"  # 1,008 bytes of path, more with the prefix
        with pytest.raises(ValueError, match="over S3's limit of 1024"):
            await files.write(long_path, "x")
        multibyte = "é" * 520 + ".md"  # 520 characters, 1,043 bytes
        with pytest.raises(ValueError, match="over S3's limit of 1024"):
            await files.write(multibyte, "x")
        assert await files.list_children() == []
        await files.write("short.md", "x")
        assert await files.read("short.md") == "x"
    record({"suite": "limits", "backend": target.backend, "refused": 2, "half_written": 0})
