"""``agent-stores upgrade`` on every backend: tenant data in release 0.1's layout moves into the tenants' roots.

Release 0.1's tenant views kept a tenant's files in the folder ``tenants/<tenant>/`` of the file
store, its sessions under the id ``tenants/<tenant>/<id>`` and its history in the namespace
``tenants/<tenant>``. The tests lay data down exactly so, through the unscoped stores, and
check that after the upgrade the tenant views read all of it, nothing is left behind, and
data outside the tenants is untouched.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agent_framework import AgentSession, Message
from typer.testing import CliRunner

from agent_stores.cli import app
from agent_stores.core import key_segment
from agents_support import StoreTarget

pytestmark = pytest.mark.asyncio

TENANTS = ["acme", "Team X/1"]  # a literal id, and one whose segment is encoded


async def _lay_down_release_0_1(target: StoreTarget) -> None:
    async with target.open() as stores:
        files, sessions = stores.file_store(), stores.session_store()
        for tenant in TENANTS:
            root = f"tenants/{key_segment(tenant)}"
            await files.write(f"{root}/memories/notes.md", f"notes of {tenant}")
            await files.create_directory(f"{root}/empty")
            session = AgentSession(session_id="chat-1")
            session.state["owner"] = tenant
            await sessions.set(f"{root}/chat-1", session)
            history: Any = stores.history_provider(namespace=f"tenants/{tenant}")
            await history.save_messages("chat-1", [Message(role="user", contents=[f"hello from {tenant}"])])
        # outside every tenant: never touched by the upgrade
        await files.write("shared/readme.md", "shared")
        await sessions.set("chat-1", AgentSession(session_id="chat-1"))
        await stores.history_provider().save_messages("chat-1", [Message(role="user", contents=["unscoped"])])


async def _upgrade(target: StoreTarget, *options: str, code: int = 0) -> dict[str, Any]:
    result = await asyncio.to_thread(CliRunner().invoke, app, ["upgrade", target.url, "--json", *options])
    assert result.exit_code == code, result.output
    return json.loads(result.stdout)


async def _tenant_view(target: StoreTarget, tenant: str) -> dict[str, Any]:
    async with target.open() as stores:
        view = stores.tenant(tenant)
        history: Any = view.history_provider()
        session = await view.session_store().get("chat-1")
        files = view.file_store()
        return {
            "history": [m.text for m in await history.export_messages("chat-1")],
            "owner": None if session is None else session.state.get("owner"),
            "notes": await files.read("memories/notes.md"),
            "folders": sorted(e.name for e in await files.list_children("") if e.type == "directory"),
        }


async def test_upgrade_moves_every_tenant_into_its_root(
    store_target: StoreTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in store_target.env.items():
        monkeypatch.setenv(name, value)
    await _lay_down_release_0_1(store_target)
    assert [await _tenant_view(store_target, t) for t in TENANTS] == [
        {"history": [], "owner": None, "notes": None, "folders": []}
    ] * len(TENANTS)

    planned = await _upgrade(store_target, "--dry-run")
    assert planned["ok"] and planned["dry_run"]
    kinds = sorted((i["kind"], i["tenant"]) for i in planned["items"])
    assert kinds == sorted([(k, t) for t in TENANTS for k in ("history", "session", "file", "file")])
    assert {i["action"] for i in planned["items"]} == {"move"}
    assert (await _tenant_view(store_target, "acme"))["history"] == []  # a dry run writes nothing

    report = await _upgrade(store_target)
    assert report["ok"] and {i["action"] for i in report["items"]} == {"move"}
    for tenant in TENANTS:
        assert await _tenant_view(store_target, tenant) == {
            "history": [f"hello from {tenant}"],
            "owner": tenant,
            "notes": f"notes of {tenant}",
            "folders": ["empty", "memories"],
        }
    async with store_target.open() as stores:
        # nothing is left in the old places, and what lies outside the tenants is as it was
        assert [e.name for e in await stores.file_store().list_children("")] == ["shared"]
        assert await stores.file_store().read("shared/readme.md") == "shared"
        old: Any = stores.history_provider(namespace="tenants/acme")
        assert await old.list_sessions() == []
        assert await stores.session_store().get("chat-1") is not None
        assert [n.name for n in await stores.list_namespaces("history")] == [""]
        assert sorted(t.name or "" for t in await stores.list_tenants()) == sorted(TENANTS)

    again = await _upgrade(store_target)
    assert again == {**again, "ok": True, "items": []}


async def test_upgrade_leaves_a_conflicting_item_where_it_was(
    store_target: StoreTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in store_target.env.items():
        monkeypatch.setenv(name, value)
    await _lay_down_release_0_1(store_target)
    async with store_target.open() as stores:
        await stores.tenant("acme").file_store().write("memories/notes.md", "written since, by the new layout")
    report = await _upgrade(store_target, code=1)
    conflicts = [i for i in report["items"] if i["action"] == "conflict"]
    assert [(i["kind"], i["tenant"], i["name"]) for i in conflicts] == [("file", "acme", "memories/notes.md")]
    async with store_target.open() as stores:
        assert await stores.file_store().read("tenants/acme/memories/notes.md") == "notes of acme"
        assert await stores.tenant("acme").file_store().read("memories/notes.md") == "written since, by the new layout"
        assert await stores.tenant("acme").session_store().get("chat-1") is not None  # the rest moved
