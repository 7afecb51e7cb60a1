"""Translation of boto3/botocore errors into the agent-stores error family, by error code or class.

Never by message text: S3 servers word their messages differently, but the codes (and the HTTP
status behind them) are the protocol.
"""

from __future__ import annotations

from botocore.exceptions import (
    ClientError,
    CredentialRetrievalError,
    HTTPClientError,
    IncompleteReadError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    PartialCredentialsError,
    ResponseStreamingError,
)
from botocore.exceptions import ConnectionError as BotoConnectionError
from urllib3.exceptions import HTTPError as URLLib3Error

from agent_stores.core import StoreConflictError, StoreError, StoreNotFoundError, StoreUnavailableError, tls_failure
from agent_stores.core.s3codes import (
    CONFLICT_CODES,
    DENIED_CODES,
    INVALID_KEY_CODES,
    MISSING_BUCKET_CODES,
    MISSING_CODES,
    UNAVAILABLE_CODES,
    response_code,
)

__all__ = ["error_code", "is_conflict", "is_missing", "translate"]

#: The connection broke or timed out: botocore's own classes, and urllib3's, which escape
#: botocore when a connection breaks while a body streams.
_UNREACHABLE = (BotoConnectionError, HTTPClientError, URLLib3Error, IncompleteReadError, ResponseStreamingError)
_NO_CREDENTIALS = (NoCredentialsError, PartialCredentialsError, CredentialRetrievalError)


def error_code(err: ClientError) -> str:
    """Return the S3 error code of ``err`` (the HTTP status as text when the answer had no body, e.g. HEAD)."""
    return response_code(err.response)


def is_missing(err: ClientError) -> bool:
    """Whether ``err`` says the key does not exist (``NoSuchKey``, or a bodiless 404 answer to HEAD)."""
    return error_code(err) in MISSING_CODES


def is_conflict(err: ClientError) -> bool:
    """Whether ``err`` says a condition (``If-Match`` / ``If-None-Match``) did not hold."""
    return error_code(err) in CONFLICT_CODES


def translate(
    err: BaseException, *, bucket: str, key: str | None = None, conditional: bool = False
) -> Exception | None:
    """Return the agent-stores error for a boto3/botocore error, or ``None`` to let ``err`` propagate.

    The caller raises the result ``from err``. Pure: nothing is logged or retried here.

    Args:
        err: What boto3 raised.
        bucket: The bucket of the request, named in the message.
        key: The object key, if the request had one.
        conditional: The request carried ``If-Match``: a ``NoSuchKey`` answer then means the
            condition failed (servers differ: some answer 412, some 404), so it is a conflict.

    Returns:
        ``StoreConflictError`` for a failed condition; ``StoreNotFoundError`` when the bucket
        does not exist; ``StoreError`` when the server refused the credentials, a permission,
        the TLS handshake or the request itself, or the configuration is unusable (retrying
        never helps); ``StoreUnavailableError`` when the endpoint could not be reached, timed
        out or could not serve now; ``ValueError`` for a request S3 refuses as malformed;
        ``None`` for anything else (a bug stays a bug).
    """
    where = f"s3://{bucket}/{key}" if key is not None else f"s3://{bucket}"
    if isinstance(err, ClientError):
        code = error_code(err)
        if code in CONFLICT_CODES or (conditional and code in MISSING_CODES):
            return StoreConflictError(f"{where}: the condition did not hold ({code})")
        if code in MISSING_BUCKET_CODES:
            return StoreNotFoundError(
                f"{where}: the S3 bucket {bucket!r} does not exist; create it, or pass create_bucket=True "
                "to have it created"
            )
        if code in DENIED_CODES:
            return StoreError(
                f"{where}: S3 refused the credentials, a permission or the request ({code}); check the "
                "credentials and the IAM policy (s3:GetObject, s3:PutObject, s3:DeleteObject, s3:ListBucket)"
            )
        if code in INVALID_KEY_CODES:
            return ValueError(f"{where}: S3 refused the key ({code})")
        status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        if status >= 500 or code in UNAVAILABLE_CODES:
            return StoreUnavailableError(f"{where}: S3 did not serve the request ({code})")
        return None
    if isinstance(err, ParamValidationError):
        return ValueError(f"{where}: invalid S3 request parameters")
    if isinstance(err, _NO_CREDENTIALS):
        return StoreError(f"{where}: no usable AWS credentials ({type(err).__name__}); check the credential chain")
    if isinstance(err, NoRegionError):
        return StoreError(f"{where}: no AWS region configured; pass region=... or set AWS_REGION")
    if isinstance(err, _UNREACHABLE):
        if tls := tls_failure(err):
            advice = tls.advice("ca_bundle and the endpoint's host name", "client_cert and client_key")
            return StoreError(f"{where}: {advice}")
        return StoreUnavailableError(f"{where}: the S3 endpoint could not be reached ({type(err).__name__})")
    return None
