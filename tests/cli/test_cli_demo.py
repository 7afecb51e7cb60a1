"""``agent-stores demo``: offline, twice on one SQLite file; --reset; bad input (in process)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_stores.cli import app


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["demo", *args])
    return result.exit_code, result.stdout, result.stderr


def test_demo_recalls_on_the_second_run_and_resets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    code, first, _ = run(url)
    assert code == 0 and "OFFLINE SCRIPTED MODEL" in first
    assert "user:   Please remember that my favourite colour is teal." in first
    assert "demo/preferences.md: 'Favourite colour: teal'" in first
    code, second, _ = run(url)
    assert code == 0 and "agent:  From my memory file: Favourite colour: teal" in second
    assert "history (8 messages in session 'demo')" in second
    code, again, _ = run(url, "--reset")
    assert code == 0 and "Please remember" in again and "history (4 messages" in again


def test_the_demo_answers_however_often_it_is_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run 21 and later answer as run 2 did: the tool loop's budget does not pile up in the saved session.

    The framework's approval middleware keeps the budget (40 model calls) in the session without
    resetting it, and each run of the demo makes two model calls.
    """
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    answers: list[str] = []
    for _ in range(25):
        code, out, err = run(url, "--offline")
        assert code == 0, err
        answers.append(next(line for line in out.splitlines() if line.startswith("agent:")))
    assert answers[0] == "agent:  Noted - I saved that to my memory file."
    recalled = "agent:  From my memory file: Favourite colour: teal"
    assert [n for n, answer in enumerate(answers[1:], 2) if answer != recalled] == [], answers


def test_demo_bad_url_is_one_line_and_exit_2() -> None:
    for url, expected in [("nowhere", "expected a store URL"), ("nosuch://x", "no agent-stores backend")]:
        code, _, err = run(url)
        assert code == 2 and expected in err and len(err.strip().splitlines()) == 1, err


def test_the_readme_set_up_commands_are_the_installed_ones(tmp_path: Path) -> None:
    """README's set-up: `uv run agent-stores demo` (the umbrella's script) and the pip route's extra."""
    import os
    import re
    import subprocess
    import sys
    import tomllib

    root = Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    setup = readme[readme.index("## Set up") : readme.index("## Install")]
    commands = [line.split("#")[0].strip() for line in re.findall(r"```bash\n(.*?)```", setup, re.S)[0].splitlines()]
    assert commands == ["uv run agent-stores demo", "uv run pytest"]
    assert 'pip install "agent-stores[sqlite]"' in setup and "agent-stores demo" in setup
    umbrella = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert umbrella["scripts"]["agent-stores"] == "agent_stores.cli:main"
    assert "sqlite" in umbrella["optional-dependencies"]
    script = Path(sys.executable).parent / "agent-stores"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    done = subprocess.run(
        [str(script), "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "OFFLINE SCRIPTED MODEL" in done.stdout and (tmp_path / "agent-stores-demo.db").exists()
