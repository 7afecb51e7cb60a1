"""``agent-stores sessions / history / files / show`` on a real SQLite file (in process, read only)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from agent_framework import AgentSession, Message
from typer.testing import CliRunner

from agent_stores.cli import app
from agent_stores.core import open_stores


def seed(url: str) -> None:
    async def main() -> None:
        async with open_stores(url) as stores:
            history = stores.history_provider()
            for i in range(3):
                await history.save_messages("s1", [Message(role="user", contents=[f"m{i}"], message_id=f"id{i}")])
            await stores.history_provider(namespace="tenant").save_messages(
                "t1", [Message(role="user", contents=["t"])]
            )
            await stores.file_store().write("mem/a.md", "hello")
            await stores.session_store().set("s1", AgentSession(session_id="s1"))

    asyncio.run(main())


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout


def test_inspect_commands_page_and_print_json(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    seed(url)
    code, out = run("sessions", url, "--json")
    assert code == 0 and json.loads(out)["sessions"] == [{"session_id": "s1", "messages": 3, "snapshot": True}]
    code, out = run("sessions", url, "--namespace", "tenant", "--json")
    assert [s["session_id"] for s in json.loads(out)["sessions"]] == ["t1"]
    code, out = run("history", url, "s1", "--limit", "2", "--json")
    page = json.loads(out)
    assert page["total"] == 3 and page["next_offset"] == 2
    assert [m["message_id"] for m in page["messages"]] == ["id0", "id1"]
    code, out = run("history", url, "s1", "--offset", "2", "--json")
    assert [m["message_id"] for m in json.loads(out)["messages"]] == ["id2"]
    code, out = run("files", url, "--recursive", "--json")
    assert json.loads(out)["entries"] == [
        {"path": "mem/", "type": "directory"},
        {"path": "mem/a.md", "type": "file", "characters": 5},
    ]
    code, out = run("show", url, "s1", "--json")
    assert code == 0 and json.loads(out)["snapshot"]["session_id"] == "s1"


def test_inspect_bad_input_exits_2(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    seed(url)
    assert run("show", url, "missing")[0] == 2
    assert run("sessions", "not-a-url")[0] == 2
    assert run("files", "nosuchscheme://x")[0] == 2
