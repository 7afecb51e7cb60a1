"""SQLite with ``must_exist``: a missing or foreign database file is an error, and nothing is created or changed."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from agent_framework import Message

from agent_stores.core import StoreNotFoundError, open_stores
from agent_stores.sqlite import SQLiteBackend, SQLiteHistoryProvider


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def content(path: Path) -> bytes:
    return path.read_bytes()


@pytest.mark.asyncio
async def test_a_missing_file_is_an_error_and_stays_missing(tmp_path: Path) -> None:
    path = tmp_path / "typo.db"
    async with open_stores(f"sqlite:///{path}", must_exist=True) as stores:
        with pytest.raises(StoreNotFoundError, match=r"typo\.db' does not exist"):
            await stores.history_provider().get_messages("s")
        with pytest.raises(StoreNotFoundError):
            await stores.file_store().read("a.md")
    async with SQLiteHistoryProvider.from_path(path, must_exist=True) as provider:
        with pytest.raises(StoreNotFoundError):
            await provider.get_messages("s")
    assert listing(tmp_path) == []


@pytest.mark.asyncio
async def test_a_file_without_the_stores_tables_is_an_error_and_is_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE theirs (x)")
        db.execute("PRAGMA journal_mode = DELETE")
    db.close()
    before = content(path)
    async with open_stores(f"sqlite:///{path}", must_exist=True) as stores:
        with pytest.raises(StoreNotFoundError, match="holds no agent-stores tables"):
            await stores.session_store().get("s")
    assert content(path) == before  # no table made, the journal mode not switched to WAL
    assert listing(tmp_path) == ["other.db"]


@pytest.mark.asyncio
async def test_a_store_that_exists_reads_and_writes_as_usual(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    async with open_stores(url) as stores:
        await stores.history_provider().save_messages("s", [Message(role="user", contents=["hi"])])
    async with open_stores(url, must_exist=True) as stores:
        assert [m.text for m in await stores.history_provider().get_messages("s")] == ["hi"]
        await stores.file_store().write("a.md", "x")
        assert await stores.file_store().read("a.md") == "x"


def test_must_exist_is_a_boolean() -> None:
    with pytest.raises(ValueError, match="must_exist must be True or False"):
        SQLiteBackend("sqlite:///x.db", must_exist="yes")


def test_the_location_is_the_files_real_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link.db").symlink_to(tmp_path / "agent.db")
    spellings = ["sqlite:///agent.db", f"sqlite:////{tmp_path}/./agent.db?busy_timeout=5", "sqlite:///link.db"]
    assert {SQLiteBackend(url).location() for url in spellings} == {f"sqlite://{tmp_path / 'agent.db'}"}
    assert SQLiteBackend("sqlite://").location() != SQLiteBackend("sqlite://").location()  # two in-memory databases
