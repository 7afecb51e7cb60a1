"""A harness agent process that dies (SIGKILL) inside a tool call: the call is stored, its result never is.

Run as ``python crash_child.py URL SESSION PROMPT`` with ``OPENAI_BASE_URL`` set to the scripted server.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from agent_framework import AgentSession, create_harness_agent, tool

from agent_stores.core import open_stores, openai_client


@tool
def crash_now() -> str:
    """Stop this process at once, as a kill or a power cut would."""
    os.kill(os.getpid(), signal.SIGKILL)
    return "unreachable"


async def main(url: str, session_id: str, prompt: str) -> None:
    async with open_stores(url) as stores:
        agent = create_harness_agent(
            openai_client(), **stores.harness_kwargs(), tools=[crash_now], disable_web_search=True
        )
        session = await stores.session_store().get(session_id) or AgentSession(session_id=session_id)
        await agent.run(prompt, session=session)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
