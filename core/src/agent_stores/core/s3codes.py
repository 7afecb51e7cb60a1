"""S3's error codes by what they mean, shared by every backend that speaks S3.

The S3 backend (boto3) and the fsspec backend on s3fs classify answers the same way, by code
(or, for a bodiless answer such as HEAD's, by HTTP status), never by message text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "CONFLICT_CODES",
    "DENIED_CODES",
    "INVALID_KEY_CODES",
    "MISSING_BUCKET_CODES",
    "MISSING_CODES",
    "UNAVAILABLE_CODES",
    "response_code",
]

#: A conditional request whose condition did not hold: 412 ``PreconditionFailed``, and 409
#: ``ConditionalRequestConflict`` (AWS: a conflicting conditional write to the same key is in
#: progress; the condition cannot be granted now, so the writer re-reads as after a 412).
CONFLICT_CODES: Final = frozenset({"PreconditionFailed", "412", "ConditionalRequestConflict", "409"})
#: The key (or, for HEAD, anything) is absent.
MISSING_CODES: Final = frozenset({"NoSuchKey", "404", "NotFound"})
#: The bucket is absent: the store cannot be used until it is created.
MISSING_BUCKET_CODES: Final = frozenset({"NoSuchBucket"})
#: The server refused the credentials or a permission, or does not implement the request:
#: retrying never helps, the credentials, the policy or the server must change.
DENIED_CODES: Final = frozenset(
    {
        "AccessDenied",
        "AccountProblem",
        "AllAccessDisabled",
        "InvalidAccessKeyId",
        "SignatureDoesNotMatch",
        "ExpiredToken",
        "InvalidToken",
        "TokenRefreshRequired",
        "AuthorizationHeaderMalformed",
        "RequestTimeTooSkewed",
        "NotImplemented",
        "401",
        "403",
        "501",
    }
)
#: The server could not serve the request now (overloaded, failing, timed out): retrying may succeed.
UNAVAILABLE_CODES: Final = frozenset(
    {"SlowDown", "RequestTimeout", "ServiceUnavailable", "InternalError", "500", "502", "503", "504"}
)
#: Key shapes S3 refuses; the stores validate keys before sending, so these mean a stricter server.
INVALID_KEY_CODES: Final = frozenset({"KeyTooLongError", "InvalidURI", "InvalidObjectName"})


def response_code(response: Mapping[str, Any]) -> str:
    """The error code of a botocore error response; the HTTP status as text when it had no body."""
    error: Mapping[str, Any] = response.get("Error") or {}
    code: Any = error.get("Code")
    if code:
        return str(code)
    metadata: Mapping[str, Any] = response.get("ResponseMetadata") or {}
    status: Any = metadata.get("HTTPStatusCode")
    return str(status) if status is not None else ""
