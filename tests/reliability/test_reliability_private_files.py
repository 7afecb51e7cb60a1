"""Private by default: what a local fsspec root and a SQLite database create is 0700/0600 under umask 022.

An existing folder or file keeps its mode: the stores never loosen (nor tighten) what they did not create.
"""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_framework import Message

from agent_stores.core import open_stores


@pytest.fixture
def umask_022() -> Iterator[None]:
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def _use(url: str) -> None:
    async with open_stores(url) as stores:
        await stores.history_provider().save_messages("s", [Message(role="user", contents=["private"])])
        await stores.file_store().write("notes/a.md", "private")
        await stores.file_store().create_directory("empty/dir")


@pytest.mark.usefixtures("umask_022")
def test_local_root_is_created_private(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    asyncio.run(_use(f"file://{root}"))
    created = [root, *root.rglob("*")]
    assert any(p.is_file() for p in created) and any(p.is_dir() for p in created[1:])
    for path in created:
        assert _mode(path) == (0o700 if path.is_dir() else 0o600), f"{path} is {oct(_mode(path))}"


@pytest.mark.usefixtures("umask_022")
def test_local_root_keeps_existing_modes(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    (root / "files" / "notes").mkdir(parents=True)
    root.chmod(0o755)
    asyncio.run(_use(f"file://{root}"))
    assert _mode(root) == 0o755
    assert _mode(root / "files" / "notes") == 0o755
    assert _mode(root / "files" / "notes" / "a.md") == 0o600


def _modes(folder: Path) -> list[tuple[Path, int]]:
    return [(p, _mode(p)) for p in sorted(folder.iterdir())]


@pytest.mark.usefixtures("umask_022")
def test_sqlite_database_wal_and_shm_are_private(tmp_path: Path) -> None:
    async def hold_open() -> list[tuple[Path, int]]:
        async with open_stores(f"sqlite:///{tmp_path}/agent.db") as stores:
            await stores.history_provider().save_messages("s", [Message(role="user", contents=["private"])])
            return _modes(tmp_path)  # -wal/-shm exist while the connection is open

    seen = asyncio.run(hold_open())
    assert {p.name for p, _ in seen} >= {"agent.db", "agent.db-wal"}
    for path, mode in seen:
        assert mode == 0o600, f"{path.name} is {oct(mode)}"
