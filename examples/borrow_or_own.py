"""Three ways to get a store: all of a backend from one URL, one owning its connection, or one borrowing yours.

Run with ``uv run examples/borrow_or_own.py`` (SQLite: no server needed). The same three forms
work on every backend: ``open_stores("redis://...")``, ``RedisHistoryProvider.from_url(...)``,
``RedisHistoryProvider(redis.asyncio.Redis(...))``.
"""

import asyncio
import sys
import tempfile
from pathlib import Path

import aiosqlite
from agent_framework import AgentSession, Message

from agent_stores.core import open_stores
from agent_stores.sqlite import SQLiteHistoryProvider


async def main(folder: Path) -> None:
    url = f"sqlite:///{folder / 'agent.db'}"

    # Every store of one backend on one connection, closed together.
    async with open_stores(url) as stores:
        history = stores.history_provider(max_messages=200, ttl=86_400)
        files, sessions = stores.file_store(), stores.session_store()
        await history.save_messages("user-42", [Message("user", ["My name is Ada."])])
        await files.write("memories/user.md", "Name: Ada\n")
        await sessions.set("user-42", AgentSession(session_id="user-42"))

    # One store that owns its connection: from_url opens it, aclose (or async with) closes it.
    async with SQLiteHistoryProvider.from_url(url, max_messages=200, busy_timeout=10) as history:
        print("owned:   ", [m.text for m in await history.get_messages("user-42")])

    # A store that borrows your connection: it never closes it, you do.
    async with aiosqlite.connect(folder / "agent.db", isolation_level=None) as connection:
        history = SQLiteHistoryProvider(connection)
        print("borrowed:", [m.text for m in await history.get_messages("user-42")])
        await history.aclose()  # releases nothing of yours


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as scratch:
        asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(scratch)))
