"""A SQLite database the stores create is private to its owner; an existing file keeps its mode."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_framework import Message

from agent_stores.core import open_stores
from agent_stores.sqlite import SQLiteHistoryProvider


@pytest.fixture
def loose_umask() -> Iterator[None]:
    """The common default umask 022, under which plain file creation gives 0644."""
    previous = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(previous)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.asyncio
@pytest.mark.usefixtures("loose_umask")
async def test_a_new_database_and_its_wal_files_are_0600(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    async with open_stores(f"sqlite:///{path}") as stores:
        await stores.history_provider().save_messages("s", [Message("user", ["private"])])
        created = [tmp_path / name for name in ("agent.db", "agent.db-wal", "agent.db-shm")]
        assert {p.name: _mode(p) for p in created} == {p.name: 0o600 for p in created}


@pytest.mark.asyncio
@pytest.mark.usefixtures("loose_umask")
async def test_an_existing_database_keeps_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "shared.db"
    path.touch(mode=0o640)
    path.chmod(0o640)
    async with SQLiteHistoryProvider.from_path(path) as history:
        await history.save_messages("s", [Message("user", ["hello"])])
    assert _mode(path) == 0o640


@pytest.mark.asyncio
@pytest.mark.usefixtures("loose_umask")
async def test_file_mode_is_an_option(tmp_path: Path) -> None:
    path = tmp_path / "team.db"
    async with SQLiteHistoryProvider.from_url(f"sqlite:///{path}?file_mode=640") as history:
        await history.save_messages("s", [Message("user", ["hello"])])
    assert _mode(path) == 0o640
    with pytest.raises(ValueError, match="file_mode"):
        SQLiteHistoryProvider.from_url(f"sqlite:///{path}?file_mode=999")
