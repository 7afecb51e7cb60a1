"""A workflow paused for approval in one process resumes from Redis, Valkey or a cluster in another."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agent_stores.testing.servers import Server


@pytest.mark.parametrize("server_fixture", ["redis_single", "valkey_any", "redis_cluster"])
def test_paused_workflow_resumes_in_another_process(
    server_fixture: str, key_prefix: str, request: pytest.FixtureRequest, run_example: Callable[..., str]
) -> None:
    server: Server = request.getfixturevalue(server_fixture)
    started = run_example("workflow_checkpoints.py", server.url, "start", key_prefix)
    assert "waiting for approval of: Five facts about otters." in started
    resumed = run_example("workflow_checkpoints.py", server.url, "resume", key_prefix)
    assert "published: Five facts about otters. (approved)" in resumed
