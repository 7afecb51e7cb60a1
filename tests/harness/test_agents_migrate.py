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


async def _tenant_contents(target: StoreTarget, tenant: str) -> dict[str, Any]:
    from agent_framework import AgentSession

    async with target.open() as stores:
        view = stores.tenant(tenant)
        history: Any = view.history_provider(namespace="support")
        snapshot = await view.session_store().get("chat")
        todos = await view.todo_store().load_state(AgentSession(session_id="chat"), source_id="todos")
        return {
            "history": [m.text for m in await history.export_messages("chat")],
            "file": await view.file_store().read("memories/notes.md"),
            "snapshot": None if snapshot is None else snapshot.state,
            "todos": [item.title for item in todos[0]],
            "checkpoints": len(await view.checkpoint_storage().list_checkpoints(workflow_name="flow")),
        }


async def test_every_tenant_is_copied_by_default(
    store_pair: tuple[StoreTarget, StoreTarget], monkeypatch: pytest.MonkeyPatch
) -> None:
    from agent_framework import AgentSession, Message, WorkflowCheckpoint
    from agent_framework._harness._todo import TodoItem

    source, target = store_pair
    for name, value in source.env.items() | target.env.items():
        monkeypatch.setenv(name, value)
    tenants = ["acme", "Team X/1"]
    async with source.open() as stores:
        for tenant in tenants:
            view = stores.tenant(tenant)
            history: Any = view.history_provider(namespace="support")
            await history.save_messages("chat", [Message(role="user", contents=[f"hi from {tenant}"])])
            await view.file_store().write("memories/notes.md", f"notes of {tenant}")
            session = AgentSession(session_id="chat")
            session.state["owner"] = tenant
            await view.session_store().set("chat", session)
            await view.todo_store().save_state(session, [TodoItem(id=1, title=tenant)], next_id=2, source_id="todos")
            await view.checkpoint_storage().save(WorkflowCheckpoint(workflow_name="flow", graph_signature_hash="g"))
    expected = {tenant: await _tenant_contents(source, tenant) for tenant in tenants}
    assert expected["acme"]["history"] == ["hi from acme"] and expected["acme"]["checkpoints"] == 1

    only = await asyncio.to_thread(
        CliRunner().invoke, app, ["migrate", source.url, target.url, "--tenant", "acme", "--json"]
    )
    assert only.exit_code == 0, only.output
    assert {item["tenant"] for item in json.loads(only.stdout)["items"]} == {"acme"}
    assert await _tenant_contents(target, "Team X/1") == {
        "history": [],
        "file": None,
        "snapshot": None,
        "todos": [],
        "checkpoints": 0,
    }

    report = await _migrate(source, target)
    assert report["ok"]
    assert {tenant: await _tenant_contents(target, tenant) for tenant in tenants} == expected
