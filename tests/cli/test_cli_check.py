"""``agent-stores check``: the conformance suites from the command line, on real stores.

Each run is a real ``agent-stores`` process (``python -m agent_stores.cli``): the command runs
pytest itself, which must not nest inside this test run. The default run checks one backend
(a SQLite file) on one suite; every suite on SQLite, a local folder and Redis runs with
``AGENT_STORES_HEAVY=1``.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

HEAVY = os.environ.get("AGENT_STORES_HEAVY") == "1"
heavy = pytest.mark.skipif(not HEAVY, reason="every suite on a live store: set AGENT_STORES_HEAVY=1")


def agent_stores(*args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200", "PYTHONPATH": str(cwd)}
    return subprocess.run(
        [sys.executable, "-m", "agent_stores.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        check=False,
    )


def rows(path: Path) -> dict[str, list[Any]]:
    """Every row of the stores' tables (the migration table aside)."""
    with sqlite3.connect(path) as db:
        tables = [t for (t,) in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {
            t: sorted(map(repr, db.execute(f"SELECT * FROM {t}")))
            for t in tables
            if t.startswith("agent_stores_") and t != "agent_stores_migrations"
        }


def seed(url: str) -> None:
    """Data of the user's own that a check must leave alone."""
    code = textwrap.dedent(
        f"""
        import asyncio
        from agent_framework import AgentSession, Message
        from agent_stores.core import open_stores

        async def main():
            async with open_stores({url!r}) as stores:
                await stores.history_provider().save_messages("mine", [Message(role="user", contents=["keep me"])])
                await stores.file_store().write("notes/keep.md", "keep")
                await stores.session_store().set("mine", AgentSession(session_id="mine"))
        asyncio.run(main())
        """
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_check_passes_on_a_sqlite_file_and_leaves_only_the_users_data(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    url = f"sqlite:///{db}"
    seed(url)
    before = rows(db)
    result = agent_stores("check", url, "--suite", "sessions", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr + result.stdout
    report = json.loads(result.stdout)
    assert report["ok"] is True
    assert report["suites"] == ["sessions"]
    assert report["summary"]["passed"] >= 15 and report["summary"]["failed"] == 0
    assert report["capabilities"]["sessions"] == {
        "durable": True,
        "max_id_length": None,
        "corruptible": True,
        "versioned": True,
    }
    assert report["cleanup"].startswith("removed ")
    assert rows(db) == before, "the check left data behind or touched the user's data"


def test_a_url_check_reports_its_scratch_area_counts_cleanup_and_verdict(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    result = agent_stores("check", url, "--suite", "sessions", "-k", "delete", cwd=tmp_path)
    assert result.returncode == 0, result.stderr + result.stdout
    lines = result.stdout.splitlines()
    assert lines[0] == f"agent-stores check {url}"
    assert lines[1].startswith("  scratch area: namespace and key prefix 'agent-stores-check-")
    assert lines[1].endswith(f"' in {url}")
    assert lines[2].split() == ["suite", "passed", "failed", "divergent", "skipped", "not", "run"]
    row = lines[3].split()
    assert row[0] == "sessions" and int(row[1]) > 0 and row[2:] == ["-", "-", "-", "-"]
    assert any(line.startswith("cleanup: removed ") for line in lines)
    assert lines[-1] == f"ok: {row[1]} clauses passed, 0 declared divergences"


def test_a_url_check_runs_purge_only_when_allowed_and_removes_expired_sessions_too(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    url = f"sqlite:///{db}"
    seed(url)
    before = rows(db)
    suites = ("--suite", "history", "--suite", "log_driver")
    # An expired log is not listed: the cleanup removes it by the key the check wrote it under. The
    # processes clause opens the scratch history in child processes of its own.
    clauses = "purge or processes or ttl_expires_a_session"
    report = json.loads(agent_stores("check", url, *suites, "-k", clauses, "--json", cwd=tmp_path).stdout)
    outcomes = {c["clause"]: c["outcome"] for c in report["clauses"]}
    assert outcomes == {
        "test_purge_expired_spares_live_sessions": "not-run",
        "test_purge_expired_removes_only_expired_logs": "not-run",
        "test_processes_saving_concurrently_lose_and_duplicate_nothing": "passed",
        "test_ttl_expires_a_session_after_its_last_save": "passed",
    }
    assert all("--allow-purge" in c["explanation"] for c in report["clauses"] if c["outcome"] == "not-run")
    assert report["ok"] is True
    assert rows(db) == before, "the check left data behind (an expired session included) or touched the user's data"
    allowed = agent_stores("check", url, *suites, "-k", "purge", "--allow-purge", "--json", cwd=tmp_path)
    assert {c["clause"]: c["outcome"] for c in json.loads(allowed.stdout)["clauses"]} == {
        "test_purge_expired_spares_live_sessions": "passed",
        "test_purge_expired_removes_only_expired_logs": "passed",
    }
    assert rows(db) == before, "the purge clauses touched the user's data"


def test_a_path_url_check_runs_in_a_sub_folder_and_removes_it(tmp_path: Path) -> None:
    root = tmp_path / "stores"
    root.mkdir()
    seed(f"file://{root}")
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    suites = ("--suite", "files", "--suite", "log_driver", "--suite", "object_driver")
    clauses = "list_children_returns or read_back_in or put_get_head or list_logs_lists_live or list_prefix"
    result = agent_stores("check", f"file://{root}", *suites, "-k", clauses, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr + result.stdout
    report = json.loads(result.stdout)
    assert report["notes"][0].startswith(f"scratch area: file://{root}/agent-stores-check-")
    assert report["suites"] == ["files", "log_driver", "object_driver"]
    # Divergences come from the backend's declaration (object driver) and from the object log (log driver).
    assert {f"{c['suite']}.{c['clause']}": c["outcome"] for c in report["clauses"]} == {
        "files.test_list_children_returns_names_not_paths": "passed",
        "log_driver.test_records_read_back_in_append_order": "passed",
        "log_driver.test_list_logs_lists_live_logs_under_the_prefix_in_key_order": "divergent",
        "log_driver.test_purge_expired_removes_only_expired_logs": "not-run",
        "object_driver.test_put_get_head_and_delete_agree": "passed",
        "object_driver.test_list_prefix_is_literal": "divergent",
    }
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == before


def test_the_text_report_says_why_clauses_were_skipped_or_not_run(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    clauses = "purge_expired_spares or directory_without_files_is_not_listed or case_insensitive_names or returns_names"
    result = agent_stores("check", url, "-s", "history", "-s", "files", "-k", clauses, cwd=tmp_path)
    assert result.returncode == 0, result.stderr + result.stdout
    text = result.stdout
    not_run, skipped = text.index("\nnot run:\n"), text.index("\nskipped:\n")
    assert "run with --allow-purge to include it" in text[not_run:skipped]
    assert "    history: test_purge_expired_spares_live_sessions" in text[not_run:skipped]
    reasons = text[skipped:]
    assert (
        "  clause is for stores without: empty_directories\n    files: test_directory_without_files_is_not_listed"
        in reasons
    )
    assert (
        "  clause is for stores without: case_sensitive\n    files: test_case_insensitive_names_are_one_file" in reasons
    )


def test_a_check_leaves_nothing_in_the_working_directory_nor_a_database_it_created(tmp_path: Path) -> None:
    work, data = tmp_path / "work", tmp_path / "data"
    work.mkdir()
    data.mkdir()
    url = f"sqlite:///{data / 'new.db'}"
    # A property-based clause: hypothesis keeps caches on disk (a .hypothesis folder) unless told where.
    result = agent_stores("check", url, "-s", "files", "-k", "any_text_round_trips", "--json", cwd=work)
    assert result.returncode == 0, result.stderr + result.stdout
    report = json.loads(result.stdout)
    assert [c["outcome"] for c in report["clauses"]] == ["passed"]
    assert f"removed {data / 'new.db'}, which the check created" in report["cleanup"]
    assert list(work.iterdir()) == [] and list(data.iterdir()) == []


def test_a_check_gives_back_the_space_it_grew_a_sqlite_file_by(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    url = f"sqlite:///{db}"
    seed(url)
    before, size = rows(db), db.stat().st_size
    clauses = "any_text_round_trips or search_line_numbers"
    result = agent_stores("check", url, "-s", "files", "-k", clauses, "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr + result.stdout
    assert "VACUUM gave back" in json.loads(result.stdout)["cleanup"]
    assert rows(db) == before
    assert db.stat().st_size <= size, "the check left the database larger than it found it"


def test_a_check_removes_the_folder_it_created(tmp_path: Path) -> None:
    root = tmp_path / "new" / "stores"
    result = agent_stores("check", f"file://{root}", "-s", "object_driver", "-k", "put_get_head", cwd=tmp_path)
    assert result.returncode == 0, result.stderr + result.stdout
    assert f"removed {tmp_path / 'new'}, which the check created" in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_check_on_a_broken_factory_exits_1_naming_the_clause(tmp_path: Path) -> None:
    (tmp_path / "broken_store.py").write_text(
        textwrap.dedent(
            """
            from agent_stores.core import ObjectSessionStore
            from agent_stores.core.memory import MemoryObjectDriver

            SHARED = MemoryObjectDriver()

            class ForgetfulDelete(ObjectSessionStore):
                async def delete(self, session_id):
                    return None  # never deletes

            def open_sessions():
                return ForgetfulDelete(SHARED)

            open_sessions.capabilities = {"durable": True, "corruptible": True}
            """
        )
    )
    result = agent_stores("check", "broken_store:open_sessions", cwd=tmp_path)
    assert result.returncode == 1, result.stderr + result.stdout
    assert "FAIL sessions: test_delete_is_idempotent" in result.stdout
    # The clause's explanation is printed under it.
    assert "A failure means" in result.stdout or "Failure means" in result.stdout

    as_json = agent_stores("check", "broken_store:open_sessions", "--json", cwd=tmp_path)
    assert as_json.returncode == 1
    report = json.loads(as_json.stdout)
    failed = [c["clause"] for c in report["clauses"] if c["outcome"] == "failed"]
    assert "test_delete_is_idempotent" in failed
    assert report["summary"]["passed"] >= 10


def test_check_of_a_good_factory_passes(tmp_path: Path) -> None:
    (tmp_path / "good_store.py").write_text(
        textwrap.dedent(
            """
            from agent_stores.core import ObjectAgentFileStore
            from agent_stores.core.memory import MemoryObjectDriver
            from agent_stores.testing import FileStoreCapabilities

            SHARED = MemoryObjectDriver()

            def open_files(**options):
                return ObjectAgentFileStore(SHARED, **options)

            open_files.capabilities = FileStoreCapabilities(case_sensitive=True, empty_directories=True)
            """
        )
    )
    result = agent_stores("check", "good_store:open_files", "-k", "path or read", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr + result.stdout
    report = json.loads(result.stdout)
    assert report["suites"] == ["files"] and report["capabilities"]["files"]["case_sensitive"] is True
    assert report["summary"]["failed"] == 0 and report["summary"]["passed"] > 5


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


FACTORIES = """
from agent_stores.core import LogHistoryProvider
from agent_stores.core.memory import MemoryLogDriver


def open_store():
    raise RuntimeError("no credentials")


def open_number():
    return 42


def open_history():
    return LogHistoryProvider(MemoryLogDriver())


open_history.capabilities = {"multi_process": True}
"""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((f"redis://127.0.0.1:{free_port()}/0",), "cannot reach redis://127.0.0.1:"),
        (("no_such_module:factory",), "cannot import 'no_such_module'"),
        (("json:no_such_factory",), "'json' has no attribute 'no_such_factory'"),
        (("raising_store:open_store",), "the factory raising_store:open_store raised RuntimeError: no credentials"),
        (("not-a-target",), "expected a store URL (scheme://...) or module:attr"),
        (("nosuchscheme://x",), "no agent-stores backend for scheme 'nosuchscheme'"),
        (("raising_store:open_number",), "returned a int: not a history provider, file store, session store"),
        (("raising_store:open_history",), "multi_process is declared for raising_store:open_history, so it needs"),
        (("raising_store:open_history", "--suite", "history"), "--suite applies to a URL"),
        (("memory://", "--suite", "sessions", "-k", "no_clause_has_this_name"), "no clause ran"),
    ],
    ids=[
        "unreachable-url",
        "missing-module",
        "missing-attribute",
        "raising-factory",
        "not-a-target",
        "unknown-scheme",
        "factory-of-no-store",
        "multi-process-without-process-factory",
        "suite-of-a-factory",
        "no-clause-matches",
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: tuple[str, ...], expected: str) -> None:
    (tmp_path / "raising_store.py").write_text(FACTORIES)
    result = agent_stores("check", *args, cwd=tmp_path, timeout=60)
    assert result.returncode == 2, result.stderr + result.stdout
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert expected in lines[0]
    assert "Traceback" not in result.stderr


def test_verbose_shows_the_traceback(tmp_path: Path) -> None:
    (tmp_path / "raising_store.py").write_text(FACTORIES)
    result = agent_stores("check", "raising_store:open_store", "--verbose", cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" in result.stderr and "RuntimeError: no credentials" in result.stderr


def test_unknown_capability_and_suite_are_usage_errors(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    result = agent_stores("check", url, "--capability", "history.flies", cwd=tmp_path)
    assert result.returncode == 2 and "unknown capability 'history.flies'" in result.stderr
    result = agent_stores("check", url, "--suite", "nope", cwd=tmp_path)
    assert result.returncode == 2 and "unknown suite nope" in result.stderr


# -- every suite on live stores (AGENT_STORES_HEAVY=1) -----------------------------------------


def full_check(url: str, cwd: Path) -> dict[str, Any]:
    result = agent_stores("check", url, "--json", cwd=cwd, timeout=900)
    report = json.loads(result.stdout)
    failed = [f"{c['suite']}.{c['clause']}: {c['message']}" for c in report["clauses"] if c["outcome"] == "failed"]
    assert result.returncode == 0 and not failed, failed or result.stderr
    assert set(report["suites"]) == {
        "history",
        "files",
        "sessions",
        "checkpoints",
        "todos",
        "log_driver",
        "object_driver",
    }
    return report


@heavy
def test_every_suite_passes_on_a_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "agent.db"
    seed(f"sqlite:///{db}")
    before = rows(db)
    report = full_check(f"sqlite:///{db}", tmp_path)
    assert report["summary"]["passed"] > 150
    assert rows(db) == before


@heavy
def test_every_suite_passes_on_a_local_folder(tmp_path: Path) -> None:
    root = tmp_path / "stores"
    root.mkdir()
    seed(f"file://{root}")
    before = sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))
    full_check(f"file://{root}", tmp_path)
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == before


@heavy
def test_every_suite_passes_on_redis(tmp_path: Path) -> None:
    from agent_stores.testing.servers.redis import redis_server

    with redis_server() as server:
        seed(server.url)
        full_check(server.url, tmp_path)
        import redis

        client = redis.Redis.from_url(server.url)
        leftover = [k for k in client.scan_iter("*agent-stores-check-*")]
        client.close()
        assert leftover == []


def test_a_url_check_takes_the_store_options_of_its_url(tmp_path: Path) -> None:
    """The object log's options (object stores) and a sealed store's settings in a URL are options, not errors."""
    from agent_stores.core.sealing import Keyring

    Keyring.create(tmp_path / "keyring.json")
    sealed = "opened_bytes=0&plaintext_reads=on&max_scopes=64&key_refresh=30"
    for url in (
        f"file://{tmp_path / 'folder'}?fair_claims=false&compact_after=3&tail_after=none&concurrency=4",
        f"sqlite:///{tmp_path / 'sealed.db'}?keyring={tmp_path / 'keyring.json'}&{sealed}",
    ):
        result = agent_stores("check", url, "-s", "history", "-k", "concurrent", "--json", cwd=tmp_path)
        assert result.returncode == 0, result.stderr + result.stdout
        report = json.loads(result.stdout)
        assert report["ok"] and any(c["outcome"] == "passed" for c in report["clauses"]), report
    for url, option in (
        (f"file://{tmp_path / 'other'}?fair_claims=maybe", "option fair_claims takes"),
        (f"sqlite:///{tmp_path / 'other.db'}?keyring={tmp_path / 'keyring.json'}&opened_bytes=8MiB", "opened_bytes"),
        (f"file://{tmp_path / 'other'}?tail_records=0", "option tail_records takes a whole positive number"),
        (f"sqlite:///{tmp_path / 'other.db'}?keyring={tmp_path / 'keyring.json'}&key_refresh=inf", "key_refresh"),
    ):
        result = agent_stores("check", url, "-s", "history", cwd=tmp_path, timeout=60)
        assert result.returncode == 2 and result.stderr.startswith("error: ") and option in result.stderr
    assert not (tmp_path / "other").exists() and not (tmp_path / "other.db").exists()
