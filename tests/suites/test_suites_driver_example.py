"""The README's "Write your own backend" example runs as written: its suites pass and its entry point works."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_framework import AgentSession, Message

from agent_stores.core import open_stores

EXAMPLE = Path(__file__).parents[2] / "examples" / "write_your_own_backend"


def test_the_example_backend_passes_all_five_suites() -> None:
    """``pytest examples/write_your_own_backend`` in a project with no pytest configuration."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning", "."],
        cwd=EXAMPLE,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
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
