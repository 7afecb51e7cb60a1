"""The three PostgreSQL stores on one pool: history, harness files and session snapshots.

Run with ``uv run examples/postgresql_quickstart.py postgresql://user:password@127.0.0.1:5432/agents``
against a database you may write to. The first use creates the stores' tables (or run
``agent-stores migrate-schema URL`` beforehand); everything the example writes lies under the
tenant ``example`` and is deleted at the end.
"""

import asyncio
import sys

from agent_framework import AgentSession, Message

from agent_stores.core import open_stores


async def main(url: str) -> None:
    async with open_stores(url) as stores:
        tenant = stores.tenant("example")
        history = tenant.history_provider(max_messages=200, ttl=86_400)
        files, sessions = tenant.file_store(), tenant.session_store()

        turn = [Message(role="user", contents=["My name is Ada."]), Message(role="assistant", contents=["Hi Ada!"])]
        await history.save_messages("user-42", turn)  # one statement: version check and append
        await files.write("memories/user.md", "Name: Ada\n")
        session = AgentSession(session_id="user-42")
        session.state["turns"] = 1
        await sessions.set("user-42", session)

        print("history:", [m.text for m in await history.get_messages("user-42")])  # one indexed query
        print("files:", [e.name for e in await files.list_children("memories")])
        print("sessions:", await history.list_sessions())  # type: ignore[attr-defined]

        await history.delete_session("user-42")  # type: ignore[attr-defined]
        await files.delete("memories/user.md")
        await sessions.delete("user-42")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: postgresql_quickstart.py URL   (postgresql://user:password@host:port/database)")
    asyncio.run(main(sys.argv[1]))
