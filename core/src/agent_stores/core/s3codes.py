"""S3's error codes for conditional and missing-key answers, shared by every backend that speaks S3.

The S3 backend (boto3) and the fsspec backend on s3fs classify answers the same way, by code
(or, for a bodiless answer such as HEAD's, by HTTP status), never by message text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["CONFLICT_CODES", "MISSING_CODES", "response_code"]

#: A conditional request whose condition did not hold: 412 ``PreconditionFailed``, and 409
#: ``ConditionalRequestConflict`` (AWS: a conflicting conditional write to the same key is in
#: progress; the condition cannot be granted now, so the writer re-reads as after a 412).
CONFLICT_CODES: Final = frozenset({"PreconditionFailed", "412", "ConditionalRequestConflict", "409"})
#: The key (or, for HEAD, anything) is absent.
MISSING_CODES: Final = frozenset({"NoSuchKey", "404", "NotFound"})


def response_code(response: Mapping[str, Any]) -> str:
    """The error code of a botocore error response; the HTTP status as text when it had no body."""
    error: Mapping[str, Any] = response.get("Error") or {}
    code: Any = error.get("Code")
    if code:
        return str(code)
    metadata: Mapping[str, Any] = response.get("ResponseMetadata") or {}
    status: Any = metadata.get("HTTPStatusCode")
    return str(status) if status is not None else ""
