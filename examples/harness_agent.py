"""A harness agent whose conversation, memory files and session live in our stores: one turn per run.

    export OPENAI_API_KEY=sk-...                       # api.openai.com, or:
    export OPENAI_BASE_URL=http://127.0.0.1:11434/v1   # any OpenAI-compatible server (no key needed)
    python harness_agent.py "Please remember that my favourite colour is teal."
    python harness_agent.py "What is my favourite colour?"     # a new process: recalled from the store

Optional arguments after the prompt name the stores (default ``sqlite:///harness.db``) and the
session; ``main(..., file_access=True)`` also gives the agent file tools on the store. The
client speaks Chat Completions; ``AGENT_STORES_OPENAI_API=responses`` switches to the
Responses API. Either way the model sees the conversation our history provider loads.
"""

import asyncio
import sys

from agent_framework import AgentSession, create_harness_agent

from agent_stores.core import open_stores, openai_client


async def main(
    prompt: str, url: str = "sqlite:///harness.db", session_id: str = "demo", *, file_access: bool = False
) -> str:
    async with open_stores(url) as stores:
        sessions = stores.session_store()
        kwargs = stores.harness_kwargs(file_access=file_access)  # history, memory files, and file tools if asked
        agent = create_harness_agent(openai_client(), **kwargs, disable_web_search=True)
        session = await sessions.get(session_id) or AgentSession(session_id=session_id)
        response = await agent.run(prompt, session=session)
        await sessions.set(session_id, session)
        return response.text


if __name__ == "__main__":
    print(asyncio.run(main(*sys.argv[1:])))
