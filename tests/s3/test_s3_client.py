"""The client the S3 stores make: its botocore ``Config``, the checksum options of its URL, its lean answers.

What reaches the client is checked on the wire (a ``before-send`` hook on the client the driver
made, on each real server), not only in the ``Config``.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from agent_stores.s3 import S3Location, client_config, parse_s3_url
from agent_stores.s3._connect import USER_AGENT, open_driver
from s3_support import S3Target

_CHECKSUMS = ("request_checksum_calculation", "response_checksum_validation")


def test_checksum_settings_are_botocore_s_own_read_strictly() -> None:
    location = parse_s3_url(
        "s3://b/p?request_checksum_calculation=WHEN_REQUIRED&response_checksum_validation=when_supported"
    )
    assert location.request_checksum_calculation == "when_required"
    assert location.response_checksum_validation == "when_supported"
    assert parse_s3_url("s3://b/p").request_checksum_calculation is None  # botocore's own chain decides
    assert parse_s3_url("s3://b/p", response_checksum_validation="When_Required").response_checksum_validation == (
        "when_required"
    )


@pytest.mark.parametrize("option", _CHECKSUMS)
@pytest.mark.parametrize("value", ["never", "when-required", "true", " when_required", "1"])
def test_a_bad_checksum_setting_is_a_value_error_naming_it(option: str, value: str) -> None:
    with pytest.raises(ValueError, match=f"option {option} takes when_supported or when_required"):
        parse_s3_url(f"s3://b/p?{option}={value}")
    with pytest.raises(ValueError, match=f"option {option} takes"):
        parse_s3_url("s3://b/p", **{option: 1})


def test_the_config_skips_parameter_validation_and_sends_a_fixed_user_agent() -> None:
    config: Any = client_config(S3Location(bucket="b"))
    assert config.parameter_validation is False
    assert config.user_agent == USER_AGENT
    assert USER_AGENT.startswith("Boto3/") and "lib/agent-stores-s3#" in USER_AGENT
    assert all(getattr(config, name) is None for name in _CHECKSUMS)  # unset: botocore's own
    named: Any = client_config(S3Location(bucket="b").with_options(**dict.fromkeys(_CHECKSUMS, "when_required")))
    assert all(getattr(named, name) == "when_required" for name in _CHECKSUMS)


def _capture(client: Any) -> list[tuple[str, dict[str, str]]]:
    """Every request ``client`` sends from now on: its method and headers (names lower-cased)."""
    sent: list[tuple[str, dict[str, str]]] = []

    def hook(request: Any, **_: Any) -> None:
        headers = {
            name.lower(): value.decode() if isinstance(value, bytes) else str(value)
            for name, value in request.headers.items()
        }
        sent.append((request.method, headers))

    client.meta.events.register("before-send.s3", hook)
    return sent


@pytest.mark.asyncio
@pytest.mark.parametrize("setting", [None, "when_supported", "when_required"])
async def test_the_checksum_settings_of_the_url_reach_the_wire(
    s3: S3Target, s3_prefix: str, setting: str | None
) -> None:
    query = dict.fromkeys(_CHECKSUMS, setting) if setting else {}
    driver = open_driver(parse_s3_url(s3.url(s3_prefix, **query)), session=s3.session())
    key = f"{s3_prefix}/checked"
    try:
        await driver.put(f"{s3_prefix}/first", b"made on first use")
        sent = _capture(driver._client)  # pyright: ignore[reportPrivateUsage]
        version = await driver.put(key, b"payload", if_absent=True)
        found = await driver.get(key)
        assert found is not None and found.data == b"payload" and found.version == version
    finally:
        await driver.aclose()
    (put_method, put), (get_method, get) = sent
    assert (put_method, get_method) == ("PUT", "GET")
    assert put["if-none-match"] == "*"
    assert put["user-agent"] == get["user-agent"]
    assert put["user-agent"].startswith(f"{USER_AGENT} ")  # then the session's extra: botocore's version
    checked = setting != "when_required"  # unset is botocore's default: when_supported
    assert ("x-amz-checksum-crc32" in put) is checked
    assert (get.get("x-amz-checksum-mode") == "ENABLED") is checked


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


async def _user_agent_sent(target: S3Target, prefix: str, session: Any) -> str:
    """The ``User-Agent`` a driver's own client sends (a real request to ``target``)."""
    driver = open_driver(parse_s3_url(target.url(prefix)), session=session)
    try:
        await driver.put(f"{prefix}/first", b"made on first use")
        sent = _capture(driver._client)  # pyright: ignore[reportPrivateUsage]
        assert await driver.get(f"{prefix}/first") is not None
    finally:
        await driver.aclose()
    ((_, headers),) = sent
    return headers["user-agent"]


@pytest.mark.asyncio
@pytest.mark.parametrize(("configured", "sent"), [("myapp", "app/myapp"), ("my app/2", "app/my-app-2")])
async def test_the_app_id_of_the_environment_reaches_the_wire(
    seaweedfs: S3Target, s3_prefix: str, monkeypatch: pytest.MonkeyPatch, configured: str, sent: str
) -> None:
    """``AWS_SDK_UA_APP_ID`` puts ``app/<id>`` in the fixed ``User-Agent``, as botocore's own would."""
    monkeypatch.setenv("AWS_SDK_UA_APP_ID", configured)
    agent = await _user_agent_sent(seaweedfs, s3_prefix, seaweedfs.session())
    assert agent.startswith(f"{USER_AGENT} {sent}"), agent
    monkeypatch.delenv("AWS_SDK_UA_APP_ID")
    agent = await _user_agent_sent(seaweedfs, s3_prefix, seaweedfs.session())
    assert agent.startswith(f"{USER_AGENT} ") and " app/" not in agent, agent


@pytest.mark.asyncio
async def test_the_app_id_of_the_profile_reaches_the_wire(
    seaweedfs: S3Target, s3_prefix: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    """The profile's ``sdk_ua_app_id`` puts ``app/<id>`` in the fixed ``User-Agent`` too."""
    import boto3

    monkeypatch.delenv("AWS_SDK_UA_APP_ID", raising=False)
    config = tmp_path / "aws-config"
    config.write_text("[profile tagged]\nsdk_ua_app_id = fromprofile\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    session = boto3.Session(profile_name="tagged", **seaweedfs.endpoint.client_kwargs())
    agent = await _user_agent_sent(seaweedfs, s3_prefix, session)
    assert agent.startswith(f"{USER_AGENT} app/fromprofile"), agent
