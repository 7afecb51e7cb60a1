"""Lean listings on the clients the S3 backend makes: the same keys as botocore's own parse, on each server."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from agent_stores.s3 import S3ObjectDriver
from agent_stores.s3._listing import LISTED_KEYS, skim_listings
from s3_support import S3Target

_ODD = [
    "plain",
    "with space",
    "a&b",
    "less<more>",
    "quote\"'",
    "100%",
    "plus+sign",
    "tab\tx",
    "é-ü-字",
    "emoji-😀",
    "cr\rlf",
]


@pytest.mark.asyncio
async def test_a_skimmed_listing_equals_botocore_s_own(s3: S3Target) -> None:
    prefix = f"skim-{uuid.uuid4().hex[:12]}/"
    keys = sorted(f"{prefix}{name}" for name in _ODD)
    skimmed = S3ObjectDriver(s3.client(), s3.bucket, owns_client=True, **s3.driver_options)
    plain = S3ObjectDriver(s3.client(skimmed=False), s3.bucket, owns_client=True, **s3.driver_options)
    seen: list[bool] = []
    skimmed_client: Any = skimmed._client  # pyright: ignore[reportPrivateUsage]
    skimmed_client.meta.events.register(
        "after-call.s3.ListObjectsV2",
        lambda parsed, **_: seen.append(LISTED_KEYS in parsed and "Contents" not in parsed),
    )
    try:
        for key in keys:
            await plain.put(key, b"x")
        for limit in (None, 3):
            expected = await plain.list(prefix, delimiter=None, limit=limit)
            assert await skimmed.list(prefix, delimiter=None, limit=limit) == expected
        assert (await plain.list(prefix, delimiter=None)).keys == keys
        assert seen and all(seen)  # the lean path answered
    finally:
        for key in keys:
            await plain.delete(key)
        await skimmed.aclose()
        await plain.aclose()


class _FakeClient:
    class meta:
        class events:
            handlers: dict[str, Any] = {}

            @classmethod
            def register(cls, name: str, handler: Any) -> None:
                cls.handlers[name] = handler


def _skim(body: bytes, status: int = 200) -> tuple[dict[str, Any], dict[str, Any]]:
    skim_listings(_FakeClient())  # type: ignore[arg-type]
    response: dict[str, Any] = {"status_code": status, "body": body}
    custom: dict[str, Any] = {}
    _FakeClient.meta.events.handlers["before-parse.s3.ListObjectsV2"](
        response_dict=response, customized_response_dict=custom
    )
    return response, custom


def test_keys_are_decoded_as_an_xml_parser_and_botocore_would() -> None:
    body = (
        b'<?xml version="1.0" encoding="UTF-8"?><ListBucketResult><Name>b</Name><Prefix>p%2F</Prefix>'
        b"<Contents><Key>p%2Fa%26b</Key><LastModified>2026-01-01T00:00:00.000Z</LastModified><Size>1</Size></Contents>"
        b"<Contents><Key>p/x&amp;y&#x41;&#66;+z</Key><ETag>&quot;e&quot;</ETag></Contents>"
        b"<EncodingType>url</EncodingType><IsTruncated>false</IsTruncated></ListBucketResult>"
    )
    response, custom = _skim(body)
    assert custom[LISTED_KEYS] == ["p/a&b", "p/x&yAB z"]
    assert b"<Contents>" not in response["body"] and b"<IsTruncated>false</IsTruncated>" in response["body"]


@pytest.mark.parametrize(
    "body",
    [
        b"<ListBucketResult><Contents><Key><![CDATA[a]]></Key></Contents></ListBucketResult>",  # no plain text key
        b"<ListBucketResult><Contents><Size>1</Size></Contents></ListBucketResult>",  # no key
        b"<ListBucketResult><Contents><Key>a</Key><Key>b</Key></Contents></ListBucketResult>",  # two
        b"<ListBucketResult><Contents><Key>&#x110000;</Key></Contents></ListBucketResult>",  # no such character
        b"<ListBucketResult><Contents><Key>\xff</Key></Contents></ListBucketResult>",  # not UTF-8
    ],
)
def test_an_answer_of_another_shape_is_left_whole_for_botocore(body: bytes) -> None:
    response, custom = _skim(body)
    assert custom == {} and response["body"] == body


def test_an_error_answer_is_left_whole() -> None:
    body = b"<ListBucketResult><Contents><Key>a</Key></Contents></ListBucketResult>"
    response, custom = _skim(body, status=500)
    assert custom == {} and response["body"] == body
