"""Limits: a 10 MB message and a 10 MB file round-trip on every backend; what a backend cannot hold is refused first.

MongoDB keeps one document per history batch and per file, at most 16 MiB: a larger save or
file is a ``ValueError`` before the write, and what was stored before is unchanged. S3 keys are
at most 1,024 bytes: a longer file path is a ``ValueError`` before any request. The limits of
every backend are in ``docs/reliability.md``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any

import pytest
from agent_framework import AgentSession, FileStoreEntry, Message

from agent_stores.core import open_stores
from reliability_figures import record
from reliability_support import BACKENDS, HEAVY, Target

pytestmark = pytest.mark.asyncio

#: PostgreSQL's 10 MB values and long session are tests/postgresql/test_postgresql_limits.py's (100,000 messages).
_BUT_POSTGRESQL = pytest.mark.parametrize("target", [b for b in BACKENDS if b != "postgresql"], indirect=True)

TEN_MB = 10 * 1000 * 1000
#: MongoDB's document limit (16 MiB), plus a margin.
OVER_MONGODB = 16 * 1024 * 1024 + 1024


def _text(size: int, seed: str) -> str:
    """``size`` characters of text, not one repeated character (so nothing compresses it away), ending in non-ASCII."""
    block = f"{seed} the quick brown fox jumps over the lazy dog 0123456789\n"
    return (block * (size // len(block) + 1))[: size - 2] + "é."


@_BUT_POSTGRESQL
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


#: A long session: messages, imported in pieces of ``PIECE`` (each piece one append).
SESSION_MESSAGES = 100_000 if HEAVY else 3_000
PIECE = 1_000 if HEAVY else 500
#: Files in one folder.
FOLDER_FILES = 10_000 if HEAVY else 200
#: Concurrent writes and deletes of the folder test (an application's worker pool).
PARALLEL = 16


def _numbered(start: int, count: int) -> list[Message]:
    return [
        Message(role="user" if i % 2 == 0 else "assistant", contents=[f"message {i}"], message_id=f"m{i}")
        for i in range(start, start + count)
    ]


@_BUT_POSTGRESQL
async def test_a_long_session_saves_loads_a_window_counts_and_deletes(target: Target) -> None:
    """A session of ``SESSION_MESSAGES`` messages (100,000 with ``AGENT_STORES_HEAVY=1``), imported in pieces.

    Then a save on top (de-duplicated against the long log), the count, a windowed load (the
    newest 50, exactly), a full load in order, and a delete: nothing of it reads back, and the
    session takes a new save.
    """
    async with open_stores(target.url) as stores:
        history = stores.history_provider(source_id="limits")
        for start in range(0, SESSION_MESSAGES, PIECE):
            await history.import_messages("long", _numbered(start, min(PIECE, SESSION_MESSAGES - start)))
        last = _numbered(SESSION_MESSAGES - 1, 1)[0]
        await history.save_messages("long", [last, *_numbered(SESSION_MESSAGES, 2)])  # m{N-1} is stored: skipped
        total = SESSION_MESSAGES + 2
        assert await history.count_messages("long") == total  # type: ignore[attr-defined]

        window = stores.history_provider(source_id="limits", max_messages=50)
        assert [m.message_id for m in await window.get_messages("long")] == [f"m{i}" for i in range(total - 50, total)]
        loaded = await history.get_messages("long")
        assert len(loaded) == total
        assert all(m.message_id == f"m{i}" and m.text == f"message {i}" for i, m in enumerate(loaded))

        assert await history.delete_session("long") is True  # type: ignore[attr-defined]
        assert await history.get_messages("long") == []
        assert await history.count_messages("long") == 0  # type: ignore[attr-defined]
        await history.save_messages("long", _numbered(0, 1))
        assert [m.message_id for m in await history.get_messages("long")] == ["m0"]
    record({"suite": "limits", "backend": target.backend, "session_messages": total, "piece": PIECE})


async def test_ten_thousand_files_in_one_folder(target: Target) -> None:
    """``FOLDER_FILES`` files in one folder (10,000 with ``AGENT_STORES_HEAVY=1``): write, list, glob, search, delete.

    Every 100th file holds a needle. The listing returns every file once, sorted; a glob over
    the folder finds them all and a narrower one exactly its share; a search narrowed by a glob
    finds exactly the needles in its scope; a search of the whole folder finds every needle or
    stops at the framework's documented 10 s bound with a ``ValueError`` (never a partial
    answer); after deleting every file the folder lists empty.
    """
    names = [f"f{i:05d}.md" for i in range(FOLDER_FILES)]
    limit = asyncio.Semaphore(PARALLEL)

    async def bounded(call: Awaitable[Any]) -> Any:
        async with limit:
            return await call

    async with open_stores(target.url) as stores:
        files = stores.file_store()
        await asyncio.gather(
            *(
                bounded(files.write(f"big/{name}", f"file {i}\n" + ("needle\n" if i % 100 == 0 else "hay\n")))
                for i, name in enumerate(names)
            )
        )
        listed = await files.list_children("big")
        assert [e.name for e in listed] == names
        assert all(e.type == FileStoreEntry.FILE for e in listed)
        assert await files.find_matching_files("big", "", "*.md") == names
        assert await files.find_matching_files("big", "", "f00*.md") == names[:1000]
        found = await files.search("big", "needle", "f000*.md")  # a glob narrowing the search to 100 files
        assert sorted(r.file_name for r in found) == names[:100:100]
        assert all([line.line_number for line in r.matching_lines] == [2] for r in found)
        # A search of the whole folder reads every file: exact, or the framework's documented bound
        # (a ValueError after ``search``'s 10 s), never a partial answer.
        try:
            everywhere = await files.search("big", "needle")
        except ValueError as err:
            if "did not complete within" not in str(err):
                raise
            search_all = "bounded (10 s)"
        else:
            assert sorted(r.file_name for r in everywhere) == names[::100]
            search_all = "complete"
        assert await files.read(f"big/{names[-1]}") == f"file {FOLDER_FILES - 1}\nhay\n"

        deleted = await asyncio.gather(*(bounded(files.delete(f"big/{name}")) for name in names))
        assert all(deleted)
        assert await files.list_children("big") == []
        assert await files.find_matching_files("big", "", "*.md") == []
    record({"suite": "limits", "backend": target.backend, "folder_files": FOLDER_FILES, "search_all": search_all})
