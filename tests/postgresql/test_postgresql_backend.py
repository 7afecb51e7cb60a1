"""The PostgreSQL backend through ``open_stores``: the example runs, every kind works, tenants stay apart."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest
from agent_framework import Message

from agent_stores.core import open_stores
from agent_stores.postgresql import PostgreSQLBackend

pytestmark = pytest.mark.asyncio

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "postgresql_quickstart.py"


async def test_the_quickstart_example_runs_as_written(fresh_postgresql_url: str) -> None:
    command = [sys.executable, "-W", "error::Warning", str(EXAMPLE), fresh_postgresql_url]
    done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "history: ['My name is Ada.', 'Hi Ada!']" in done.stdout
    assert "files: ['user.md']" in done.stdout
    assert "sessions: ['user-42']" in done.stdout


async def test_both_schemes_open_the_backend_and_tenants_stay_apart(fresh_postgresql_url: str) -> None:
    other_scheme = "postgres://" + fresh_postgresql_url.split("://", 1)[1]
    async with open_stores(fresh_postgresql_url) as stores, open_stores(other_scheme) as again:
        assert isinstance(stores.backend, PostgreSQLBackend)
        await stores.tenant("a").history_provider().save_messages("s", [Message("user", ["for a"])])
        await stores.tenant("b").history_provider().save_messages("s", [Message("user", ["for b"])])
        assert [m.text for m in await again.tenant("a").history_provider().get_messages("s")] == ["for a"]
        assert [m.text for m in await again.tenant("b").history_provider().get_messages("s")] == ["for b"]
        assert [t.name for t in await again.list_tenants()] == ["a", "b"]
        todos = stores.todo_store()
        checkpoints = stores.checkpoint_storage()
        assert todos is not None and checkpoints is not None
