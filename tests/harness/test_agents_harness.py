"""A harness agent with the framework's real OpenAI client keeps its conversation in our stores.

The scripted server (``agents_support.ScriptedOpenAI``) logs every request, so each test reads
what the model was actually sent: turn 2 must carry turn 1 from our history provider, never a
``previous_response_id`` to a copy the service kept, whatever API shape the server has.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agents_support import (
    FIRST,
    MEMORY_FILE,
    MEMORY_INDEX,
    MEMORY_TEXT,
    SECOND,
    ScriptedOpenAI,
    StoreTarget,
    agent_turn,
    assert_turn_two_from_store,
)

pytestmark = pytest.mark.asyncio

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "harness_agent.py"


def _child_env(server: ScriptedOpenAI, target: StoreTarget, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_STORES_OPENAI"))}
    return env | target.env | {"OPENAI_BASE_URL": server.base_url, "OPENAI_MODEL": "scripted-model"} | extra


def _run_example(server: ScriptedOpenAI, target: StoreTarget, prompt: str) -> str:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), prompt, target.url, "s-1"],
        env=_child_env(server, target),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


async def _stored(target: StoreTarget, session_id: str) -> tuple[list[Any], dict[str, str | None], Any]:
    async with target.open() as stores:
        messages = await stores.history_provider().export_messages(session_id)
        files = stores.file_store()
        folder = {e.name: await files.read(f"{session_id}/{e.name}") for e in await files.list_children(session_id)}
        snapshot = await stores.session_store().get(session_id)
    return messages, folder, snapshot


async def test_turn_two_in_a_new_process_loads_turn_one_from_the_store(store_target: StoreTarget) -> None:
    """examples/harness_agent.py, run twice as a user would, keyless against a local base URL."""
    with ScriptedOpenAI("responses-stored") as server:
        first = _run_example(server, store_target, FIRST)
        assert f"File '{MEMORY_FILE}' written." in first
        turn_one_requests = len(server.model_requests())
        assert turn_one_requests == 2  # the memory write, then the answer to its result

        messages, folder, snapshot = await _stored(store_target, "s-1")
        assert messages[0].text == FIRST
        assert folder[MEMORY_FILE] == MEMORY_TEXT
        assert MEMORY_INDEX in (folder["memories.md"] or "")
        assert snapshot is not None and snapshot.session_id == "s-1"

        second = _run_example(server, store_target, SECOND)
        assert MEMORY_TEXT.strip() in second
        assert_turn_two_from_store(server, turn_one_requests)
        assert all(r.path.endswith("/chat/completions") for r in server.model_requests())
        assert all(r.headers.get("authorization") == "Bearer no-key" for r in server.model_requests())

    messages, _, _ = await _stored(store_target, "s-1")
    assert [m.text for m in messages if m.role == "user"] == [FIRST, SECOND]


# (server shape, AGENT_STORES_OPENAI_API): every shape with an API it speaks.
CASES = [
    ("responses-stored", "responses"),
    ("responses-stateless", "responses"),
    ("responses-stored", "chat"),
    ("chat-only", "chat"),
]


@pytest.mark.parametrize(("shape", "api"), CASES, ids=[f"{s}-{a}" for s, a in CASES])
async def test_every_server_shape_gets_the_conversation_from_the_store(
    store_target: StoreTarget, shape: str, api: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Fresh client, agent and stores for each turn, as a new process would have."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("AGENT_STORES_OPENAI_API", api)
    monkeypatch.setenv("OPENAI_MODEL", "scripted-model")
    with ScriptedOpenAI(shape) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        await agent_turn(store_target, "s-2", FIRST)
        turn_one_requests = len(server.model_requests())
        await agent_turn(store_target, "s-2", SECOND)
        assert_turn_two_from_store(server, turn_one_requests)
        endpoint = "/responses" if api == "responses" else "/chat/completions"
        assert all(r.path.endswith(endpoint) for r in server.model_requests())
        if api == "responses":
            assert all(r.body.get("store") is False for r in server.model_requests())
