"""The three ways to wire stores into an agent (docs/usage.md), run as written against the scripted server.

examples/agent_history.py (a plain ``Agent`` with our history provider) and
examples/hosted_tenants.py (hosting code behind tenant views) run as processes;
examples/harness_agent.py runs in ``test_agents_harness`` on every backend, and here with
``--file-access`` (its ``turn`` in process).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agents_support import FIRST, ScriptedOpenAI, StoreTarget

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _run(server: ScriptedOpenAI, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "AGENT_STORES_OPENAI"))}
    env |= {"OPENAI_BASE_URL": server.base_url, "OPENAI_MODEL": "scripted-model"}
    done = subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_plain_agent_continues_from_the_history_provider(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    with ScriptedOpenAI("chat-only") as server:
        _run(server, str(EXAMPLES / "agent_history.py"), "My name is Ada.", "--url", url)
        _run(server, str(EXAMPLES / "agent_history.py"), "What is my name?", "--url", url)
        first, second = server.model_requests()
        assert "My name is Ada." not in server.texts(first)[:-1]
        assert server.texts(second)[:2] == ["My name is Ada.", "Hello."]  # turn 1, from the store
        assert first.body.get("store") is False and second.body.get("store") is False


def test_hosting_code_keeps_each_tenant_to_itself(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'hosted.db'}"
    with ScriptedOpenAI("chat-only") as server:
        out = [line for line in _run(server, str(EXAMPLES / "hosted_tenants.py"), "--url", url).splitlines() if line]
        alice_first, bob, alice_second = out[:3]
        assert "written" in alice_first
        assert "teal" not in bob and "teal" in alice_second  # the same key, another tenant: nothing of Alice's
        assert out[3:] == ["alice holds 8 messages", "bob holds 4 messages"]
        for request in server.model_requests():
            texts = server.texts(request)
            if "What is my favourite colour?" in texts and FIRST not in texts:
                break
        else:
            pytest.fail("no request of Bob's went out without Alice's conversation")


@pytest.mark.asyncio
async def test_the_harness_agent_with_file_access(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(EXAMPLES))
    try:
        import harness_agent
    finally:
        sys.path.pop(0)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AGENT_STORES_OPENAI_API", raising=False)
    target = StoreTarget("sqlite", f"sqlite:///{tmp_path / 'agent.db'}")
    with ScriptedOpenAI("chat-only") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        await harness_agent.turn(target.url, "s", "Hello there.", file_access=True)
        await harness_agent.turn(target.url, "s", "Hello again.")
        with_access, without = server.model_requests()
    tools = [[t["function"]["name"] for t in r.body.get("tools", [])] for r in (with_access, without)]
    assert "file_memory_write" in tools[0] and "file_memory_write" in tools[1]
    extra = set(tools[0]) - set(tools[1])
    assert extra and all(name.startswith("file") or "file" in name for name in extra), extra
