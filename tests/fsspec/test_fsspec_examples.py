"""The README's fsspec snippets run as written (they are files under ``examples/``)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_folder_example_writes_real_files_the_framework_reads(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, str(EXAMPLES / "fsspec_folder.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    assert "history: ['My name is Ada.']" in out
    assert "framework reads: 'Name: Ada\\n'" in out
    assert "on disk: ['files/memories/user.md']" in out
    assert (tmp_path / "files" / "memories" / "user.md").read_text() == "Name: Ada\n"
    assert [p.name for p in (tmp_path / "sessions").iterdir()] == ["demo.json"]


def test_harness_demo_recalls_across_processes_on_a_folder(tmp_path: Path) -> None:
    """The harness demo on ``file://``: run 1 stores a memory file, run 2 (a new process) recalls it."""
    env = {k: v for k, v in os.environ.items() if k not in {"OPENAI_API_KEY", "OPENAI_BASE_URL"}}
    url = f"file://{tmp_path / 'agent'}"
    outputs = [
        subprocess.run(
            [sys.executable, "-W", "error::Warning", str(EXAMPLES / "harness_demo.py"), "--url", url],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=True,
        ).stdout
        for _ in range(2)
    ]
    assert "agent:  From my memory file: Favourite colour: teal" in outputs[1]
    assert "history (8 messages in session 'demo')" in outputs[1]
    assert list((tmp_path / "agent" / "files").rglob("*.md"))  # the memory file is a real file
