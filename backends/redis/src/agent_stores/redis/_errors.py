"""Translation of redis-py errors into the agent-stores error family, by class and server error code.

A server error is named by its code, the first word of the reply (``WRONGTYPE``, ``BUSY``),
never by the rest of its text.
"""

from __future__ import annotations

import ssl
from typing import Final

from agent_stores.core import CorruptRecordError, StoreError, StoreUnavailableError, tls_failure
from redis import exceptions as redis_errors

__all__ = ["error_code", "translate"]

#: The server refused the client: its credentials, or a command its ACL user may not run.
_REFUSED: Final = (
    redis_errors.AuthenticationError,
    redis_errors.AuthorizationError,
    redis_errors.AuthenticationWrongNumberOfArgsError,
    redis_errors.ExternalAuthProviderError,
    redis_errors.NoPermissionError,
)
#: The connection failed, broke or timed out (redis-py's classes and the built-ins its
#: connections and the funnel's deadline raise; a TLS connection that ended).
_UNREACHABLE: Final = (
    redis_errors.ConnectionError,
    redis_errors.TimeoutError,
    ConnectionError,
    TimeoutError,
    ssl.SSLEOFError,
    ssl.SSLZeroReturnError,
)
#: Server errors after which retrying later may succeed: loading, failing over, a replica that
#: may not write, a cluster reshaping, a script running too long, memory full.
_UNAVAILABLE_CODES: Final = frozenset({"LOADING", "READONLY", "MASTERDOWN", "CLUSTERDOWN", "TRYAGAIN", "BUSY", "OOM"})
_UNAVAILABLE_REPLIES: Final = (
    redis_errors.ClusterDownError,
    redis_errors.TryAgainError,
    redis_errors.ReadOnlyError,
    redis_errors.OutOfMemoryError,
)


def error_code(err: redis_errors.ResponseError) -> str:
    """The error code of a server error: the first word of the reply (``WRONGTYPE``, ``NOSCRIPT``...).

    Errors raised inside a script keep their code; redis-py strips the code of the errors it
    maps to classes, so those are named by their class.
    """
    text = str(err.args[0]) if err.args else ""
    word = text.split(" ", 1)[0]
    return word if word.isupper() else type(err).__name__


def translate(err: BaseException, *, what: str, address: str) -> Exception | None:
    """Return the agent-stores error for a redis-py error, or ``None`` to let ``err`` propagate.

    The caller raises the result ``from err``. Pure: nothing is logged or retried here.

    Args:
        err: What the client raised.
        what: The operation, named first in the message.
        address: ``host:port`` of the server (never with credentials).

    Returns:
        ``StoreError`` when the server refused the credentials, an ACL permission or the TLS
        handshake (retrying never helps); ``StoreUnavailableError`` when it could not be
        reached, timed out, or answered that it cannot serve now (loading, failing over,
        cluster down, busy, out of memory); ``CorruptRecordError`` when a key of the store
        holds another type (written by something else); ``None`` for anything else.
    """
    if isinstance(err, redis_errors.RedisClusterException):
        # "No reachable startup node" carries what the last node raised as its cause.
        if err.__cause__ is not None and not isinstance(err.__cause__, redis_errors.RedisClusterException):
            return translate(err.__cause__, what=what, address=address) or _unavailable(err, what, address)
        if type(err) is redis_errors.RedisClusterException or isinstance(err, redis_errors.SlotNotCoveredError):
            return _unavailable(err, what, address)  # no usable slot map: the cluster is reshaping or down
        return None
    if isinstance(err, redis_errors.NoPermissionError):
        return StoreError(f"{what}: the Redis user may not run this command at {address}; check its ACL rules")
    if isinstance(err, _REFUSED):
        return StoreError(f"{what}: Redis at {address} refused the credentials; check the user name and password")
    if isinstance(err, (*_UNREACHABLE, OSError)) and (tls := tls_failure(err)):
        advice = tls.advice("ssl_ca_certs and the host name", "ssl_certfile and ssl_keyfile")
        return StoreError(f"{what}: Redis at {address}: {advice}")
    if isinstance(err, redis_errors.ResponseError):
        code = error_code(err)
        if code == "WRONGTYPE":
            return CorruptRecordError(
                f"{what}: a Redis key of this store holds another type (written by something else); nothing was changed"
            )
        if code in _UNAVAILABLE_CODES or isinstance(err, _UNAVAILABLE_REPLIES):
            return StoreUnavailableError(f"{what}: Redis at {address} cannot serve now ({code})")
        return None
    if isinstance(err, _UNREACHABLE):
        return _unavailable(err, what, address)
    return None


def _unavailable(err: BaseException, what: str, address: str) -> StoreUnavailableError:
    return StoreUnavailableError(f"{what}: Redis at {address} is unavailable ({type(err).__name__})")
