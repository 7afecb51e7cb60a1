"""The three Redis stores on one client: history, harness files and session snapshots.

Run with ``uv run examples/redis_quickstart.py redis://127.0.0.1:6380/0`` against a Redis or
Valkey you may write to (``redis+cluster://host:port,host:port`` for a cluster). Every key it
writes starts with the ``example:`` key prefix and is deleted at the end.
"""

import asyncio
import sys

from agent_framework import AgentSession, Message

from agent_stores.core import open_stores


async def main(url: str) -> None:
    async with open_stores(url, key_prefix="example:") as stores:
        history = stores.history_provider(max_messages=200, ttl=86_400)
        files, sessions = stores.file_store(), stores.session_store()

        turn = [Message(role="user", contents=["My name is Ada."]), Message(role="assistant", contents=["Hi Ada!"])]
        await history.save_messages("user-42", turn)  # one EVALSHA: version check, append, TTL, index
        await files.write("memories/user.md", "Name: Ada\n")
        session = AgentSession(session_id="user-42")
        session.state["turns"] = 1
        await sessions.set("user-42", session)

        print("history:", [m.text for m in await history.get_messages("user-42")])  # one LRANGE
        print("files:", [e.name for e in await files.list_children("memories")])
        print("sessions:", await history.list_sessions())  # type: ignore[attr-defined]

        await history.delete_session("user-42")  # type: ignore[attr-defined]
        await files.delete("memories/user.md")
        await sessions.delete("user-42")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: redis_quickstart.py URL   (redis://host:port/db, rediss://..., redis+cluster://...)")
    asyncio.run(main(sys.argv[1]))
