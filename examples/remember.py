"""The README's example: a harness agent whose conversation, memory files and session live in SQLite.

export OPENAI_API_KEY=sk-...   # or OPENAI_BASE_URL=http://127.0.0.1:11434/v1 (no key needed)
python remember.py "Please remember that my favourite colour is teal."
python remember.py "What is my favourite colour?"     # a new process: recalled from agent.db
"""

import asyncio
import sys

from agent_framework import AgentSession, create_harness_agent

from agent_stores.core import open_stores, openai_client


async def main(prompt: str, url: str = "sqlite:///agent.db") -> str:
    async with open_stores(url) as stores:
        agent = create_harness_agent(openai_client(), **stores.harness_kwargs(), disable_web_search=True)
        sessions = stores.session_store()
        session = await sessions.get("demo") or AgentSession(session_id="demo")
        response = await agent.run(prompt, session=session)
        await sessions.set("demo", session)
        return response.text


if __name__ == "__main__":
    print(asyncio.run(main(sys.argv[1])))
