"""A plain ``Agent`` whose conversation lives in our history provider: one turn per run.

    export OPENAI_API_KEY=sk-...                       # api.openai.com, or:
    export OPENAI_BASE_URL=http://127.0.0.1:11434/v1   # any OpenAI-compatible server (no key needed)
    uv run examples/agent_history.py "My name is Ada."
    uv run examples/agent_history.py "What is my name?"   # a new process: turn 1 comes from the store

No session store and no harness: the history provider is a context provider of the agent, keyed
by the session id, so a new ``AgentSession`` with the same id continues the conversation.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import warnings

from agent_framework._feature_stage import ExperimentalWarning

warnings.filterwarnings("ignore", category=ExperimentalWarning)

from agent_framework import Agent, AgentSession  # noqa: E402

from agent_stores.core import open_stores, openai_client  # noqa: E402


async def turn(url: str, session_id: str, prompt: str) -> str:
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prompt")
    parser.add_argument("--url", default="sqlite:///agent-stores-chat.db", help="store URL (default: %(default)s)")
    parser.add_argument("--session", default="chat", help="session id (default: %(default)s)")
    args = parser.parse_args()
    try:
        print(asyncio.run(turn(args.url, args.session, args.prompt)))
    except Exception as err:  # a wrong key or an unreachable server: one line; the stored session is untouched
        sys.exit(f"error: {type(err).__name__}: {err}")


if __name__ == "__main__":
    main()
