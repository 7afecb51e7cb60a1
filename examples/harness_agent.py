"""A harness agent whose conversation, memory files and session live in our stores: one turn per run.

    export OPENAI_API_KEY=sk-...                       # api.openai.com, or:
    export OPENAI_BASE_URL=http://127.0.0.1:11434/v1   # any OpenAI-compatible server (no key needed)
    uv run examples/harness_agent.py "Please remember that my favourite colour is teal."
    uv run examples/harness_agent.py "What is my favourite colour?"     # a new process: recalled from the store

``--url`` names the stores (default ``sqlite:///agent-stores-harness.db``), ``--session`` the
session. The client speaks Chat Completions; ``AGENT_STORES_OPENAI_API=responses`` switches to
the Responses API. Either way the model sees the conversation our history provider loads.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import warnings

from agent_framework._feature_stage import ExperimentalWarning

warnings.filterwarnings("ignore", category=ExperimentalWarning)

from agent_framework import AgentSession, create_harness_agent  # noqa: E402

from agent_stores.core import open_stores, openai_client  # noqa: E402


async def turn(url: str, session_id: str, prompt: str, *, file_access: bool = False) -> str:
    client = openai_client()  # Chat Completions, or the Responses API with AGENT_STORES_OPENAI_API=responses
    async with open_stores(url) as stores:
        sessions = stores.session_store()
        kwargs = stores.harness_kwargs(file_access=file_access)  # history, memory files, and file tools if asked
        agent = create_harness_agent(client, **kwargs, disable_web_search=True)
        session = await sessions.get(session_id) or AgentSession(session_id=session_id)
        response = await agent.run(prompt, session=session)
        await sessions.set(session_id, session)
    return response.text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prompt")
    parser.add_argument("--url", default="sqlite:///agent-stores-harness.db", help="store URL (default: %(default)s)")
    parser.add_argument("--session", default="demo", help="session id (default: %(default)s)")
    parser.add_argument("--file-access", action="store_true", help="also give the agent file tools on the store")
    args = parser.parse_args()
    try:
        print(asyncio.run(turn(args.url, args.session, args.prompt, file_access=args.file_access)))
    except Exception as err:  # a wrong key or an unreachable server: one line; the stored session is untouched
        sys.exit(f"error: {type(err).__name__}: {err}")


if __name__ == "__main__":
    main()
