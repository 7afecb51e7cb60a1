"""A workflow paused for approval in one process resumes from a local folder through fsspec in another."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def test_paused_workflow_resumes_in_another_process(tmp_path: Path, run_example: Callable[..., str]) -> None:
    url = f"file://{tmp_path / 'store'}"
    started = run_example("workflow_checkpoints.py", url, "start")
    assert "waiting for approval of: Five facts about otters." in started
    resumed = run_example("workflow_checkpoints.py", url, "resume")
    assert "published: Five facts about otters. (approved)" in resumed
    assert any((tmp_path / "store").rglob("*.json")), "the checkpoints are files under the store's folder"
