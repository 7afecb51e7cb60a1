"""A plain ``Agent`` whose conversation lives in our history provider: one turn per run.

    export OPENAI_API_KEY=sk-...                       # api.openai.com, or:
    export OPENAI_BASE_URL=http://127.0.0.1:11434/v1   # any OpenAI-compatible server (no key needed)
    python agent_history.py "My name is Ada."
    python agent_history.py "What is my name?"   # a new process: turn 1 comes from chat.db

No session store and no harness: the history provider is a context provider of the agent, keyed
by the session id, so a new ``AgentSession`` with the same id continues the conversation.
"""

import asyncio
import sys

from agent_framework import Agent, AgentSession

from agent_stores.core import open_stores, openai_client


async def main(prompt: str, url: str = "sqlite:///chat.db", session_id: str = "chat") -> str:
    async with open_stores(url) as stores:
        history = stores.history_provider(max_messages=200)  # load at most the newest 200 messages
        agent = Agent(
            openai_client(),
            "You are a helpful assistant.",
            context_providers=[history],
            default_options={"store": False},  # the model sees what our provider loads, never a service copy
        )
        response = await agent.run(prompt, session=AgentSession(session_id=session_id))
        return response.text


if __name__ == "__main__":
    print(asyncio.run(main(*sys.argv[1:])))
