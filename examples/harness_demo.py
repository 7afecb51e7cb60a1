"""A harness agent that remembers across runs, with every byte in one SQLite file.

    uv run examples/harness_demo.py                 # first run stores a memory, second run recalls it
    uv run examples/harness_demo.py --reset         # start over

With ``OPENAI_API_KEY`` set (or ``OPENAI_BASE_URL`` pointing at an OpenAI-compatible server) and
``agent-framework-openai`` installed, the real model answers; otherwise a clearly labelled offline
scripted model plays the part, calling the same memory tools a real model would.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_framework._feature_stage import ExperimentalWarning

# The harness and the storage protocols are experimental in Agent Framework and say so on import;
# this demo is about storage, so it keeps its output to what the stores hold.
warnings.filterwarnings("ignore", category=ExperimentalWarning)

from agent_framework import (  # noqa: E402
    AgentSession,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
    create_harness_agent,
)

from agent_stores.core import open_stores  # noqa: E402

SESSION_ID = "demo"
FIRST_PROMPT = "Please remember that my favourite colour is teal."
SECOND_PROMPT = "What is my favourite colour?"


class ScriptedChatClient(ChatMiddlewareLayer[Any], FunctionInvocationLayer[Any], BaseChatClient[Any]):
    """An offline stand-in for a model: saves a memory on the first run, reads it back on the second."""

    OTEL_PROVIDER_NAME = "scripted"

    async def _inner_get_response(  # type: ignore[override]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse:
        last = messages[-1]
        results = [c for c in last.contents if c.type == "function_result"]
        if results:
            if any(str(c.result).startswith("Read") or "teal" in str(c.result) for c in results):
                text = f"From my memory file: {results[-1].result!s}".strip()
            else:
                text = "Noted - I saved that to my memory file."
            return ChatResponse(messages=[Message(role="assistant", contents=[text])])
        prompt = last.text.lower()
        if "remember" in prompt:
            call = Content.from_function_call(
                "call-write",
                "file_memory_write",
                arguments={"file_name": "preferences.md", "content": "Favourite colour: teal\n"},
            )
        else:
            call = Content.from_function_call(
                "call-read", "file_memory_read", arguments={"file_name": "preferences.md"}
            )
        return ChatResponse(messages=[Message(role="assistant", contents=[call])])


def make_client() -> tuple[Any, str]:
    """Return the real OpenAI client when configured, else the scripted one, with a label."""
    if os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"):
        try:
            from agent_framework.openai import OpenAIChatClient
        except ImportError:
            print("OPENAI_API_KEY is set but agent-framework-openai is not installed; using the scripted model.")
        else:
            model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
            return OpenAIChatClient(model=model), f"OpenAI model {model}"
    return ScriptedChatClient(), "OFFLINE SCRIPTED MODEL (set OPENAI_API_KEY for a real one)"


async def run(url: str) -> None:
    """Run one turn of the demo against the stores ``url`` names, then show what they hold."""
    client, label = make_client()
    print(f"model:  {label}\nstores: {url}\n")
    async with open_stores(url) as stores:
        sessions = stores.session_store()
        agent = create_harness_agent(client, **stores.harness_kwargs(), disable_web_search=True)
        session = await sessions.get(SESSION_ID) or AgentSession(session_id=SESSION_ID)
        history = stores.history_provider()
        first_run = not await history.get_messages(SESSION_ID)  # type: ignore[union-attr]
        prompt = FIRST_PROMPT if first_run else SECOND_PROMPT
        print(f"user:   {prompt}")
        response = await agent.run(prompt, session=session)
        print(f"agent:  {response.text}\n")
        await sessions.set(SESSION_ID, session)
        await show(stores)
        print("\nRun the same command again: the agent recalls the memory from the store." if first_run else "")


async def show(stores: Any) -> None:
    """Print what the three stores hold."""
    history = stores.history_provider()
    messages = await history.get_messages(SESSION_ID)
    print(f"history ({len(messages)} messages in session {SESSION_ID!r}):")
    for message in messages:
        kinds = ", ".join(c.type for c in message.contents)
        print(f"  {message.role:<9} {message.text[:60] or kinds}")
    files = stores.file_store()
    print("files:")
    pending = [""]
    while pending:
        directory = pending.pop()
        for entry in await files.list_children(directory):
            path = f"{directory}/{entry.name}".lstrip("/")
            if entry.type == "directory":
                pending.append(path)
            else:
                print(f"  {path}: {(await files.read(path) or '').strip()!r}")
    snapshot = await stores.session_store().get(SESSION_ID)
    print(f"session snapshot: {sorted(snapshot.state) if snapshot else None}")


def main() -> None:
    """Parse the command line and run the demo."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", default="sqlite:///agent-stores-demo.db", help="store URL (default: %(default)s)")
    parser.add_argument("--reset", action="store_true", help="delete the demo database first")
    args = parser.parse_args()
    if args.reset and args.url.startswith("sqlite:///"):
        for suffix in ("", "-wal", "-shm"):
            Path(args.url.removeprefix("sqlite:///") + suffix).unlink(missing_ok=True)
    asyncio.run(run(args.url))


if __name__ == "__main__":
    main()
