"""``agent-stores check`` on a live PostgreSQL database, and ``migrate`` between PostgreSQL and SQLite."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import psycopg
from agent_framework import AgentSession, Message
from typer.testing import CliRunner

from agent_stores.cli import app
from agent_stores.core import open_stores

warnings.filterwarnings("ignore", message=r".*is experimental")


def _rows(url: str) -> dict[str, list[str]]:
    """Every row of the stores' tables (the migration table aside)."""
    tables = ["agent_stores_logs", "agent_stores_messages", "agent_stores_objects"]
    with psycopg.connect(url) as db:
        return {t: sorted(map(repr, db.execute(f"SELECT * FROM {t}"))) for t in tables}  # pyright: ignore[reportArgumentType]


async def _seed(url: str) -> None:
    async with open_stores(url) as stores:
        turn = [
            Message("user", ["My name is Ada."], message_id="m1"),
            Message("assistant", ["Hi Ada!"], message_id="m2"),
        ]
        await stores.history_provider().save_messages("s-1", turn)
        await stores.file_store().write("s-1/notes.md", "Name: Ada\n")
        session = AgentSession(session_id="s-1")
        session.state["turns"] = 1
        await stores.session_store().set("s-1", session)


async def _everything(url: str) -> dict[str, Any]:
    async with open_stores(url) as stores:
        snapshot = await stores.session_store().get("s-1")
        return {
            "history": [m.to_dict() for m in await stores.history_provider().export_messages("s-1")],
            "file": await stores.file_store().read("s-1/notes.md"),
            "snapshot": None if snapshot is None else snapshot.to_dict(),
        }


def test_check_passes_on_a_live_database_and_leaves_only_the_users_data(
    fresh_postgresql_url: str, tmp_path: Path
) -> None:
    asyncio.run(_seed(fresh_postgresql_url))
    before = _rows(fresh_postgresql_url)
    env = {**os.environ, "COLUMNS": "200"}
    result = subprocess.run(
        [sys.executable, "-m", "agent_stores.cli", "check", fresh_postgresql_url, "--suite", "sessions", "--json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        check=False,
    )
    assert result.returncode == 0, result.stderr + result.stdout
    report = json.loads(result.stdout)
    assert report["ok"] is True and report["summary"]["failed"] == 0 and report["summary"]["passed"] >= 15
    assert _rows(fresh_postgresql_url) == before, "the check left data behind or touched the user's data"
    assert "agent_stores@" not in result.stdout or "***" in result.stdout


def _migrate(source: str, target: str) -> dict[str, Any]:
    result = CliRunner().invoke(app, ["migrate", source, target, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_migrate_from_sqlite_to_postgresql_and_back(fresh_postgresql_url: str, tmp_path: Path) -> None:
    sqlite_url = f"sqlite:///{tmp_path}/source.db"
    back_url = f"sqlite:///{tmp_path}/back.db"
    asyncio.run(_seed(sqlite_url))
    expected = asyncio.run(_everything(sqlite_url))

    report = _migrate(sqlite_url, fresh_postgresql_url)
    assert report["ok"] and report["summary"]["history"] == {"copy": 1, "messages_copied": 2}
    assert asyncio.run(_everything(fresh_postgresql_url)) == expected
    again = _migrate(sqlite_url, fresh_postgresql_url)
    assert again["ok"] and "copy" not in again["summary"]["history"]  # nothing copied twice

    assert _migrate(fresh_postgresql_url, back_url)["ok"]
    assert asyncio.run(_everything(back_url)) == expected
