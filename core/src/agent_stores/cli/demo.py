"""The demo of ``agent-stores demo`` and ``examples/harness_demo.py``: a harness agent that remembers across runs.

The first run asks the agent to remember a favourite colour (it writes a memory file); every
later run asks for it back, in a new process, from what the stores hold. The real model answers
when ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` is set and ``agent-framework-openai`` is installed
(through :func:`agent_stores.core.openai_client`); otherwise a clearly labelled offline scripted
model plays the part, calling the same memory tools a real model would.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import (
    AgentSession,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    Content,
    FunctionInvocationLayer,
    Message,
    create_harness_agent,
)

from agent_stores.core import Stores, open_stores, openai_client, redact_url

__all__ = ["DEFAULT_URL", "SESSION_ID", "ScriptedChatClient", "demo_client", "reset", "run", "show"]

DEFAULT_URL = "sqlite:///agent-stores-demo.db"
SESSION_ID = "demo"
FIRST_PROMPT = "Please remember that my favourite colour is teal."
SECOND_PROMPT = "What is my favourite colour?"
OFFLINE_LABEL = "OFFLINE SCRIPTED MODEL (set OPENAI_API_KEY or OPENAI_BASE_URL for a real one)"


class ScriptedChatClient(  # pyright: ignore[reportIncompatibleMethodOverride]  # the framework's layers' overloads
    ChatMiddlewareLayer[Any], FunctionInvocationLayer[Any], BaseChatClient[Any]
):
    """An offline stand-in for a model: saves a memory on the first run, reads it back on the second."""

    OTEL_PROVIDER_NAME = "scripted"

    async def _inner_get_response(  # type: ignore[override]  # pyright: ignore[reportIncompatibleMethodOverride]
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
        if "remember" in last.text.lower():
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


def demo_client(*, offline: bool = False) -> tuple[Any, str]:
    """The real model's client when configured (and not ``offline``), else the scripted one; with a label."""
    if not offline and (os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL")):
        try:
            client = openai_client()
        except ImportError:
            return ScriptedChatClient(), (
                "OFFLINE SCRIPTED MODEL (OPENAI_* is set but agent-framework-openai is not installed: "
                'pip install "agent-stores[openai]")'
            )
        where = os.environ.get("OPENAI_BASE_URL") or "api.openai.com"
        return client, f"{client.model} at {redact_url(where)}"
    return ScriptedChatClient(), OFFLINE_LABEL


async def run(url: str = DEFAULT_URL, *, offline: bool = False) -> None:
    """Run one turn of the demo against the stores ``url`` names, then show what they hold.

    Raises:
        Exception: The model call failed (a wrong key, an unreachable server); the stored
            session is left as it was, so the next run starts from it.
    """
    client, label = demo_client(offline=offline)
    print(f"model:  {label}\nstores: {redact_url(url)}\n")
    async with open_stores(url) as stores:
        sessions = stores.session_store()
        # The demo's tools need no approval. The framework's approval middleware (on by default)
        # keeps the tool loop's budget in the session and never resets it, so a session run 20
        # times would answer only "Function invocation limit reached": without it, every run
        # starts with a full budget.
        agent = create_harness_agent(
            client, **stores.harness_kwargs(), disable_web_search=True, disable_tool_auto_approval=True
        )
        session = await sessions.get(SESSION_ID) or AgentSession(session_id=SESSION_ID)
        history = stores.history_provider()
        first_run = not await history.get_messages(SESSION_ID)  # pyright: ignore[reportUnknownMemberType]
        prompt = FIRST_PROMPT if first_run else SECOND_PROMPT
        print(f"user:   {prompt}")
        response = await agent.run(prompt, session=session)
        print(f"agent:  {response.text}\n")
        await sessions.set(SESSION_ID, session)
        await show(stores)
        print("\nRun the same command again: the agent recalls the memory from the store." if first_run else "")


async def show(stores: Stores) -> None:
    """Print what the three stores hold for the demo's session."""
    messages = await stores.history_provider().get_messages(SESSION_ID)  # pyright: ignore[reportUnknownMemberType]
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


async def reset(url: str = DEFAULT_URL) -> None:
    """Forget the demo's session: its history, snapshot and files (nothing else in the store)."""
    async with open_stores(url) as stores:
        history: Any = stores.history_provider()
        await history.delete_session(SESSION_ID)
        await stores.session_store().delete(SESSION_ID)
        files = stores.file_store()
        pending = [SESSION_ID]
        while pending:
            directory = pending.pop()
            for entry in await files.list_children(directory):
                path = f"{directory}/{entry.name}"
                if entry.type == "directory":
                    pending.append(path)
                else:
                    await files.delete(path)
