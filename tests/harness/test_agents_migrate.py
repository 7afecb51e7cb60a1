"""``agent-stores migrate`` between backends: an agent resumes on the target where it stopped on the source.

Turn 1 runs a real harness agent (the framework's OpenAI client against the scripted server) on
the source store; the command copies everything to a store on another backend; the target's
history, files and snapshot equal the source's, a re-run copies nothing, and turn 2 on the
target sends the model turn 1 from the target.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_stores.cli import app
from agents_support import FIRST, SECOND, ScriptedOpenAI, StoreTarget, agent_turn, assert_turn_two_from_store

pytestmark = pytest.mark.asyncio


async def _everything(target: StoreTarget, session_id: str) -> dict[str, Any]:
    async with target.open() as stores:
        files = stores.file_store()
        snapshot = await stores.session_store().get(session_id)
        names = [e.name for e in await files.list_children(session_id)]
        return {
            "history": [m.to_dict() for m in await stores.history_provider().export_messages(session_id)],
            "files": {name: await files.read(f"{session_id}/{name}") for name in names},
            "snapshot": None if snapshot is None else snapshot.to_dict(),
        }


async def _migrate(source: StoreTarget, target: StoreTarget) -> dict[str, Any]:
    # The command runs its own event loop: a thread of its own, as in a shell.
    result = await asyncio.to_thread(CliRunner().invoke, app, ["migrate", source.url, target.url, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


async def test_an_agent_resumes_on_the_target_where_it_stopped_on_the_source(
    store_pair: tuple[StoreTarget, StoreTarget], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, target = store_pair
    for name, value in source.env.items() | target.env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("AGENT_STORES_OPENAI_API", raising=False)
    monkeypatch.setenv("OPENAI_MODEL", "scripted-model")
    with ScriptedOpenAI("chat-only") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        await agent_turn(source, "s-1", FIRST)
        turn_one_requests = len(server.model_requests())

        report = await _migrate(source, target)
        assert report["ok"] and report["summary"]["history"] == {"copy": 1, "messages_copied": 4}
        assert report["summary"]["snapshot"] == {"copy": 1}
        assert all(item["verified"] for item in report["items"])
        before = await _everything(source, "s-1")
        assert before["history"] and before["snapshot"] and before["files"]
        assert await _everything(target, "s-1") == before

        again = await _migrate(source, target)  # idempotent: everything is already there
        assert {item["action"] for item in again["items"]} == {"skip"}

        assert "teal" in await agent_turn(target, "s-1", SECOND)
        assert_turn_two_from_store(server, turn_one_requests)
    assert len((await _everything(target, "s-1"))["history"]) > len(before["history"])
    assert await _everything(source, "s-1") == before  # the source is untouched
