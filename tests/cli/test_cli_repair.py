"""``agent-stores history`` and ``repair`` on sessions missing segments, on a local folder and on SeaweedFS."""

from __future__ import annotations

import asyncio
import json
import uuid
import warnings
from pathlib import Path

import pytest
from agent_framework import Message
from typer.testing import CliRunner

from agent_stores.cli import app
from agent_stores.core import LogHistoryProvider, ObjectLogDriver, open_stores
from cli_support import Bucket

warnings.filterwarnings("ignore", message=r".*is experimental")


@pytest.fixture(params=["folder", "s3"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A fresh store: a local folder, or a prefix of the run's SeaweedFS bucket (credentials in the environment)."""
    if request.param == "folder":
        return f"file://{tmp_path / 'agent'}"
    bucket: Bucket = request.getfixturevalue("bucket")
    return bucket.url(f"repair-{uuid.uuid4().hex[:12]}")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def message(i: int) -> Message:
    return Message(role="user", contents=[f"m{i}"], message_id=f"id{i}")


def seed_with_gap(url: str, *, removed: int, above: int = 0, namespace: str = "") -> None:
    """Ten saves of one message each, then ``removed`` segments above the ``above`` oldest taken away behind the log."""

    async def main() -> None:
        async with open_stores(url) as stores:
            provider = stores.history_provider(namespace=namespace)
            for i in range(10):
                await provider.save_messages("s1", [message(i)])
            assert isinstance(provider, LogHistoryProvider) and isinstance(provider.driver, ObjectLogDriver)
            log = provider.driver
            key = provider.keys.history(provider.source_id, "s1")
            names = (await log.objects.list(f"{log.prefix}{key}/s", delimiter=None)).keys  # newest first
            assert len(names) == 10
            for name in names[len(names) - above - removed : len(names) - above]:
                assert await log.objects.delete(name)

    asyncio.run(main())


def history_ids(url: str, *options: str) -> list[str]:
    code, out, err = run("history", url, "s1", "--json", *options)
    assert code == 0, out + err
    return [m["message_id"] for m in json.loads(out)["messages"]]


def test_history_reports_a_gap_and_repair_keeps_the_records_after_it(url: str) -> None:
    seed_with_gap(url, removed=3)
    code, out, err = run("history", url, "s1")
    assert code == 4, out + err
    assert "segments 1 to 3 (records 0 to 2)" in err and "agent-stores repair" in err, err
    assert "Traceback" not in err + out

    code, out, err = run("repair", url, "s1", "--dry-run", "--json")
    assert code == 4, out + err
    report = json.loads(out)
    assert report["status"] == "would-repair" and report["records"] == 10
    assert report["gaps"] == [{"first_seq": 1, "last_seq": 3, "first_record": 0, "end_record": 3}]
    assert report["lost"] == [{"first": 0, "end": 3}] and report["dropped"] == []
    assert report["kept"] == [{"first": 3, "end": 10}]
    assert run("history", url, "s1")[0] == 4, "a dry run writes nothing"

    code, out, err = run("repair", url, "s1")
    assert code == 0, out + err
    assert "lost: records 0 to 2 (3 records)" in out and "kept: records 3 to 9 (7 records)" in out, out
    assert "the session holds 7 messages" in out, out
    assert history_ids(url) == [f"id{i}" for i in range(3, 10)]
    code, out, _ = run("repair", url, "s1")
    assert code == 0 and "nothing to repair" in out

    async def goes_on() -> None:
        async with open_stores(url) as stores:
            provider = stores.history_provider()
            await provider.save_messages("s1", [message(10)])
            assert [m.message_id for m in await provider.get_messages("s1")] == [f"id{i}" for i in range(3, 11)]

    asyncio.run(goes_on())
    assert history_ids(url) == [f"id{i}" for i in range(3, 11)]


def test_a_store_that_read_the_session_before_the_repair_reads_and_saves_after_it(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'agent'}"
    seed_with_gap(url, removed=2)

    async def main() -> None:
        async with open_stores(url) as stores:
            provider = stores.history_provider(max_messages=3)
            assert [m.message_id for m in await provider.get_messages("s1")] == ["id7", "id8", "id9"]
            code, out, err = await asyncio.to_thread(run, "repair", url, "s1")
            assert code == 0, out + err
            await provider.save_messages("s1", [message(10)])
            assert [m.message_id for m in await provider.get_messages("s1")] == ["id8", "id9", "id10"]

    asyncio.run(main())
    assert history_ids(url) == [f"id{i}" for i in range(2, 11)]


def test_a_gap_in_the_middle_drops_the_records_before_it_unless_keep_all(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'agent'}"
    seed_with_gap(url, removed=2, above=3, namespace="tenant")  # segments 4 and 5: records 3 and 4
    code, out, err = run("repair", url, "s1", "--namespace", "tenant", "--dry-run", "--json")
    assert code == 4, out + err
    report = json.loads(out)
    assert report["lost"] == [{"first": 3, "end": 5}] and report["dropped"] == [{"first": 0, "end": 3}]
    assert [m["message_id"] for m in report["dropped_messages"]] == ["id0", "id1", "id2"]
    code, out, err = run("repair", url, "s1", "--namespace", "tenant", "--dry-run")
    assert code == 4 and "--keep-all keeps them" in out and "dry run" in out, out + err
    code, out, err = run("repair", url, "s1", "--namespace", "tenant", "--keep-all")
    assert code == 0, out + err
    assert "dropped: none" in out and "kept: records 0 to 2 and records 5 to 9 (8 records)" in out, out
    assert history_ids(url, "--namespace", "tenant") == ["id0", "id1", "id2", *(f"id{i}" for i in range(5, 10))]


def test_repair_refuses_what_it_cannot_repair(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'agent'}"
    seed_with_gap(url, removed=1)
    code, _, err = run("repair", url, "unknown")
    assert code == 2 and "no session 'unknown'" in err and "no history is stored" in err, err
    code, _, err = run("repair", url, "s1", "--namespace", "other")
    assert code == 2, err
    sqlite = f"sqlite:///{tmp_path / 'agent.db'}"
    code, _, err = run("repair", sqlite, "s1")
    assert code == 2 and "not an object-store log" in err, err
