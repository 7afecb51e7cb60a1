"""The README's "Write your own backend" example as an author outside this repository runs it: from wheels."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_framework import AgentSession, Message

from agent_stores.core import open_stores

ROOT = Path(__file__).parents[2]
EXAMPLE = ROOT / "examples" / "write_your_own_backend"


def _uv(*args: str, cwd: Path | None = None) -> None:
    uv = shutil.which("uv")
    assert uv is not None, "uv is not on PATH: the wheel-built run needs it to build and install"
    env = {k: v for k, v in os.environ.items() if k not in {"VIRTUAL_ENV", "PYTHONPATH"}}
    result = subprocess.run([uv, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False)
    assert result.returncode == 0, f"uv {' '.join(args)} failed:\n{result.stdout[-2000:]}{result.stderr[-3000:]}"


def test_the_example_backend_built_as_wheels_passes_all_five_suites(tmp_path: Path) -> None:
    """The how-to followed by an author outside this repository, from wheels, with no pytest configuration.

    The core and the example backend are built as wheels, installed with their ``testing`` extras
    into a fresh virtual environment (other dependencies from the package index, through uv's
    cache), and the example's test file runs there under ``-W error``, in a directory holding
    nothing else: the zero-configuration run prints no warning (no pytest-asyncio loop-scope
    notice, no experimental-feature notice of the framework). About 20 s on a warm cache and an
    idle machine (2 s to build, 2 s to install, 16 s to run, as the in-tree run it replaces);
    the entry point installed from the wheel is what ``open_stores("dict://")`` finds.
    """
    dist, venv, project = tmp_path / "dist", tmp_path / "venv", tmp_path / "project"
    _uv("build", "--package", "agent-stores-core", "--wheel", "--out-dir", str(dist), "-q", cwd=ROOT)
    _uv("build", str(EXAMPLE), "--wheel", "--out-dir", str(dist), "-q", cwd=ROOT)
    _uv("venv", "-q", str(venv), "--python", sys.executable)
    python = venv / "bin" / "python"
    _uv("pip", "install", "-q", "--python", str(python), "--find-links", str(dist), "agent-stores-dict[testing]")
    project.mkdir()
    shutil.copy(EXAMPLE / "test_dict_backend.py", project)
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("PYTEST_") and k not in {"PYTHONPATH", "VIRTUAL_ENV"}
    }
    result = subprocess.run(
        [str(python), "-m", "pytest", "-v", "-p", "no:cacheprovider", "-W", "error", "--rootdir", str(project)],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "warning" not in output.lower(), output[-4000:]
    assert (
        str(venv)
        in subprocess.run(
            [str(python), "-c", "import agent_stores.core, dict_backend; print(agent_stores.core.__file__)"],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    ), "the run did not use the installed wheels"
    passed = {
        suite: sum(f"::{suite}::" in line and " PASSED" in line for line in result.stdout.splitlines())
        for suite in (
            "TestDictLogDriver",
            "TestDictObjectDriver",
            "TestDictHistory",
            "TestDictFiles",
            "TestDictSessions",
        )
    }
    assert all(count >= 10 for count in passed.values()), f"clauses passed per suite: {passed}"
    found = subprocess.run(
        [str(python), "-W", "ignore", "-c", _OPEN_DICT],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert found.returncode == 0 and found.stdout.strip() == "['hi']", found.stdout + found.stderr[-2000:]


_OPEN_DICT = """
import asyncio
from agent_framework import Message
from agent_stores.core import open_stores

async def main():
    async with open_stores("dict://") as stores:
        history = stores.history_provider()
        await history.save_messages("s", [Message(role="user", contents=["hi"])])
        print([m.text for m in await history.get_messages("s")])

asyncio.run(main())
"""


@pytest.fixture
def installed_example(tmp_path: Path) -> Iterator[None]:
    """Install the example's entry point as pip would: a dist-info directory on ``sys.path``."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    dist_info = tmp_path / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist_info.mkdir()
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    lines = [
        f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items())
        for group, eps in project["entry-points"].items()
    ]
    (dist_info / "entry_points.txt").write_text("\n".join(lines))
    sys.path[:0] = [str(tmp_path), str(EXAMPLE)]
    try:
        yield
    finally:
        sys.path.remove(str(tmp_path))
        sys.path.remove(str(EXAMPLE))
        sys.modules.pop("dict_backend", None)


@pytest.mark.asyncio
@pytest.mark.usefixtures("installed_example")
async def test_open_stores_finds_the_example_backend_by_its_entry_point() -> None:
    async with open_stores("dict://") as stores:
        history = stores.history_provider()
        turn = [Message(role="user", contents=["hi"]), Message(role="assistant", contents=["hello"])]
        await history.save_messages("s-1", turn)
        await history.save_messages("s-1", turn)  # a replayed transcript is stored once
        assert [m.text for m in await history.get_messages("s-1")] == ["hi", "hello"]
        files = stores.file_store()
        await files.write("notes/todo.md", "- write a backend\n")
        assert await files.read("notes/todo.md") == "- write a backend\n"
        sessions = stores.session_store()
        await sessions.set("s-1", AgentSession(session_id="s-1"))
        restored = await sessions.get("s-1")
        assert restored is not None and restored.session_id == "s-1"
    with pytest.raises(ValueError, match="dict URLs take no host"):
        open_stores("dict://somewhere")


def test_readme_shows_the_example_files_verbatim() -> None:
    """Every code block of the "Write your own backend" how-to is a file of the example, unchanged."""
    section = (Path(__file__).parents[2] / "docs" / "write-your-own-backend.md").read_text()
    blocks = [block.split("\n", 1)[1] for block in section.split("```")[1::2]]
    files = {path.name: path.read_text() for path in EXAMPLE.iterdir() if path.is_file()}
    assert len(blocks) == 2
    for block in blocks:
        assert block in files.values(), f"a README block is no example file:\n{block[:300]}"
