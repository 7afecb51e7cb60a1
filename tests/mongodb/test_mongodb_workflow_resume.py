"""A workflow paused for approval in one process resumes from MongoDB in another."""

from __future__ import annotations

from collections.abc import Callable

from agent_stores.testing.servers import Server


def test_paused_workflow_resumes_in_another_process(
    mongodb: Server, collection_prefix: str, run_example: Callable[..., str]
) -> None:
    started = run_example("workflow_checkpoints.py", mongodb.url, "start", collection_prefix)
    assert "waiting for approval of: Five facts about otters." in started
    resumed = run_example("workflow_checkpoints.py", mongodb.url, "resume", collection_prefix)
    assert "published: Five facts about otters. (approved)" in resumed
