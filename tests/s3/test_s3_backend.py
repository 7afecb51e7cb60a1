"""S3 URLs, ``open_stores("s3://...")`` and the backend's shared client, on a real server."""

from __future__ import annotations

import pytest
from agent_framework import AgentSession

from agent_stores.core import open_stores
from agent_stores.s3 import S3Backend, S3Location, parse_s3_url
from s3_support import S3Target


def test_parse_s3_url_reads_bucket_prefix_and_options() -> None:
    location = parse_s3_url(
        "s3://my-bucket/agents/a1/?endpoint_url=http://127.0.0.1:9000&region=eu-west-1&create_bucket=true"
        "&ordered_listing=false&max_attempts=2&read_timeout=3.5"
    )
    assert location == S3Location(
        bucket="my-bucket",
        prefix="agents/a1/",
        endpoint_url="http://127.0.0.1:9000",
        region="eu-west-1",
        create_bucket=True,
        ordered_listing=False,
        max_attempts=2,
        read_timeout=3.5,
    )
    assert parse_s3_url("s3://b").prefix == ""
    assert parse_s3_url("s3://b/x", prefix="y/z").prefix == "y/z/"  # keywords win over the URL


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("s3:///prefix", "bucket"),
        ("http://bucket/prefix", "s3://"),
        ("s3://key:secret@bucket/prefix", "credentials"),
        ("s3://bucket/p?colour=blue", "unknown S3 option"),
        ("s3://bucket/p?create_bucket=maybe", "create_bucket takes 1, true, yes, on or 0, false, no, off"),
        ("s3://bucket/p?create_bucket=", "create_bucket takes"),
        ("s3://bucket/p?endpoint_url=http://h:9000&ca_bundle=/ca.pem", "not https://"),
        ("s3://bucket/p?client_cert=/c.pem&client_key=/k.pem&endpoint_url=HTTP://h", r"client_cert, client_key\) with"),
        ("s3://key:se/cret@bucket/prefix", "percent-encoded"),
        ("s3://bucket/p?addressing_style=sideways", "addressing_style"),
        ("s3://bucket/a/../b", r"'\.'"),
        ("s3://bucket/p?max_attempts=0", "option max_attempts takes a whole positive number"),
        ("s3://bucket/p?max_attempts=many", "option max_attempts takes a whole positive number"),
        ("s3://bucket/p?max_concurrency=1e3", "option max_concurrency takes a whole positive number"),
        ("s3://bucket/p?read_timeout=nan", "option read_timeout takes a positive, finite number of seconds"),
        ("s3://bucket/p?connect_timeout=inf", "option connect_timeout takes a positive, finite number of seconds"),
        ("s3://bucket/p?connect_timeout=0", "option connect_timeout takes a positive"),
    ],
)
def test_bad_urls_are_value_errors(url: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        parse_s3_url(url)


def test_tls_and_credential_options_are_checked_as_keywords_too() -> None:
    with pytest.raises(ValueError, match="takes no credentials") as caught:
        parse_s3_url("s3://bucket/p", endpoint_url="http://user:Pw-Leak@h:9000")
    assert "Leak" not in str(caught.value)
    with pytest.raises(ValueError, match=r"TLS options \(ca_bundle\)"):
        parse_s3_url("s3://bucket/p", endpoint_url="http://h:9000", ca_bundle="/ca.pem")
    assert parse_s3_url("s3://bucket/p", create_bucket="ON", path_keys=0).create_bucket is True


def test_open_stores_finds_the_s3_backend_without_io() -> None:
    stores = open_stores("s3://no-such-bucket-anywhere/p?endpoint_url=http://127.0.0.1:9&region=us-east-1")
    assert isinstance(stores.backend, S3Backend)
    assert stores.backend.handle.prefix == "p/"


@pytest.mark.asyncio
async def test_open_stores_shares_one_driver_and_closes_it(s3: S3Target, s3_prefix: str) -> None:
    backend = S3Backend(s3.url(s3_prefix), session=s3.session())
    files, sessions = backend.file_store(), backend.session_store()
    assert files.driver is sessions.driver is backend.driver
    await files.write("a.txt", "A")
    session = AgentSession(session_id="one")
    session.state["k"] = [1, 2]
    await sessions.set("one", session)
    await files.aclose()  # a store handed out does not close the shared driver
    restored = await sessions.get("one")
    assert restored is not None and restored.state == {"k": [1, 2]}
    await backend.aclose()
    with pytest.raises(Exception, match="closed"):
        await sessions.get("one")


@pytest.mark.asyncio
async def test_stores_opened_by_url_share_the_data(s3: S3Target, s3_prefix: str) -> None:
    url = s3.url(s3_prefix)
    one = S3Backend(url, session=s3.session())
    try:
        await one.file_store().write("x/y.txt", "shared")
    finally:
        await one.aclose()
    two = S3Backend(url, session=s3.session())
    try:
        assert await two.file_store().read("x/y.txt") == "shared"
        assert [e.name for e in await two.file_store().list_children("x")] == ["y.txt"]
    finally:
        await two.aclose()


def test_a_borrowed_client_caps_the_parallel_requests_at_its_pool() -> None:
    import boto3
    from botocore.config import Config

    from agent_stores.s3 import S3ObjectDriver

    session = boto3.Session(aws_access_key_id="k", aws_secret_access_key="s", region_name="us-east-1")
    small = session.client("s3", endpoint_url="http://127.0.0.1:9", config=Config(max_pool_connections=4))  # pyright: ignore[reportUnknownMemberType]
    try:
        assert S3ObjectDriver(small, "bucket").max_concurrency == 4
        assert S3ObjectDriver(small, "bucket", max_concurrency=2).max_concurrency == 2
    finally:
        small.close()


@pytest.mark.parametrize(
    "option",
    [
        {"read_timeout": 5},
        {"endpoint_url": "http://127.0.0.1:9"},
        {"max_attempts": 2},
        {"response_checksum_validation": "when_required"},
        {"region": "eu-west-1"},
    ],
)
def test_options_that_only_make_a_client_are_refused_beside_a_client_passed_in(option: dict[str, object]) -> None:
    import boto3

    from agent_stores.s3 import S3HistoryProvider

    session = boto3.Session(aws_access_key_id="k", aws_secret_access_key="s", region_name="us-east-1")
    client = session.client("s3", endpoint_url="http://127.0.0.1:9")  # pyright: ignore[reportUnknownMemberType]
    try:
        with pytest.raises(ValueError, match=f"{next(iter(option))} configure a client the store makes"):
            S3HistoryProvider(client, bucket="bucket", driver_options=dict(option))
        # The driver's own options still apply to a client passed in.
        provider = S3HistoryProvider(client, bucket="bucket", driver_options={"max_concurrency": 2})
        assert provider.objects.max_concurrency == 2
    finally:
        client.close()
