"""Reliability of the fsspec stores on a filesystem used through the plain fsspec API.

``DirFileSystem`` over a local folder is such a filesystem: nothing in it is declared atomic,
yet two writers replacing one file must never interleave their bytes (a reader then sees a
snapshot that is neither writer's, and the session store quarantines it as corrupt).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent_framework import AgentSession
from fsspec.implementations.dirfs import DirFileSystem  # pyright: ignore[reportMissingTypeStubs]
from fsspec.implementations.local import LocalFileSystem  # pyright: ignore[reportMissingTypeStubs]

from agent_stores.fsspec import FilesystemCapabilities, FsspecObjectDriver, FsspecSessionStore

pytestmark = pytest.mark.asyncio

ROUNDS = 30


def _dir_filesystem(path: Path) -> DirFileSystem:
    return DirFileSystem(str(path), LocalFileSystem())


async def test_concurrent_replacements_never_interleave_bytes(tmp_path: Path) -> None:
    """Sixteen writers of different lengths, through two stores, leave one writer's whole file each round.

    Before the fix each ``pipe_file`` truncated and rewrote the file in place while the two
    stores held separate locks: a short write over a long one left the long one's tail.
    """
    capabilities = FilesystemCapabilities.generic("dir")
    stores = [FsspecSessionStore(_dir_filesystem(tmp_path), "sessions", capabilities=capabilities) for _ in range(2)]
    for round_ in range(ROUNDS):
        key = f"race-{round_}"
        sessions: list[AgentSession] = []
        for index in range(16):
            session = AgentSession(session_id=f"{key}-{index}")
            session.state.update({"index": index, "payload": "x" * (index * 512)})
            sessions.append(session)
        await asyncio.gather(*(stores[i % 2].set(key, s) for i, s in enumerate(sessions)))
        loaded = await stores[0].get(key)
        assert loaded is not None
        assert loaded.to_dict() == sessions[loaded.state["index"]].to_dict()
    leftovers = [p.name for p in (tmp_path / "sessions").iterdir() if not p.name.startswith("race-")]
    assert leftovers == [], "a temporary file was left behind"


async def test_stores_on_one_filesystem_object_share_one_lock(tmp_path: Path) -> None:
    """Conditional writes through two stores on one filesystem object are serialised within the process."""
    fs = _dir_filesystem(tmp_path)
    first, second = FsspecObjectDriver(fs, "a"), FsspecObjectDriver(fs, "b")
    await first.put("k", b"1")
    await second.put("k", b"2")
    assert first._ops is not None and second._ops is not None  # pyright: ignore[reportPrivateUsage]
    assert first._ops._lock is second._ops._lock  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue, reportUnknownMemberType]
