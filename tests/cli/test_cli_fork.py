"""``agent-stores fork`` on a real SQLite file and a SeaweedFS bucket: copies, refuses a used destination."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from agent_framework import AgentSession, Message
from typer.testing import CliRunner

from agent_stores.cli import app
from agent_stores.core import open_stores
from cli_support import Bucket


def seed(url: str) -> None:
    async def main() -> None:
        async with open_stores(url) as stores:
            history = stores.history_provider()
            for i in range(3):
                await history.save_messages("s1", [Message(role="user", contents=[f"m{i}"], message_id=f"id{i}")])
            await stores.session_store().set("s1", AgentSession(session_id="s1"))

    asyncio.run(main())


def texts(url: str, session_id: str) -> list[str]:
    async def main() -> list[str]:
        async with open_stores(url) as stores:
            return [m.text for m in await stores.history_provider().export_messages(session_id)]

    return asyncio.run(main())


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout if result.exit_code == 0 else result.output


def _fork_round(url: str) -> None:
    seed(url)
    code, out = run("fork", url, "s1", "s2", "--upto", "2", "--json")
    assert code == 0, out
    report = json.loads(out)
    assert (report["messages"], report["snapshot"], report["todos"]) == (2, True, 0)
    assert texts(url, "s2") == ["m0", "m1"] and texts(url, "s1") == ["m0", "m1", "m2"]
    code, out = run("fork", url, "s1", "s2")
    assert code == 3 and "already holds" in out, out
    assert texts(url, "s2") == ["m0", "m1"], "a refused fork changed the destination"
    code, out = run("fork", url, "nobody", "s3")
    assert code == 2 and "holds no history" in out, out
    code, out = run("fork", url, "s1", "s4", "--upto", "9")
    assert code == 2 and "past the 3 messages" in out, out
    code, out = run("fork", url, "s1", "s5")
    assert code == 0 and "forked 's1' into 's5': 3 messages, a snapshot, 0 todo lists" in " ".join(out.split()), out


def test_fork_on_sqlite(tmp_path: Path) -> None:
    _fork_round(f"sqlite:///{tmp_path / 'agent.db'}")


def test_fork_on_s3(bucket: Bucket, s3_prefix: str) -> None:
    _fork_round(bucket.url(s3_prefix))


def test_fork_of_a_missing_store_creates_nothing(tmp_path: Path) -> None:
    code, out = run("fork", f"sqlite:///{tmp_path / 'absent.db'}", "a", "b")
    assert code == 2, out
    assert not (tmp_path / "absent.db").exists()


def test_history_marks_what_a_compaction_decided_and_shows_the_model_view(tmp_path: Path) -> None:
    from agent_framework import SlidingWindowStrategy

    url = f"sqlite:///{tmp_path / 'agent.db'}"
    seed(url)

    async def compact() -> None:
        async with open_stores(url) as stores:
            history: Any = stores.history_provider()
            assert await history.compact("s1", SlidingWindowStrategy(keep_last_groups=1))

    asyncio.run(compact())
    code, out = run("history", url, "s1", "--json")
    assert code == 0, out
    rows = json.loads(out)["messages"]
    assert [(r["contents"][0]["text"], r["stored"], r["excluded"]) for r in rows] == [
        ("m0", 0, True),
        ("m1", 1, True),
        ("m2", 2, False),
    ]
    code, out = run("history", url, "s1", "--model-view", "--json")
    assert [r["contents"][0]["text"] for r in json.loads(out)["messages"]] == ["m2"]
    code, out = run("history", url, "s1")
    assert code == 0 and "[x] user       m0" in out and "[x]" not in out.splitlines()[-1], out


def test_retain_drops_what_a_compaction_excluded_and_keeps_the_model_view(tmp_path: Path) -> None:
    from agent_framework import SlidingWindowStrategy

    url = f"sqlite:///{tmp_path / 'agent.db'}"
    seed(url)

    async def compact() -> None:
        async with open_stores(url) as stores:
            history: Any = stores.history_provider()
            assert await history.compact("s1", SlidingWindowStrategy(keep_last_groups=1))

    asyncio.run(compact())
    _, sent = run("history", url, "s1", "--model-view", "--json")
    code, out = run("retain", url, "s1", "--json")
    assert code == 0, out
    assert (json.loads(out)["dropped"], json.loads(out)["stored"]) == (2, 1)
    assert texts(url, "s1") == ["m2"]
    code, out = run("history", url, "s1", "--model-view", "--json")

    def rows(document: str) -> list[dict[str, Any]]:  # without the marks of a compacted log (position, excluded)
        return [
            {k: v for k, v in r.items() if k not in ("stored", "excluded")} for r in json.loads(document)["messages"]
        ]

    assert rows(out) == rows(sent)
    code, out = run("retain", url, "s1")
    assert code == 0 and "dropped 0 messages, 1 record stored" in " ".join(out.split()), out
    code, out = run("retain", url, "nobody")
    assert code == 0 and "dropped 0 messages" in out, out
