"""The three stores in one S3 bucket: history, harness files and session snapshots.

Run with ``uv run examples/s3_stores.py "s3://my-bucket/agents/demo?region=eu-west-1"``; for an
S3-compatible server add ``&endpoint_url=http://127.0.0.1:8333``. Credentials come from the
standard AWS chain (``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY``, a profile, a role).
The bucket must exist (or add ``&create_bucket=true``).
"""

import asyncio
import sys

from agent_framework import AgentSession, Message

from agent_stores.core import open_stores


async def main(url: str) -> None:
    async with open_stores(url) as stores:
        history = stores.history_provider(max_messages=200)
        files = stores.file_store()
        sessions = stores.session_store()

        turn = [Message(role="user", contents=["My name is Ada."]), Message(role="assistant", contents=["Hi Ada!"])]
        await history.save_messages("user-42", turn)  # one PUT: a new segment object
        await files.write("memories/user.md", "Name: Ada\n")  # key <prefix>/files/memories/user.md
        session = AgentSession(session_id="user-42")
        session.state["turns"] = 1
        await sessions.set("user-42", session)  # key <prefix>/sessions/user-42.json

        print("history:", [m.text for m in await history.get_messages("user-42")])
        print("files:", [e.name for e in await files.list_children("memories")])
        restored = await sessions.get("user-42")
        print("session state:", restored.state if restored else None)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1]))
