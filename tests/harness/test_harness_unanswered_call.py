"""A run killed between a tool call and its result does not brick the session (real OpenAI client).

The scripted server rejects a conversation holding an unanswered call exactly as OpenAI does
(400, "An assistant message with 'tool_calls' must be followed by tool messages…"). The killed
run leaves the call stored; the next run must still be accepted, and the record stays verbatim.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agents_support import BACKENDS, ScriptedOpenAI, StoreTarget

pytestmark = pytest.mark.asyncio

CHILD = Path(__file__).with_name("crash_child.py")
HELLO = "Hello, are you there?"
CRASH = "Please crash now."
AGAIN = "Hello again."


def _kill_in_tool_call(server: ScriptedOpenAI, target: StoreTarget, session_id: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_STORES_OPENAI"))}
    env |= target.env | {"OPENAI_BASE_URL": server.base_url, "OPENAI_MODEL": "scripted-model"}
    done = subprocess.run(
        [sys.executable, str(CHILD), target.url, session_id, CRASH],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, f"the child was not killed in its tool call: {done.stderr[-2000:]}"


async def _turn(target: StoreTarget, session_id: str, prompt: str, **history_options: object) -> str:
    from agent_framework import AgentSession, create_harness_agent

    from agent_stores.core import openai_client

    async with target.open() as stores:
        agent = create_harness_agent(
            openai_client(), **stores.harness_kwargs(**history_options), disable_web_search=True
        )
        session = await stores.session_store().get(session_id) or AgentSession(session_id=session_id)
        response = await agent.run(prompt, session=session)
        await stores.session_store().set(session_id, session)
    return response.text


async def _history(target: StoreTarget, session_id: str) -> list[tuple[str, list[str], str]]:
    async with target.open() as stores:
        messages = await stores.history_provider().export_messages(session_id)
    return [(m.role, [c.type for c in m.contents], m.text) for m in messages]


@pytest.fixture
def scripted(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAI]:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AGENT_STORES_OPENAI_API", raising=False)
    monkeypatch.setenv("OPENAI_MODEL", "scripted-model")
    with ScriptedOpenAI("responses-stored") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield server


# Hiding the unanswered call is the core's rule, over records every backend stores verbatim (the
# history suites prove that): SQLite and Redis by default, every backend with AGENT_STORES_HEAVY=1.
KILLED_ON = BACKENDS if os.environ.get("AGENT_STORES_HEAVY") == "1" else ["sqlite", "redis"]


@pytest.mark.parametrize("store_target", KILLED_ON, indirect=True)
async def test_a_run_killed_in_a_tool_call_leaves_a_session_the_model_accepts(
    store_target: StoreTarget, scripted: ScriptedOpenAI
) -> None:
    await _turn(store_target, "s-crash", HELLO)
    _kill_in_tool_call(scripted, store_target, "s-crash")
    stored = await _history(store_target, "s-crash")
    assert stored[-1][1] == ["function_call"], f"the killed run did not leave its call stored: {stored}"

    before = len(scripted.model_requests())
    assert await _turn(store_target, "s-crash", AGAIN) == "Hello."
    after = scripted.model_requests()[before:]
    assert [r.status for r in after] == [200]
    sent = scripted.texts(after[0])
    assert HELLO in sent and CRASH in sent and AGAIN in sent, "the next run lost the conversation before the crash"

    # The record stays verbatim: the unanswered call is kept, only hidden from the model.
    assert await _history(store_target, "s-crash") == [
        *stored,
        ("user", ["text"], AGAIN),
        ("assistant", ["text"], "Hello."),
    ]


@pytest.mark.parametrize("store_target", ["sqlite"], indirect=True)
async def test_without_hiding_the_stored_call_the_model_rejects_the_session(
    store_target: StoreTarget, scripted: ScriptedOpenAI
) -> None:
    """The failure the default prevents: the stored call goes to the model, which answers 400."""
    await _turn(store_target, "s-raw", HELLO)
    _kill_in_tool_call(scripted, store_target, "s-raw")
    with pytest.raises(Exception, match="tool_call"):
        await _turn(store_target, "s-raw", AGAIN, hide_unanswered_calls=False)
    assert scripted.model_requests()[-1].status == 400
