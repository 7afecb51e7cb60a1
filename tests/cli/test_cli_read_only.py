"""Commands that read never create anything: a missing store, session or folder is an error naming it (exit 2).

On real SQLite files, local folders and SeaweedFS buckets, in process (``CliRunner``).
"""

from __future__ import annotations

import asyncio
import json
import uuid
import warnings
from pathlib import Path

import pytest
from agent_framework import AgentSession, Message
from typer.testing import CliRunner

from agent_stores.cli import app
from agent_stores.core import open_stores
from cli_support import Bucket

warnings.filterwarnings("ignore", message=r".*is experimental")


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


def seed(url: str) -> None:
    """A session with history, snapshot and a file; a tenant's session with the same."""

    async def main() -> None:
        async with open_stores(url) as stores:
            await stores.history_provider().save_messages("s1", [Message(role="user", contents=["hi"])])
            await stores.session_store().set("s1", AgentSession(session_id="s1"))
            await stores.file_store().write("mem/a.md", "hello")
            acme = stores.tenant("acme")
            await acme.history_provider().save_messages("t1", [Message(role="user", contents=["tenant"])])
            await acme.session_store().set("t1", AgentSession(session_id="t1"))
            await acme.file_store().write("notes.md", "tenant file")

    asyncio.run(main())


#: Every command that only reads, with the arguments after the URL.
READERS: list[tuple[str, ...]] = [
    ("sessions",),
    ("sessions", "--snapshots"),
    ("history", "s1"),
    ("show", "s1"),
    ("files",),
    ("files", "mem"),
    ("repair", "s1", "--dry-run"),
    ("upgrade", "--dry-run"),
    ("stats",),
    ("sweep", "--idle", "1d", "--dry-run"),
]


def _ids(commands: list[tuple[str, ...]]) -> list[str]:
    return ["-".join(c).replace("--", "") for c in commands]


@pytest.mark.parametrize("command", READERS, ids=_ids(READERS))
def test_a_missing_sqlite_file_is_an_error_and_is_not_created(tmp_path: Path, command: tuple[str, ...]) -> None:
    url = f"sqlite:///{tmp_path / 'typo.db'}"
    code, out, err = run(command[0], url, *command[1:])
    assert code == 2, out + err
    if command[0] != "repair":  # repair refuses SQLite first: it has no segments to repair
        assert "typo.db' does not exist" in err, err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", READERS, ids=_ids(READERS))
def test_a_missing_folder_is_an_error_and_is_not_created(tmp_path: Path, command: tuple[str, ...]) -> None:
    url = f"file://{tmp_path / 'typo'}"
    code, out, err = run(command[0], url, *command[1:])
    assert code == 2 and "typo' does not exist" in err, out + err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("command", READERS, ids=_ids(READERS))
def test_a_missing_bucket_is_an_error_and_is_not_created(bucket: Bucket, command: tuple[str, ...]) -> None:
    missing = f"cli-missing-{uuid.uuid4().hex[:8]}"
    url = bucket.url("agent", bucket=missing) + "&create_bucket=true"
    code, out, err = run(command[0], url, *command[1:])
    assert code == 2 and f"bucket '{missing}' does not exist" in err, out + err
    assert not bucket.exists(missing)


def test_a_sqlite_file_of_another_program_is_refused_and_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    path.write_bytes(b"")
    code, out, err = run("sessions", f"sqlite:///{path}")
    assert code == 2 and "holds no agent-stores tables" in err, out + err
    assert path.read_bytes() == b"" and [p.name for p in tmp_path.iterdir()] == ["other.db"]


@pytest.mark.parametrize("kind", ["sqlite", "folder"])
def test_migrate_from_a_missing_source_refuses_and_creates_neither_side(tmp_path: Path, kind: str) -> None:
    source = f"sqlite:///{tmp_path / 'typo.db'}" if kind == "sqlite" else f"file://{tmp_path / 'typo'}"
    code, out, err = run("migrate", source, f"sqlite:///{tmp_path / 'new.db'}", "--json")
    assert code == 2 and "does not exist" in err, out + err
    assert json.loads(out)["ok"] is False
    assert list(tmp_path.iterdir()) == []


def test_migrate_from_a_missing_bucket_refuses(bucket: Bucket, tmp_path: Path) -> None:
    missing = f"cli-missing-{uuid.uuid4().hex[:8]}"
    code, out, err = run("migrate", bucket.url("a", bucket=missing), f"sqlite:///{tmp_path / 'new.db'}")
    assert code == 2 and "does not exist" in err, out + err
    assert not bucket.exists(missing) and list(tmp_path.iterdir()) == []


def _same_store_spellings(tmp_path: Path, bucket: Bucket, prefix: str) -> list[tuple[str, str]]:
    (tmp_path / "dir").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "dir")
    return [
        (f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'a.db'}"),
        (f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path}/./a.db?busy_timeout=5"),
        (f"file://{tmp_path / 'dir'}", f"file://localhost{tmp_path / 'link'}/"),
        (bucket.url(prefix), bucket.url(prefix + "/")),
    ]


def test_migrate_into_the_same_store_however_spelled_refuses_and_writes_nothing(tmp_path: Path, bucket: Bucket) -> None:
    prefix = f"same-{uuid.uuid4().hex[:8]}"
    spellings = _same_store_spellings(tmp_path, bucket, prefix)
    for source in dict.fromkeys(source for source, _ in spellings):
        seed(source)
    for source, target in spellings:
        for extra in ((), ("--append",)):
            code, out, err = run("migrate", source, target, *extra)
            assert code == 2 and "are the same store" in err, (source, target, out + err)
        code, out, err = run("history", source, "s1", "--json")
        assert code == 0 and json.loads(out)["total"] == 1, "the refused migration wrote to the store"


def test_unknown_sessions_and_folders_are_said_the_same_way_in_every_command(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'agent'}"
    seed(url)
    for command in (("history", url, "nope"), ("repair", url, "nope", "--dry-run"), ("show", url, "nope")):
        code, out, err = run(*command)
        assert code == 2 and err.startswith(f"error: no session 'nope' in {url}"), (command, out + err)
    code, out, err = run("history", url, "s1", "--namespace", "other")
    assert code == 2 and "no session 's1'" in err and "namespace 'other'" in err, out + err
    code, out, err = run("files", url, "nosuchdir")
    assert code == 2 and "no folder 'nosuchdir'" in err, out + err
    code, out, err = run("history", url, "nope", "--json")
    assert code == 2 and json.loads(out)["error"].startswith("no session 'nope'"), out + err


def test_listing_a_store_without_sessions_says_so(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    seed(url)
    code, out, err = run("sessions", url, "--tenant", "nobody")
    assert code == 0 and out.startswith("no sessions with history in") and "tenant 'nobody'" in out, out + err


def test_files_of_a_file_path_lists_that_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    seed(url)
    code, out, err = run("files", url, "mem/a.md", "--json")
    assert code == 0, out + err
    assert json.loads(out)["entries"] == [{"path": "mem/a.md", "type": "file", "characters": 5}]


def test_a_tenants_sessions_history_snapshot_and_files_are_read_in_its_scope(tmp_path: Path) -> None:
    url = f"file://{tmp_path / 'agent'}"
    seed(url)
    code, out, err = run("sessions", url, "--tenant", "acme", "--json")
    assert code == 0 and json.loads(out)["sessions"] == [{"session_id": "t1", "messages": 1, "snapshot": True}], out
    code, out, err = run("sessions", url, "--tenant", "acme", "--snapshots", "--json")
    assert code == 0 and [s["session_id"] for s in json.loads(out)["snapshots"]] == ["t1"], out + err
    code, out, err = run("history", url, "t1", "--tenant", "acme")
    assert code == 0 and out.startswith("1 message in session 't1'"), out + err
    code, out, err = run("show", url, "t1", "--tenant", "acme", "--json")
    assert code == 0 and json.loads(out)["snapshot"]["session_id"] == "t1", out + err
    code, out, err = run("files", url, "--tenant", "acme", "--json")
    assert code == 0 and [e["path"] for e in json.loads(out)["entries"]] == ["notes.md"], out + err
    code, out, err = run("show", url, "t1")  # not outside the tenant
    assert code == 2 and "no session 't1'" in err, out + err
