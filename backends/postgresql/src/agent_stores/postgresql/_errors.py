"""Translation of psycopg errors by SQLSTATE or class, under the one error policy of every backend."""

from __future__ import annotations

from typing import Final

import psycopg
from psycopg_pool import PoolTimeout

from agent_stores.core import StoreConflictError, StoreError, StoreUnavailableError

__all__ = ["CONFLICT_SQLSTATE", "translate"]

#: What our append function raises when the log is not at the expected version.
CONFLICT_SQLSTATE: Final = "AS409"

#: A failed condition: ours, or a unique key that already exists.
_CONFLICT: Final = frozenset({CONFLICT_SQLSTATE, "23505"})
#: SQLSTATE classes and codes after which retrying later may succeed: the connection broke, the
#: server is shutting down, starting or out of resources, a statement timed out or lost a lock.
_UNAVAILABLE_CLASSES: Final = frozenset({"08", "53", "57", "58"})
_UNAVAILABLE: Final = frozenset({"40001", "40P01", "55P03", "55006"})
#: Codes that retrying never fixes: credentials, permissions, a database that does not exist, a
#: read-only server (a replica), a role or database past its connection limit by configuration.
_REFUSED_CLASSES: Final = frozenset({"28"})
_REFUSED: Final = frozenset({"3D000", "25006", "42501"})
#: A value past PostgreSQL's limits (an index row or a field too large, text it cannot hold).
_TOO_BIG: Final = frozenset({"54000", "54001", "22021", "22P05"})


def translate(err: BaseException, what: str) -> Exception | None:
    """Return the agent-stores error for a psycopg error, or ``None`` to let ``err`` propagate.

    The caller raises the result ``from err``. Pure: nothing is logged or retried here.

    Args:
        err: What psycopg or psycopg_pool raised.
        what: The operation, named first in the message.

    Returns:
        ``StoreConflictError`` for a failed condition; ``StoreUnavailableError`` when the server
        could not be reached, broke the connection, is shutting down or starting, or a lock or
        statement timed out; ``StoreError`` when the server refused the credentials, a
        permission, the database name, or a write (a read-only replica); ``ValueError`` for a
        value past PostgreSQL's limits; ``None`` for anything else (a bug stays a bug).
    """
    if isinstance(err, PoolTimeout):
        return StoreUnavailableError(f"{what}: no connection to the PostgreSQL server within the pool timeout")
    if not isinstance(err, psycopg.Error):
        return None
    code = err.sqlstate
    name = type(err).__name__
    if code is None:
        # Raised by libpq on the client: the connection failed or broke (refused, reset, timed
        # out, TLS), or the server ended it during startup. libpq gives no SQLSTATE for the
        # latter; it does record whether the server asked for a password.
        pgconn = err.pgconn
        if pgconn is not None and (pgconn.used_password or pgconn.needs_password):
            return StoreError(f"{what}: the server refused the credentials; check the user and its password")
        if isinstance(err, psycopg.OperationalError | psycopg.InterfaceError):
            return StoreUnavailableError(f"{what}: {name} ({_first_line(err)})")
        if isinstance(err, psycopg.DataError):
            return ValueError(f"{what}: {_first_line(err)}")
        return None
    message = f"{what}: {name} [{code}] ({_first_line(err)})"
    if code in _CONFLICT:
        return StoreConflictError(message)
    if code in _TOO_BIG:
        return ValueError(message)
    if code in _UNAVAILABLE or code[:2] in _UNAVAILABLE_CLASSES:
        return StoreUnavailableError(message)
    if code in _REFUSED or code[:2] in _REFUSED_CLASSES:
        return StoreError(f"{message}; check the user, its password and its rights on the database")
    return None


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
