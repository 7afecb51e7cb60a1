"""A workflow paused for approval in one process resumes from a PostgreSQL database in another."""

from __future__ import annotations

from collections.abc import Callable


def test_paused_workflow_resumes_in_another_process(postgresql_url: str, run_example: Callable[..., str]) -> None:
    started = run_example("workflow_checkpoints.py", postgresql_url, "start")
    assert "waiting for approval of: Five facts about otters." in started
    resumed = run_example("workflow_checkpoints.py", postgresql_url, "resume")
    assert "published: Five facts about otters. (approved)" in resumed
