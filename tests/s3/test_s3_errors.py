"""``translate()`` of the S3 backend as a table: each botocore error, made as botocore makes it, and its class.

A server's answer is a ``ClientError`` built from the parsed response (code, HTTP status), as
botocore builds it; a bodiless answer (HEAD) carries only the status. Message text is never read.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import (
    ClientError,
    ConnectionClosedError,
    ConnectTimeoutError,
    EndpointConnectionError,
    IncompleteReadError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    ReadTimeoutError,
    SSLError,
    UnknownServiceError,
)
from urllib3.exceptions import ProtocolError

from agent_stores.core import StoreConflictError, StoreError, StoreNotFoundError, StoreUnavailableError
from agent_stores.s3._errors import translate

ENDPOINT = "http://127.0.0.1:8333/bucket/key"


def answer(code: str, status: int, operation: str = "PutObject", message: str = "whatever") -> ClientError:
    """The ``ClientError`` botocore raises for an S3 error answer (``code`` empty: a bodiless answer)."""
    response: dict[str, Any] = {
        "Error": {"Code": code or str(status), "Message": message},
        "ResponseMetadata": {"HTTPStatusCode": status},
    }
    return ClientError(response, operation)  # type: ignore[arg-type]


def unverified_certificate() -> BaseException:
    cause = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    cause.verify_message = "self-signed certificate"
    return SSLError(endpoint_url=ENDPOINT, error=cause)


TABLE: list[tuple[str, BaseException, dict[str, Any], type[Exception] | None]] = [
    ("if-none-match failed", answer("PreconditionFailed", 412), {}, StoreConflictError),
    ("conditional write conflict", answer("ConditionalRequestConflict", 409), {}, StoreConflictError),
    ("if-match on an absent key", answer("NoSuchKey", 404), {"conditional": True}, StoreConflictError),
    ("wrong secret", answer("SignatureDoesNotMatch", 403, "GetObject"), {}, StoreError),
    ("unknown access key", answer("InvalidAccessKeyId", 403, "GetObject"), {}, StoreError),
    ("policy denies", answer("AccessDenied", 403), {}, StoreError),
    ("head denied (no body)", answer("", 403, "HeadObject"), {}, StoreError),
    ("bucket absent", answer("NoSuchBucket", 404), {}, StoreNotFoundError),
    ("server lacks the feature", answer("NotImplemented", 501), {}, StoreError),
    ("tls certificate refused", unverified_certificate(), {}, StoreError),
    ("no credentials", NoCredentialsError(), {}, StoreError),
    ("no region", NoRegionError(), {}, StoreError),
    ("slow down", answer("SlowDown", 503), {}, StoreUnavailableError),
    ("internal error", answer("InternalError", 500), {}, StoreUnavailableError),
    ("gateway timeout (no body)", answer("", 504, "HeadObject"), {}, StoreUnavailableError),
    ("endpoint refused", EndpointConnectionError(endpoint_url=ENDPOINT), {}, StoreUnavailableError),
    ("connect timed out", ConnectTimeoutError(endpoint_url=ENDPOINT), {}, StoreUnavailableError),
    ("read timed out", ReadTimeoutError(endpoint_url=ENDPOINT), {}, StoreUnavailableError),
    ("connection reset", ConnectionClosedError(endpoint_url=ENDPOINT), {}, StoreUnavailableError),
    ("body cut short", IncompleteReadError(actual_bytes=10, expected_bytes=100), {}, StoreUnavailableError),
    ("stream broke", ProtocolError("Connection broken: IncompleteRead"), {}, StoreUnavailableError),
    ("key refused", answer("KeyTooLongError", 400), {}, ValueError),
    ("bad parameters", ParamValidationError(report="Invalid type for parameter Key"), {}, ValueError),
    ("absent key, unconditional", answer("NoSuchKey", 404, "GetObject"), {}, None),
    ("malformed request", answer("InvalidArgument", 400), {}, None),
    ("botocore misuse", UnknownServiceError(service_name="s4", known_service_names="s3"), {}, None),
    ("a bug", KeyError("ETag"), {}, None),
]


@pytest.mark.parametrize(("err", "options", "expected"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_translate(
    err: BaseException,
    options: dict[str, Any],
    expected: type[Exception] | None,
    check_translation: Callable[..., None],
) -> None:
    translated = translate(err, bucket="bucket", key="p/key", **options)
    check_translation(err, translated, expected, prefix="s3://bucket/p/key: ")
