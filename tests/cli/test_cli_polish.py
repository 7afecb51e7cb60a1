"""The command line's manners: ``--version``, help, bare ``agent-stores``, JSON errors, honest counts, closed pipes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from agent_framework import AgentSession, Message
from typer.testing import CliRunner

from agent_stores.cli import app
from agent_stores.cli._app import version_text
from agent_stores.core import open_stores

warnings.filterwarnings("ignore", message=r".*is experimental")

COMMANDS = ["check", "sessions", "history", "repair", "files", "show", "migrate", "upgrade", "demo"]


def run(*args: str, columns: int = 100) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": str(columns)})
    return result.exit_code, result.stdout, result.stderr


def seed(url: str, *, text: str = "hello") -> None:
    async def main() -> None:
        async with open_stores(url) as stores:
            await stores.history_provider().save_messages("s1", [Message(role="user", contents=["hi"])])
            await stores.session_store().set("s1", AgentSession(session_id="s1"))
            await stores.file_store().write("mem/a.md", text)

    asyncio.run(main())


def test_version_names_the_command_the_core_and_each_backend_with_its_schemes() -> None:
    code, out, _ = run("--version")
    assert code == 0 and out.strip() == version_text()
    lines = out.splitlines()
    assert lines[0].startswith("agent-stores 0.")
    assert any(line.startswith("  agent-stores-core ") for line in lines)
    assert any(line.startswith("  agent-stores-sqlite ") and line.endswith("(sqlite)") for line in lines)


def test_bare_agent_stores_shows_the_help_and_exits_0() -> None:
    code, out, _ = run()
    assert code == 0 and "Usage" in out and "migrate" in out


@pytest.mark.parametrize("command", [[], *([c] for c in COMMANDS)], ids=["root", *COMMANDS])
def test_help_shows_no_value_type_beside_a_flag(command: list[str]) -> None:
    code, out, _ = run(*command, "--help")
    assert code == 0 and "--help" in out
    assert "<bool>" not in out, out


def test_help_paragraphs_are_unwrapped_so_the_terminal_wraps_them() -> None:
    # The docstring breaks this sentence after "the backend"; a wide terminal shows it on one line.
    code, out, _ = run("check", "--help", columns=300)
    assert code == 0 and "with the capabilities the backend declares, in a scratch namespace" in out, out


def test_json_failures_are_a_json_error_object_on_stdout(tmp_path: Path) -> None:
    code, out, err = run("history", f"sqlite:///{tmp_path / 'typo.db'}", "s1", "--json")
    document = json.loads(out)
    assert code == 2 and document["ok"] is False and document["exit_code"] == 2
    assert "typo.db' does not exist" in document["error"] and "does not exist" in err
    code, out, _ = run("history", "--json")  # a usage error: the URL is missing
    assert code == 2 and json.loads(out) == {"ok": False, "error": "Missing argument 'URL'.", "exit_code": 2}
    code, out, _ = run("migrate", "sqlite:///a.db", "sqlite:///b.db", "--append", "--replace", "--json")
    assert code == 2 and "exclude each other" in json.loads(out)["error"]


def test_migrate_counts_folders_apart_and_says_one_item(tmp_path: Path) -> None:
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    seed(source)
    code, out, err = run("migrate", source, target, "--json")
    assert code == 0, out + err
    assert json.loads(out)["summary"] == {
        "history": {"copy": 1, "messages_copied": 1},
        "snapshot": {"copy": 1},
        "folder": {"copy": 1},
        "file": {"copy": 1},
    }
    code, out, err = run("migrate", source, f"sqlite:///{tmp_path / 'c.db'}", "--source-id", "nothing")
    assert code == 0 and "ok: 3 items copied and verified, 0 already there" in out, out + err

    async def add_a_file() -> None:
        async with open_stores(source) as stores:
            await stores.file_store().write("mem/b.md", "new")

    asyncio.run(add_a_file())
    code, out, err = run("migrate", source, target)
    assert code == 0 and "ok: 1 item copied and verified, 4 already there" in out, out + err
    other = f"sqlite:///{tmp_path / 'd.db'}"
    seed(other, text="another text")
    code, out, err = run("migrate", source, other)
    assert code == 3, out + err
    assert "the target holds a different file of 12 characters (5 on the source)" in out, out
    assert "the target holds a different snapshot" not in out  # the snapshots are equal
    assert " vs " not in out


def test_a_missing_factory_module_says_where_modules_are_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run("check", "agent_stores_no_such_module:factory")
    assert code == 2, out + err
    assert "No module named 'agent_stores_no_such_module'" in err
    assert f"current directory ({tmp_path})" in err and "PYTHONPATH" in err


def _with_closed_stdout(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run ``agent-stores args`` with stdout a pipe whose reader is already gone (as after ``| head``)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
        return subprocess.run(
            [sys.executable, "-m", "agent_stores.cli", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=cwd,
            env=env,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "args",
    [
        ("history", "URL", "s1"),
        ("history", "URL", "s1", "--json"),
        ("files", "URL", "-r"),
        ("demo", "URL", "--offline"),
    ],
    ids=["history", "history-json", "files", "demo"],
)
def test_a_closed_pipe_ends_quietly_with_the_shells_status(tmp_path: Path, args: tuple[str, ...]) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    seed(url)
    done = _with_closed_stdout(*(url if a == "URL" else a for a in args), cwd=tmp_path)
    assert done.returncode == 141, done.stderr
    assert "error" not in done.stderr.lower() and "Traceback" not in done.stderr, done.stderr
