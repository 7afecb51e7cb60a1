"""Reliability of the fsspec stores on a filesystem used through the plain fsspec API.

``DirFileSystem`` over a local folder is such a filesystem: nothing in it is declared atomic,
yet two writers replacing one file must never interleave their bytes (a reader then sees a
snapshot that is neither writer's, and the session store quarantines it as corrupt).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from agent_framework import AgentSession
from fsspec.implementations.dirfs import DirFileSystem  # pyright: ignore[reportMissingTypeStubs]
from fsspec.implementations.local import LocalFileSystem  # pyright: ignore[reportMissingTypeStubs]

from agent_stores.fsspec import FilesystemCapabilities, FsspecObjectDriver, FsspecSessionStore

ROUNDS = 30


def _dir_filesystem(path: Path) -> DirFileSystem:
    return DirFileSystem(str(path), LocalFileSystem())


@pytest.mark.asyncio
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


@pytest.mark.asyncio
async def test_stores_on_one_filesystem_object_share_one_lock(tmp_path: Path) -> None:
    """Conditional writes through two stores on one filesystem object are serialised within the process."""
    fs = _dir_filesystem(tmp_path)
    first, second = FsspecObjectDriver(fs, "a"), FsspecObjectDriver(fs, "b")
    await first.put("k", b"1")
    await second.put("k", b"2")
    assert first._ops is not None and second._ops is not None  # pyright: ignore[reportPrivateUsage]
    assert first._ops._lock is second._ops._lock  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue, reportUnknownMemberType]


def test_a_folder_pruned_while_a_write_makes_it_is_made_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A delete prunes the folder between ``mkdir`` saying it exists and the check that it is a folder.

    Before the fix the write reported "a parent of the path is a file" for a folder that a
    racing delete had just emptied and removed (seen as a flaky compare-and-set clause).
    """
    from agent_stores.fsspec import _local

    target = tmp_path / "a" / "b"
    target.mkdir(parents=True)
    real_mkdir = os.mkdir
    pruned: list[str] = []

    def mkdir_then_prune(path: str, mode: int = 0o777) -> None:
        if path == str(target) and not pruned:
            pruned.append(path)
            os.rmdir(path)  # the racing delete prunes it right after mkdir() found it there
            raise FileExistsError(17, "File exists", path)
        real_mkdir(path, mode)

    monkeypatch.setattr(_local.os, "mkdir", mkdir_then_prune)
    ops = _local.LocalOps(str(tmp_path), prune=True)
    ops.put("a/b/object", b"payload", if_absent=False, if_version=None)
    assert pruned == [str(target)]
    assert (target / "object").read_bytes() == b"payload"


def test_a_file_in_the_way_of_a_folder_is_still_refused(tmp_path: Path) -> None:
    """The retry for pruned folders does not hide a real file where a folder is needed."""
    from agent_stores.fsspec import _local

    (tmp_path / "a").write_bytes(b"a file")
    ops = _local.LocalOps(str(tmp_path), prune=True)
    with pytest.raises(NotADirectoryError):
        ops.put("a/object", b"payload", if_absent=False, if_version=None)
