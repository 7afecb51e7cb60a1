"""The three ways to wire stores into an agent (docs/usage.md), run as written against the scripted server.

examples/agent_history.py (a plain ``Agent`` with our history provider),
examples/hosted_tenants.py (hosting code behind tenant views) and examples/harness_agent.py
with file access run in process (their ``main``); harness_agent.py also runs as two
processes in ``test_agents_harness`` on every backend. Each of them, and the README's
examples/remember.py, also runs as the docs show it, pasted into ``python -c``.
"""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from docs_programs import program_of, run_pasted

from agents_support import FIRST, SECOND, ScriptedOpenAI

pytestmark = pytest.mark.asyncio

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def _example(name: str) -> Any:
    sys.path.insert(0, str(EXAMPLES))
    try:
        return importlib.import_module(name)
    finally:
        sys.path.pop(0)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedOpenAI]:
    """The scripted server, and this process's OPENAI_* set as a user would for it."""
    for name in ("OPENAI_API_KEY", "AGENT_STORES_OPENAI_API"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OPENAI_MODEL", "scripted-model")
    with ScriptedOpenAI("chat-only") as scripted:
        monkeypatch.setenv("OPENAI_BASE_URL", scripted.base_url)
        yield scripted


async def test_a_plain_agent_continues_from_the_history_provider(tmp_path: Path, server: ScriptedOpenAI) -> None:
    """Each turn opens its stores and builds its agent afresh, as a new process of the example does."""
    agent_history = _example("agent_history")
    url = f"sqlite:///{tmp_path / 'chat.db'}"
    assert await agent_history.main("My name is Ada.", url, "chat") == "Hello."
    await agent_history.main("What is my name?", url, "chat")
    first, second = server.model_requests()
    assert "My name is Ada." not in server.texts(first)[:-1]
    assert server.texts(second)[:2] == ["My name is Ada.", "Hello."]  # turn 1, from the store
    assert first.body.get("store") is False and second.body.get("store") is False


async def test_hosting_code_keeps_each_tenant_to_itself(
    tmp_path: Path, server: ScriptedOpenAI, capsys: pytest.CaptureFixture[str]
) -> None:
    await _example("hosted_tenants").main(f"sqlite:///{tmp_path / 'hosted.db'}")
    out = [line for line in capsys.readouterr().out.splitlines() if line]
    alice_first, bob, alice_second = out[:3]
    assert "written" in alice_first
    assert "teal" not in bob and "teal" in alice_second  # the same key, another tenant: nothing of Alice's
    assert out[3:] == ["alice holds 8 messages", "bob holds 4 messages"]
    asking = [server.texts(r) for r in server.model_requests() if SECOND in server.texts(r)]
    bob_requests = [texts for texts in asking if FIRST not in texts]
    assert len(asking) == 4 and len(bob_requests) == 2  # Alice's second turn carries her first; Bob's nothing of it
    assert not any("teal" in text for texts in bob_requests for text in texts)


async def test_the_harness_agent_with_file_access(tmp_path: Path, server: ScriptedOpenAI) -> None:
    harness_agent = _example("harness_agent")
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    await harness_agent.main("Hello there.", url, "s", file_access=True)
    await harness_agent.main("Hello again.", url, "s")
    with_access, without = server.model_requests()
    tools = [[t["function"]["name"] for t in r.body.get("tools", [])] for r in (with_access, without)]
    assert "file_memory_write" in tools[0] and "file_memory_write" in tools[1]
    extra = set(tools[0]) - set(tools[1])
    assert extra and all("file" in name for name in extra), extra


async def test_the_readme_example_remembers_across_runs(tmp_path: Path, server: ScriptedOpenAI) -> None:
    """examples/remember.py, the README's whole example: the second run sends the model the first."""
    remember = _example("remember")
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    await remember.main(FIRST, url)
    first_requests = len(server.model_requests())
    await remember.main(SECOND, url)
    later = server.model_requests()[first_requests:]
    assert later and all(FIRST in server.texts(request) for request in later)


async def test_a_long_conversation_is_summarised_once_and_kept_whole(tmp_path: Path, server: ScriptedOpenAI) -> None:
    """examples/long_conversation.py: a summary is asked for once, reused on later turns; every message stays."""
    long_conversation = _example("long_conversation")
    url = f"sqlite:///{tmp_path / 'long.db'}"
    for turn in range(10):
        await long_conversation.main(f"Turn {turn}: tell me more.", url, "trip")
    # The summariser's requests carry no tools; the agent's carry the harness's.
    summaries = [r for r in server.model_requests() if not r.body.get("tools")]
    turns = [server.texts(r) for r in server.model_requests() if r.body.get("tools")]
    assert 1 <= len(summaries) <= 2, f"expected the summary made once (and its in-run twin), got {len(summaries)}"
    assert len(turns) == 10
    assert "Turn 0: tell me more." not in turns[-1], "the last turn was sent the summarised messages"
    assert "Hello." in turns[-1][:3], "the last turn was not sent the stored summary"


PASTED = [
    ("remember.py", [FIRST]),
    ("agent_history.py", ["My name is Ada."]),
    ("harness_agent.py", [FIRST]),
    ("hosted_tenants.py", []),
    ("long_conversation.py", ["Let us plan a trip to Lisbon."]),
]


@pytest.mark.parametrize(("name", "args"), PASTED, ids=[name for name, _ in PASTED])
async def test_the_docs_programs_run_as_pasted(
    name: str, args: list[str], tmp_path: Path, server: ScriptedOpenAI
) -> None:
    """The program as README.md and docs/usage.md show it, in ``python -W error::Warning -c`` in an empty folder."""

    def run() -> tuple[subprocess.CompletedProcess[str], list[str]]:
        done = run_pasted(program_of(EXAMPLES / name), *args, cwd=tmp_path)
        return done, [p.suffix for p in tmp_path.iterdir()]

    done, made = await asyncio.to_thread(run)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stderr == "", done.stderr
    assert done.stdout.strip() and server.model_requests()
    assert made == [".db"]  # its default store: one SQLite file where it ran
