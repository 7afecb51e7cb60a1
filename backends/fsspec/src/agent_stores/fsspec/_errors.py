"""Translation of what a filesystem raises (``OSError``, paramiko, s3fs, botocore) by class, errno or S3 code."""

from __future__ import annotations

import errno
import functools
import socket
from typing import Any, Final, NamedTuple, cast

from agent_stores.core import StoreConflictError, StoreError, StoreNotFoundError, StoreUnavailableError, tls_failure
from agent_stores.core.s3codes import (
    CONFLICT_CODES,
    DENIED_CODES,
    INVALID_KEY_CODES,
    MISSING_BUCKET_CODES,
    UNAVAILABLE_CODES,
)

__all__ = ["s3_code", "translate"]

#: Raised as they are: bad keys, our own errors (conditions the operations checked), and the
#: file/directory conflicts the AgentFileStore protocol names.
_PASS_THROUGH: Final = (ValueError, StoreError, IsADirectoryError, NotADirectoryError)
#: Permission refused by the local system or the server (``PermissionError`` is EACCES/EPERM).
_REFUSED_ERRNOS: Final = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
#: A disk that fails or is full, a server or network that is gone, busy or too slow.
_UNAVAILABLE_ERRNOS: Final = frozenset(
    {
        errno.EIO,
        errno.ENOSPC,
        errno.EDQUOT,
        errno.ESTALE,
        errno.EBUSY,
        errno.EREMOTEIO,
        errno.ETIMEDOUT,
        errno.ENETDOWN,
        errno.ENETUNREACH,
        errno.EHOSTDOWN,
        errno.EHOSTUNREACH,
        errno.ENOTCONN,
        errno.ESHUTDOWN,
    }
)


class _ClientErrors(NamedTuple):
    """The classes of the optional client libraries (paramiko, botocore) that are installed."""

    refused: tuple[type[BaseException], ...]
    unreachable: tuple[type[BaseException], ...]


@functools.cache
def _client_errors() -> _ClientErrors:
    refused: list[type[BaseException]] = []
    unreachable: list[type[BaseException]] = [ConnectionError, TimeoutError, EOFError, socket.gaierror, socket.herror]
    try:
        from paramiko.ssh_exception import AuthenticationException, BadHostKeyException, SSHException
    except ImportError:
        pass
    else:
        refused += [AuthenticationException, BadHostKeyException]
        unreachable.append(SSHException)  # negotiation failed or the session dropped
    try:
        from botocore import exceptions as boto
    except ImportError:
        pass
    else:
        refused += [boto.NoCredentialsError, boto.PartialCredentialsError, boto.CredentialRetrievalError]
        refused.append(boto.NoRegionError)
        unreachable += [boto.ConnectionError, boto.HTTPClientError, boto.IncompleteReadError]
        unreachable.append(boto.ResponseStreamingError)
    return _ClientErrors(tuple(refused), tuple(unreachable))


def s3_code(err: BaseException) -> str | None:
    """The S3 error code of a botocore ``ClientError`` behind ``err`` (s3fs chains it as the cause), or ``None``."""
    current: BaseException | None = err
    while current is not None:
        response: Any = getattr(current, "response", None)
        if isinstance(response, dict):
            error: Any = cast(dict[str, Any], response).get("Error")
            code: Any = cast(dict[str, Any], error).get("Code") if isinstance(error, dict) else None
            return None if code is None else str(code)
        current = current.__cause__
    return None


def translate(err: BaseException, *, what: str, key: str, where: str) -> Exception | None:
    """Return the agent-stores error for what a filesystem raised, or ``None`` to let ``err`` propagate.

    The caller raises the result ``from err``. Pure: nothing is logged or retried here.

    Args:
        err: What the filesystem (local, SFTP through paramiko, S3 through s3fs, any other) raised.
        what: The operation (``get``, ``put``...).
        key: The key it was for.
        where: The store, as its driver's ``repr`` (protocol and root, never credentials).

    Returns:
        ``StoreConflictError`` for a failed S3 condition; ``StoreError`` when the system or the
        server refused a permission, the credentials, the host key or the TLS handshake, or the
        bucket is absent (retrying never helps); ``StoreUnavailableError`` when the disk fails
        or is full, or the server could not be reached, dropped the connection or timed out;
        ``ValueError`` for a name too long for the filesystem; ``None`` for anything else,
        including our own errors and the ``ValueError``, ``IsADirectoryError`` and
        ``NotADirectoryError`` the operations raise on purpose.
    """
    if isinstance(err, _PASS_THROUGH):
        return None
    at = f"{what} {key!r} on {where}"
    code = s3_code(err)
    if code is not None:
        return _from_s3_code(code, at)
    clients = _client_errors()
    if isinstance(err, clients.refused):
        return StoreError(
            f"{at}: the server refused the credentials or the host key, or none are configured "
            f"({type(err).__name__}); check the user, the key or password, and the known hosts"
        )
    if isinstance(err, OSError) and (isinstance(err, PermissionError) or err.errno in _REFUSED_ERRNOS):
        return StoreError(f"{at}: permission denied; check the permissions of the root folder for this user")
    if isinstance(err, OSError) and err.errno == errno.ENAMETOOLONG:
        return ValueError(f"{at}: a name is too long for this filesystem")
    if isinstance(err, (OSError, *clients.unreachable)) and (tls := tls_failure(err)):
        return StoreError(f"{at}: {tls}; check the certificate authorities, the host name and the client certificate")
    if isinstance(err, clients.unreachable):
        return StoreUnavailableError(f"{at} failed: {type(err).__name__}")
    if isinstance(err, OSError) and (err.errno is None or err.errno in _UNAVAILABLE_ERRNOS):
        # No errno: paramiko's closed socket, or a bare SFTP failure status, which a dropped
        # connection also produces.
        return StoreUnavailableError(f"{at} failed: {type(err).__name__}")
    return None


def _from_s3_code(code: str, at: str) -> Exception | None:
    if code in CONFLICT_CODES:
        return StoreConflictError(f"{at}: the condition did not hold ({code})")
    if code in MISSING_BUCKET_CODES:
        return StoreNotFoundError(f"{at}: the S3 bucket does not exist; create it")
    if code in DENIED_CODES:
        return StoreError(f"{at}: S3 refused the credentials, a permission or the request ({code}); check them")
    if code in INVALID_KEY_CODES:
        return ValueError(f"{at}: S3 refused the key ({code})")
    if code in UNAVAILABLE_CODES:
        return StoreUnavailableError(f"{at}: S3 did not serve the request ({code})")
    return None
