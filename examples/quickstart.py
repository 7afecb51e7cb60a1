"""Quick start: the three stores on the core's in-process driver (no server, no API key).

Run with ``python quickstart.py``. ``open_stores("sqlite:///agent.db")`` hands out the same
three stores on a database file that survives restarts.
"""

import asyncio

from agent_framework import AgentSession, Message

from agent_stores.core import LogHistoryProvider, ObjectAgentFileStore, ObjectSessionStore
from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver


async def main() -> None:
    history = LogHistoryProvider(MemoryLogDriver(), source_id="history")
    objects = MemoryObjectDriver()
    files = ObjectAgentFileStore(objects)
    sessions = ObjectSessionStore(objects)

    session = AgentSession(session_id="demo")
    turn = [Message(role="user", contents=["My name is Ada."]), Message(role="assistant", contents=["Hi Ada!"])]
    await history.save_messages(session.session_id, turn)
    # Agents may replay the transcript: the replayed prefix is not stored twice.
    await history.save_messages(session.session_id, [*turn, Message(role="user", contents=["What is my name?"])])
    await files.write("memories/user.md", "Name: Ada\n")
    session.state["turns"] = 2
    await sessions.set(session.session_id, session)

    print("history:")
    for message in await history.get_messages(session.session_id):
        print(f"  {message.role}: {message.text}")
    print("files:", [entry.name for entry in await files.list_children("memories")])
    for result in await files.search("memories", "ada"):
        print(f"grep 'ada': {result.file_name} lines {[m.line_number for m in result.matching_lines]}")
    restored = await sessions.get(session.session_id)
    print("session state:", restored.state if restored else None)


if __name__ == "__main__":
    asyncio.run(main())
