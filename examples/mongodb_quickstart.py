"""MongoDB quick start: the three stores on one MongoDB database.

Run with ``uv run examples/mongodb_quickstart.py mongodb://localhost:27017/agents`` (or set
``AGENT_STORES_MONGODB_URL``). Any MongoDB server works: standalone, replica set, sharded or
Atlas (``mongodb+srv://``); no transactions are needed.
"""

import asyncio
import os
import sys

from agent_framework import AgentSession, Message

from agent_stores.core import open_stores


async def main(url: str) -> None:
    async with open_stores(url) as stores:  # one AsyncMongoClient, closed on exit
        history = stores.history_provider(max_messages=200)
        files = stores.file_store()
        sessions = stores.session_store()

        session = AgentSession(session_id="demo")
        await history.save_messages(session.session_id, [Message(role="user", contents=["My name is Ada."])])
        await files.write("memories/user.md", "Name: Ada\n")
        await sessions.set(session.session_id, session)

        print("history:", [m.text for m in await history.get_messages(session.session_id)])
        print("files:", [entry.name for entry in await files.list_children("memories")])
        print("session restored:", (await sessions.get(session.session_id)) is not None)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else os.environ["AGENT_STORES_MONGODB_URL"]))
