"""The S3 example of the README runs against a real server and prints what it stored."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from s3_support import S3Target

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "s3_stores.py"


def test_the_s3_example_runs(seaweedfs: S3Target, s3_prefix: str) -> None:
    credentials = seaweedfs.endpoint.client_kwargs()
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": credentials["aws_access_key_id"],
        "AWS_SECRET_ACCESS_KEY": credentials["aws_secret_access_key"],
    }
    done = subprocess.run(
        [sys.executable, "-W", "error::Warning", str(EXAMPLE), seaweedfs.url(s3_prefix)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "history: ['My name is Ada.', 'Hi Ada!']" in done.stdout
    assert "files: ['user.md']" in done.stdout
    assert "session state: {'turns': 1}" in done.stdout
