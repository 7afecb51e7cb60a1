"""``agent-stores migrate`` on SQLite files and the framework's own folders (in process)."""

from __future__ import annotations

import asyncio
import json
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest
from agent_framework import (
    AgentSession,
    Content,
    FileHistoryProvider,
    FileSessionStore,
    FileSystemAgentFileStore,
    Message,
)
from typer.testing import CliRunner

from agent_stores.cli import app
from agent_stores.cli._migrate import migrate as migrate_in_process
from agent_stores.core import open_stores

warnings.filterwarnings("ignore", message=r".*is experimental")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def migrate_json(*args: str, code: int = 0) -> dict[str, Any]:
    exit_code, out, err = run("migrate", *args, "--json")
    assert exit_code == code, out + err
    return json.loads(out)


def msg(text: str, role: str = "user") -> Message:
    return Message(role=role, contents=[text], message_id=f"id-{text}")


def save(url: str, session_id: str, *texts: str, namespace: str = "") -> None:
    async def main() -> None:
        async with open_stores(url) as stores:
            await stores.history_provider(namespace=namespace).save_messages(session_id, [msg(t) for t in texts])

    asyncio.run(main())


def held(url: str, session_id: str, namespace: str = "") -> list[str]:
    async def main() -> list[str]:
        async with open_stores(url) as stores:
            provider: Any = stores.history_provider(namespace=namespace)
            return [m.text for m in await provider.export_messages(session_id)]

    return asyncio.run(main())


def test_framework_folders_to_sqlite(tmp_path: Path) -> None:
    """FileHistoryProvider, FileSessionStore and FileSystemAgentFileStore folders, copied and verified."""
    folder = tmp_path / "agent-data"
    odd_id = "User Ünïcode/../x"  # stored by the framework under an encoded file name
    messages = [
        msg("hi"),
        Message(role="assistant", contents=[Content.from_function_call("c1", "f", arguments={"a": 1})]),
        Message(role="tool", contents=[Content.from_function_result("c1", result="ok")]),
    ]
    session = AgentSession(session_id="s1")
    session.state["memory"] = {"colour": "teal"}

    async def seed() -> None:
        history = FileHistoryProvider(folder / "history")
        await history.save_messages("s1", messages)
        await history.save_messages(odd_id, [msg("odd")])
        await FileSessionStore(folder / "sessions").set("s1", session)
        files = FileSystemAgentFileStore(folder / "files")
        await files.write("s1/preferences.md", "Favourite colour: teal\n")
        await files.create_directory("empty")

    asyncio.run(seed())
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    report = migrate_json(f"framework://{folder}", url)
    assert report["ok"] and not report["refused"]
    assert report["summary"]["history"] == {"copy": 2, "messages_copied": 4}
    assert report["summary"]["snapshot"] == {"copy": 1}
    assert report["summary"]["file"] == {"copy": 1}  # s1/preferences.md
    assert report["summary"]["folder"] == {"copy": 2}  # empty/, s1/
    assert all(item["verified"] for item in report["items"])

    async def check() -> None:
        async with open_stores(url) as stores:
            provider: Any = stores.history_provider()
            assert [m.to_dict() for m in await provider.export_messages("s1")] == [m.to_dict() for m in messages]
            assert [m.text for m in await provider.export_messages(odd_id)] == ["odd"]
            assert sorted(await provider.list_sessions()) == sorted(["s1", odd_id])
            restored = await stores.session_store().get("s1")
            assert restored is not None and restored.to_dict() == session.to_dict()
            files = stores.file_store()
            assert await files.read("s1/preferences.md") == "Favourite colour: teal\n"
            assert [e.name for e in await files.list_children("") if e.type == "directory"] == ["empty", "s1"]

    asyncio.run(check())
    again = migrate_json(f"framework://{folder}", url)
    assert {item["action"] for item in again["items"]} == {"skip"}


def test_different_history_on_the_target_is_refused_unless_append_or_replace(tmp_path: Path) -> None:
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    save(source, "s", "one", "two")
    save(source, "other", "x")
    save(target, "s", "mine")

    code, out, _ = run("migrate", source, target)
    assert code == 3
    assert "conflict" in out and "refused" in out and "--append" in out
    assert held(target, "s") == ["mine"] and held(target, "other") == []  # nothing written at all

    report = migrate_json(source, target, "--dry-run", "--append")
    assert report["dry_run"] and held(target, "s") == ["mine"]

    report = migrate_json(source, target, "--append")
    assert held(target, "s") == ["mine", "one", "two"] and held(target, "other") == ["x"]
    report = migrate_json(source, target, "--append")  # a re-run appends nothing twice
    assert {item["action"] for item in report["items"]} == {"skip"}

    report = migrate_json(source, target, "--replace")
    assert held(target, "s") == ["one", "two"]
    assert [i["action"] for i in report["items"] if i["name"] == "history/s"] == ["replace"]


def test_a_target_holding_the_beginning_gets_the_rest(tmp_path: Path) -> None:
    """The agent went on on the source after a first migration: the re-run copies the new messages."""
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    save(source, "s", "one")
    migrate_json(source, target, "--namespace", "")
    save(source, "s", "two")
    save(source, "s", "ns-only", namespace="team-b")
    report = migrate_json(source, target)  # every namespace the source holds
    actions = {item["name"]: item["action"] for item in report["items"] if item["kind"] == "history"}
    assert actions == {"history/s": "extend", "team-b/history/s": "copy"}
    assert held(target, "s") == ["one", "two"] and held(target, "s", "team-b") == ["ns-only"]


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path) -> None:
    db = f"sqlite:///{tmp_path / 'a.db'}"
    for args, expected in [
        (["nowhere", db], "expected a store URL"),
        (["nosuch://x", db], "no agent-stores backend"),
        ([db, f"framework://{tmp_path}"], "source only"),
        ([f"framework://{tmp_path}/missing", db], "none of the framework folders"),
        ([db, db, "--append", "--replace"], "exclude each other"),
    ]:
        code, out, err = run("migrate", *args)
        assert code == 2, (args, out, err)
        assert expected in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def test_todo_lists_and_checkpoints_are_copied_and_a_corrupt_snapshot_is_reported(tmp_path: Path) -> None:
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"

    async def seed() -> None:
        async with open_stores(source) as stores:
            driver = stores.object_driver()
            await driver.put("todos/s.json", b'{"items": []}')
            await driver.put("checkpoints/w/c1.json", b"{}")
            await stores.session_store().set("good", AgentSession(session_id="good"))
            await driver.put("sessions/bad.json", b"not json")

    asyncio.run(seed())
    report = migrate_json(source, target, code=1)
    actions = {(i["kind"], i["name"]): i["action"] for i in report["items"]}
    assert actions == {
        ("object", "checkpoints/w/c1.json"): "copy",
        ("object", "todos/s.json"): "copy",
        ("snapshot", "bad"): "error",
        ("snapshot", "good"): "copy",
    }

    async def check() -> None:
        async with open_stores(target) as stores:
            stored = await stores.object_driver().get("todos/s.json")
            assert stored is not None and stored.data == b'{"items": []}'
            assert await stores.session_store().get("good") is not None
        async with open_stores(source) as stores:  # the source is read, never changed
            stored = await stores.object_driver().get("sessions/bad.json")
            assert stored is not None and stored.data == b"not json"

    asyncio.run(check())


def test_concurrent_migration_reports_and_copies_exactly_what_one_at_a_time_does(tmp_path: Path) -> None:
    """Forty sessions in two scopes, files, snapshots and objects: ``--concurrency 8`` equals ``--concurrency 1``."""
    source = f"sqlite:///{tmp_path / 'source.db'}"

    async def seed() -> None:
        async with open_stores(source) as stores:
            for scope in (stores, stores.tenant("acme")):
                history = scope.history_provider()
                for index in range(20):
                    await history.save_messages(f"s{index}", [msg(f"{index}-a"), msg(f"{index}-b", "assistant")])
                    await scope.session_store().set(f"s{index}", AgentSession(session_id=f"s{index}"))
                files = scope.file_store()
                await files.create_directory("notes/deep")
                for index in range(5):
                    await files.write(f"notes/deep/{index}.md", f"note {index}\n")
            await stores.object_driver().put("todos/s1.json", b'{"items": []}')

    asyncio.run(seed())
    reports = {}
    for concurrency in ("1", "8"):
        target = f"sqlite:///{tmp_path / f'target-{concurrency}.db'}"
        reports[concurrency] = migrate_json(source, target, "--concurrency", concurrency)
        assert reports[concurrency]["ok"]
        assert held(target, "s7") == ["7-a", "7-b"]
    assert reports["1"]["summary"]["history"] == {"copy": 40, "messages_copied": 80}
    assert reports["1"]["summary"]["file"] == {"copy": 10}
    strip = [{k: v for k, v in i.items() if k != "verified"} for i in reports["1"]["items"]]
    assert strip == [{k: v for k, v in i.items() if k != "verified"} for i in reports["8"]["items"]]
    again = migrate_json(source, f"sqlite:///{tmp_path / 'target-8.db'}", "--concurrency", "8")
    assert {i["action"] for i in again["items"]} == {"skip"}, "a re-run copies nothing"


def test_concurrency_below_one_is_refused(tmp_path: Path) -> None:
    code, out, err = run(
        "migrate", f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}", "--concurrency", "0"
    )
    assert code == 2 and "concurrency" in (out + err).lower()


def test_the_worker_pool_runs_at_most_its_limit_at_once_and_stops_on_the_first_error() -> None:
    from agent_stores.core.bounded import run_bounded

    running, peak, done = 0, 0, []

    async def work(item: int) -> None:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        running -= 1
        done.append(item)

    asyncio.run(run_bounded(range(50), work, 4))
    assert peak == 4 and sorted(done) == list(range(50))

    started: list[int] = []

    async def fail_third(item: int) -> None:
        started.append(item)
        if item == 2:
            raise RuntimeError("boom")
        await asyncio.sleep(0.05)

    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(run_bounded(range(100), fail_third, 3))
    assert len(started) < 10, "the other workers went on after the first error"


def test_compacted_sessions_migrate_with_their_compactions(tmp_path: Path, bucket: Any, s3_prefix: str) -> None:
    """SQLite to SeaweedFS: the target's model view is the source's, summaries included, and re-runs extend it."""
    from agent_stores.testing.history import SuiteCompaction

    source, target = f"sqlite:///{tmp_path / 'a.db'}", bucket.url(s3_prefix)

    async def compact(keep: int) -> None:
        async with open_stores(source) as stores:
            provider: Any = stores.history_provider()
            assert await provider.compact("s", SuiteCompaction(keep=keep))

    def history(url: str, *flags: str) -> list[dict[str, Any]]:
        code, out, err = run("history", url, "s", "--json", *flags)
        assert code == 0, out + err
        return json.loads(out)["messages"]

    def same_views() -> None:
        for flags in ((), ("--model-view",)):
            assert history(target, *flags) == history(source, *flags), flags

    save(source, "s", *(f"q{i}" for i in range(5)))
    asyncio.run(compact(keep=2))
    report = migrate_json(source, target)
    [item] = [i for i in report["items"] if i["kind"] == "history"]
    assert (item["action"], item["source_messages"], item["target_messages"], item["verified"]) == ("copy", 5, 5, True)
    same_views()
    sent = [r["contents"][0]["text"] for r in history(target, "--model-view")]
    assert sent == ["summary of 3: q0 | q1 | q2", "q3", "q4"]

    save(source, "s", "q5", "q6")
    asyncio.run(compact(keep=1))
    report = migrate_json(source, target)
    assert [i["action"] for i in report["items"] if i["kind"] == "history"] == ["extend"]
    same_views()
    assert held(target, "s") == [f"q{i}" for i in range(7)]


def test_planning_reads_on_the_target_only_what_the_target_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session or snapshot the target does not list is planned as absent without a read there."""
    from agent_stores.cli import _migrate

    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"

    async def seed(url: str, sessions: list[str]) -> None:
        async with open_stores(url) as stores:
            for session_id in sessions:
                await stores.history_provider().save_messages(session_id, [msg(f"{session_id}-{url[-4:]}")])
                await stores.session_store().set(session_id, AgentSession(session_id=session_id))

    asyncio.run(seed(source, [f"s{i}" for i in range(12)]))
    asyncio.run(seed(target, ["s3"]))  # the target holds one of them: another history, the same snapshot
    reads: list[tuple[str, str | None]] = []
    read_history, read_snapshot = _migrate._read_history, _migrate._StoresSide.read_snapshot  # pyright: ignore[reportPrivateUsage]

    async def counted_history(side: Any, source_id: str, namespace: str, session_id: str | None, name: str) -> Any:
        if side.url == target:
            reads.append(("history", session_id))
        return await read_history(side, source_id, namespace, session_id, name)

    async def counted_snapshot(self: Any, rel_key: str, session_id: str | None) -> Any:
        if self.url == target:
            reads.append(("snapshot", session_id))
        return await read_snapshot(self, rel_key, session_id)

    monkeypatch.setattr(_migrate, "_read_history", counted_history)
    monkeypatch.setattr(_migrate._StoresSide, "read_snapshot", counted_snapshot)  # pyright: ignore[reportPrivateUsage]
    report = asyncio.run(_migrate.migrate(source, target, dry_run=True))
    assert sorted(reads) == [("history", "s3"), ("snapshot", "s3")]
    actions = {item.name: item.action for item in report.items if item.kind in ("history", "snapshot")}
    assert actions.pop("history/s3") == "conflict"  # read there, and found to differ
    assert actions.pop("s3") == "skip"  # read there, and found equal
    assert set(actions.values()) == {"copy"} and len(actions) == 22
    held_before = held(target, "s3")
    reads.clear()
    report = asyncio.run(_migrate.migrate(source, target, conflicts="append"))
    assert report.ok and held(target, "s5") == ["s5-a.db"] and held(target, "s3") == [*held_before, "s3-a.db"]


def _count_s3_requests(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Count the S3 requests of the clients the CLI makes from now on, per operation."""
    import boto3

    from agent_stores.s3 import _connect

    counts: dict[str, int] = {}

    def count(model: Any, **_: Any) -> None:
        counts[model.name] = counts.get(model.name, 0) + 1

    session = boto3.Session()
    session.events.register("before-call.s3", count)
    monkeypatch.setattr(_connect, "_SESSIONS", {None: session})
    return counts


def test_each_migrated_session_costs_two_puts_and_two_gets_on_s3(
    tmp_path: Path, bucket: Any, s3_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Copying a session (its history and snapshot) to SeaweedFS writes each once and reads each back once.

    The listings (planning, and reading the copied histories back together) do not grow with the
    sessions: more sessions add exactly two PUTs and two GETs each.
    """
    source = f"sqlite:///{tmp_path / 'a.db'}"

    async def seed(sessions: range) -> None:
        async with open_stores(source) as stores:
            for i in sessions:
                await stores.history_provider().save_messages(f"s{i}", [msg(f"s{i}-{n}") for n in range(3)])
                await stores.session_store().set(f"s{i}", AgentSession(session_id=f"s{i}"))

    costs: list[dict[str, int]] = []
    for run_number, sessions in enumerate((range(4), range(4, 12))):
        asyncio.run(seed(sessions))
        counts = _count_s3_requests(monkeypatch)
        report = asyncio.run(migrate_in_process(source, bucket.url(f"{s3_prefix}-{run_number}")))
        assert report.ok and {i.action for i in report.items} == {"copy"} and all(i.verified for i in report.items)
        costs.append(counts)
    small, large = costs
    assert (small["PutObject"], large["PutObject"]) == (2 * 4, 2 * 12)
    assert large["GetObject"] - small["GetObject"] == 2 * 8
    assert large.get("ListObjectsV2", 0) == small.get("ListObjectsV2", 0) <= 3
    assert set(large) <= {"PutObject", "GetObject", "ListObjectsV2", "HeadBucket"}, large


def test_a_history_the_target_does_not_hold_as_copied_fails_verification(
    tmp_path: Path, bucket: Any, s3_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading the copied histories back from one listing (a chunk at a time) still compares every record."""
    from agent_stores.cli import _migrate as module

    source, target = f"sqlite:///{tmp_path / 'a.db'}", bucket.url(s3_prefix)
    for session_id in ("a", "b", "c"):
        save(source, session_id, f"{session_id}1", f"{session_id}2")
    write = module._import  # pyright: ignore[reportPrivateUsage]

    async def lossy(provider: Any, session_id: str | None, entries: list[Any], *, absent: bool = False) -> None:
        await write(provider, session_id, entries[:-1] if session_id == "b" else entries, absent=absent)

    monkeypatch.setattr(module, "_import", lossy)
    monkeypatch.setattr(module, "VERIFY_CHUNK", 2)  # two chunks: a, b and then c
    report = asyncio.run(module.migrate(source, target))
    verdicts = {i.name: i.verified for i in report.items if i.kind == "history"}
    assert verdicts == {"history/a": True, "history/b": False, "history/c": True} and not report.ok


def test_each_session_migrated_from_s3_costs_its_listing_get_and_one_read(
    tmp_path: Path, bucket: Any, s3_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """From an S3 source, a one-segment session costs the GET its listing reads and the GET of its copy.

    The copy reads the sessions a chunk at a time from one listing of their range, not with
    listings of their own: more sessions add exactly two GETs each, and no listing.
    """
    costs: list[dict[str, int]] = []
    for run_number, sessions in enumerate((4, 12)):
        source = bucket.url(f"{s3_prefix}-{run_number}")

        async def seed(url: str, count: int) -> None:
            async with open_stores(url) as stores:
                for i in range(count):
                    await stores.history_provider().save_messages(f"s{i}", [msg(f"s{i}-{n}") for n in range(3)])

        asyncio.run(seed(source, sessions))
        counts = _count_s3_requests(monkeypatch)
        report = asyncio.run(migrate_in_process(source, f"sqlite:///{tmp_path / f'{run_number}.db'}"))
        costs.append(dict(counts))  # the migration's own requests (the next seed shares the client)
        assert report.ok and {i.action for i in report.items} == {"copy"} and all(i.verified for i in report.items)
        assert held(f"sqlite:///{tmp_path / f'{run_number}.db'}", "s3") == ["s3-0", "s3-1", "s3-2"]
    small, large = costs
    assert large["GetObject"] - small["GetObject"] == 2 * 8, (small, large)
    assert large.get("ListObjectsV2", 0) == small.get("ListObjectsV2", 0), (small, large)
    assert "PutObject" not in large, large


def test_sessions_changed_between_listing_and_copy_migrate_as_a_fresh_read_gives_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session appended to, deleted, or deleted and written again after the plan listed it is copied as it is then."""
    from agent_stores.cli import _migrate as module

    source, target = f"file://{tmp_path / 'source'}", f"sqlite:///{tmp_path / 'target.db'}"
    for session_id in ("kept", "appended", "deleted", "renewed"):
        save(source, session_id, f"{session_id}-1")
    monkeypatch.setattr(module, "COPY_CHUNK", 2, raising=False)  # two chunks

    async def change() -> None:
        async with open_stores(source) as stores:
            history = stores.history_provider()
            await history.save_messages("appended", [msg("appended-2")])
            await history.delete_session("deleted")
            await history.delete_session("renewed")
            await history.save_messages("renewed", [msg("renewed-2")])

    def progress(phase: str, done: int, _total: int) -> None:
        if phase == "copying" and done == 0:  # listed and planned, nothing copied yet
            runner = threading.Thread(target=lambda: asyncio.run(change()))
            runner.start()
            runner.join()

    report = asyncio.run(module.migrate(source, target, progress=progress))
    assert report.ok, report.to_json()
    assert (
        {s: held(target, s) for s in ("kept", "appended", "deleted", "renewed")}
        == {s: held(source, s) for s in ("kept", "appended", "deleted", "renewed")}
        == {"kept": ["kept-1"], "appended": ["appended-1", "appended-2"], "deleted": [], "renewed": ["renewed-2"]}
    )
