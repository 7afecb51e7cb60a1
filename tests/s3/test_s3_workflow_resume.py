"""A workflow paused for approval in one process resumes from S3 in another (moto with AGENT_STORES_HEAVY=1)."""

from __future__ import annotations

from collections.abc import Callable

from s3_support import S3Target


def test_paused_workflow_resumes_in_another_process(
    s3_stores: S3Target, s3_prefix: str, run_example: Callable[..., str]
) -> None:
    # The new process finds its credentials where boto3 looks for them: the environment.
    session = s3_stores.endpoint.client_kwargs()
    env = {
        "AWS_ACCESS_KEY_ID": session.get("aws_access_key_id", ""),
        "AWS_SECRET_ACCESS_KEY": session.get("aws_secret_access_key", ""),
        "AWS_DEFAULT_REGION": session["region_name"],
    }
    url = s3_stores.url(s3_prefix)
    started = run_example("workflow_checkpoints.py", url, "start", env=env)
    assert "waiting for approval of: Five facts about otters." in started
    resumed = run_example("workflow_checkpoints.py", url, "resume", env=env)
    assert "published: Five facts about otters. (approved)" in resumed
