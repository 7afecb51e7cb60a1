"""The client the S3 stores make: its botocore ``Config`` and its lean answers, on each real server."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from agent_stores.s3 import S3Location, client_config
from agent_stores.s3._connect import USER_AGENT
from s3_support import S3Target


def test_the_config_skips_parameter_validation_and_sends_a_fixed_user_agent() -> None:
    config: Any = client_config(S3Location(bucket="b"))
    assert config.parameter_validation is False
    assert config.user_agent == USER_AGENT
    assert USER_AGENT.startswith("Boto3/") and "lib/agent-stores-s3#" in USER_AGENT


@pytest.mark.asyncio
async def test_owned_answers_carry_no_last_modified_and_a_borrowed_client_s_do(s3: S3Target) -> None:
    key = f"lean-{uuid.uuid4().hex[:12]}/object"
    lean, plain = s3.client(), s3.client(skimmed=False)
    try:
        plain.put_object(Bucket=s3.bucket, Key=key, Body=b"bytes", Metadata={"mark": "m"})
        got = lean.get_object(Bucket=s3.bucket, Key=key)
        with got["Body"] as body:
            assert body.read() == b"bytes"
        head = lean.head_object(Bucket=s3.bucket, Key=key)
        assert "LastModified" not in got and "LastModified" not in head
        assert got["ETag"] == head["ETag"] and head["Metadata"] == {"mark": "m"}
        assert "LastModified" in plain.get_object(Bucket=s3.bucket, Key=key)
        assert "LastModified" in plain.head_object(Bucket=s3.bucket, Key=key)
        with pytest.raises(ClientError) as missing:  # error answers stay botocore's
            lean.get_object(Bucket=s3.bucket, Key=f"{key}-absent")
        assert missing.value.response.get("Error", {}).get("Code") == "NoSuchKey"
    finally:
        plain.delete_object(Bucket=s3.bucket, Key=key)
        lean.close()
        plain.close()
