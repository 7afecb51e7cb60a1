"""Translation of boto3/botocore errors into the agent-stores error family, by error code or class.

Never by message text: S3 servers word their messages differently, but the codes (and the HTTP
status behind them) are the protocol.
"""

from __future__ import annotations

from typing import Final

from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    CredentialRetrievalError,
    HTTPClientError,
    NoCredentialsError,
    NoRegionError,
    ParamValidationError,
    PartialCredentialsError,
)
from botocore.exceptions import ConnectionError as BotoConnectionError
from urllib3.exceptions import HTTPError as URLLib3Error

from agent_stores.core import StoreConflictError, StoreError, StoreUnavailableError, tls_failure
from agent_stores.core.s3codes import CONFLICT_CODES, MISSING_CODES, response_code

__all__ = ["error_code", "is_conflict", "is_missing", "translate"]

#: Credentials are wrong or lack a permission: the store cannot be used until that is fixed.
_DENIED_CODES: Final = frozenset(
    {
        "AccessDenied",
        "AllAccessDisabled",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
        "AuthorizationHeaderMalformed",
        "403",
        "401",
    }
)
#: Key shapes S3 refuses; we validate before sending, so these mean a server stricter than S3.
_INVALID_KEY_CODES: Final = frozenset({"KeyTooLongError", "InvalidURI", "InvalidObjectName"})


def error_code(err: ClientError) -> str:
    """Return the S3 error code of ``err`` (the HTTP status as text when the answer had no body, e.g. HEAD)."""
    return response_code(err.response)


def is_missing(err: ClientError) -> bool:
    """Whether ``err`` says the key does not exist (``NoSuchKey``, or a bodiless 404 answer to HEAD)."""
    return error_code(err) in MISSING_CODES


def is_conflict(err: ClientError) -> bool:
    """Whether ``err`` says a condition (``If-Match`` / ``If-None-Match``) did not hold."""
    return error_code(err) in CONFLICT_CODES


def translate(err: Exception, *, bucket: str, key: str | None = None, conditional: bool = False) -> Exception:
    """Return the agent-stores error for a boto3/botocore error; the caller raises it ``from err``.

    Args:
        err: What boto3 raised.
        bucket: The bucket of the request, named in the message.
        key: The object key, if the request had one.
        conditional: The request carried ``If-Match``: a ``NoSuchKey`` answer then means the
            condition failed (servers differ: some answer 412, some 404), so it is a conflict.

    Returns:
        ``StoreConflictError`` for a failed condition, ``StoreUnavailableError`` when the server,
        the bucket or the credentials are not usable, ``ValueError`` for a request S3 refuses
        as malformed, ``StoreError`` for any other S3 error; ``err`` itself when it is not a
        boto3 error.
    """
    where = f"s3://{bucket}/{key}" if key is not None else f"s3://{bucket}"
    if isinstance(err, ClientError):
        code = error_code(err)
        if code in CONFLICT_CODES or (conditional and code in MISSING_CODES):
            return StoreConflictError(f"{where}: the condition did not hold ({code})")
        if code == "NoSuchBucket":
            return StoreUnavailableError(
                f"S3 bucket {bucket!r} does not exist; create it, or pass create_bucket=True to have it created"
            )
        if code in _DENIED_CODES:
            return StoreUnavailableError(
                f"{where}: S3 refused the credentials or a permission ({code}); check the credentials "
                "and the IAM policy (s3:GetObject, s3:PutObject, s3:DeleteObject, s3:ListBucket)"
            )
        if code in _INVALID_KEY_CODES:
            return ValueError(f"{where}: S3 refused the key ({code})")
        status = err.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        if status >= 500 or code in {"SlowDown", "RequestTimeout", "ServiceUnavailable", "InternalError"}:
            return StoreUnavailableError(f"{where}: S3 did not serve the request ({code})")
        return StoreError(f"{where}: S3 refused the request ({code})")
    if isinstance(err, ParamValidationError):
        return ValueError(f"{where}: invalid S3 request parameters")
    if isinstance(err, NoCredentialsError | PartialCredentialsError | CredentialRetrievalError):
        return StoreUnavailableError(f"{where}: no usable AWS credentials (standard credential chain)")
    if isinstance(err, NoRegionError):
        return StoreUnavailableError(f"{where}: no AWS region configured; pass region=... or set AWS_REGION")
    if isinstance(err, BotoConnectionError | HTTPClientError) and (tls := tls_failure(err)):
        advice = tls.advice("ca_bundle and the endpoint's host name", "client_cert and client_key")
        return StoreError(f"{where}: {advice}")
    if isinstance(err, BotoConnectionError | HTTPClientError | URLLib3Error):
        # urllib3's own errors escape botocore when a connection breaks while a body streams.
        return StoreUnavailableError(f"{where}: the S3 endpoint could not be reached")
    if isinstance(err, BotoCoreError):
        return StoreUnavailableError(f"{where}: the S3 request failed ({type(err).__name__})")
    return err
