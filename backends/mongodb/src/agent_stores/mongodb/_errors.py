"""Translation of pymongo errors into the agent-stores error family, by class and server error code."""

from __future__ import annotations

from typing import Any, Final

from pymongo.errors import (
    BulkWriteError,
    ConfigurationError,
    ConnectionFailure,
    DuplicateKeyError,
    ExecutionTimeout,
    OperationFailure,
    WriteConcernError,
)

from agent_stores.core import StoreConflictError, StoreError, StoreUnavailableError, tls_failure

__all__ = ["translate"]

#: A unique index refused the write: the condition (absent, at a version) did not hold.
_DUPLICATE_KEY: Final = 11000
#: The server refused the credentials or a permission.
_REFUSED_CODES: Final = frozenset(
    {
        11,  # UserNotFound
        13,  # Unauthorized
        18,  # AuthenticationFailed
        334,  # MechanismUnavailable
    }
)
#: The server is shutting down, stepping down, not primary, or answered too late; a cursor was
#: lost to a restart. (Network failures arrive as ConnectionFailure.)
_UNAVAILABLE_CODES: Final = frozenset(
    {
        6,  # HostUnreachable
        7,  # HostNotFound
        43,  # CursorNotFound
        50,  # MaxTimeMSExpired
        89,  # NetworkTimeout
        91,  # ShutdownInProgress
        189,  # PrimarySteppedDown
        262,  # ExceededTimeLimit
        9001,  # SocketException
        10107,  # NotWritablePrimary
        11600,  # InterruptedAtShutdown
        11602,  # InterruptedDueToReplStateChange
        13435,  # NotPrimaryNoSecondaryOk
        13436,  # NotPrimaryOrSecondary
    }
)


def translate(err: BaseException, what: str) -> Exception | None:
    """Return the agent-stores error for a pymongo error, or ``None`` to let ``err`` propagate.

    The caller raises the result ``from err``. Pure: nothing is logged or retried here.

    Args:
        err: What pymongo raised.
        what: The operation, named first in the message.

    Returns:
        ``StoreConflictError`` for a duplicate key (a failed condition); ``StoreError`` when the
        server refused the credentials, a permission or the TLS handshake, or the client
        configuration is unusable (retrying never helps); ``StoreUnavailableError`` when the
        server could not be reached, timed out, or is failing over or shutting down;
        ``None`` for anything else (a bug stays a bug).
    """
    code = _error_code(err)
    message = f"{what}: {type(err).__name__}" + (f" (code {code})" if code is not None else "")
    if code == _DUPLICATE_KEY:
        return StoreConflictError(message)
    if code in _REFUSED_CODES:
        return StoreError(
            f"{message}: the server refused the credentials or a permission; "
            "check the user, the password, authSource and the user's roles"
        )
    if isinstance(err, ConnectionFailure) and (tls := tls_failure(err)):
        return StoreError(f"{message}: {tls.advice('tlsCAFile and the host name', 'tlsCertificateKeyFile')}")
    if isinstance(err, ConnectionFailure | ExecutionTimeout | WriteConcernError) or code in _UNAVAILABLE_CODES:
        return StoreUnavailableError(message)
    if isinstance(err, ConfigurationError):
        return StoreError(f"{message}: the client cannot be used as configured; check the URL and client options")
    return None


def _error_code(err: BaseException) -> int | None:
    if isinstance(err, DuplicateKeyError):
        return _DUPLICATE_KEY
    if isinstance(err, BulkWriteError):
        details: Any = err.details
        for item in details.get("writeErrors", []):
            if item.get("code") == _DUPLICATE_KEY:
                return _DUPLICATE_KEY
        return None
    if isinstance(err, OperationFailure):
        return err.code
    return None
