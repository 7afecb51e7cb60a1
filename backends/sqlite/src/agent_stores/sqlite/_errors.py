"""Translation of ``sqlite3`` errors (and the file errors of creating a database) by SQLite result code or class."""

from __future__ import annotations

import errno
import sqlite3
from typing import Final

from agent_stores.core import StoreConflictError, StoreError, StoreUnavailableError

__all__ = ["translate"]

#: A failed condition: our trigger's RAISE(ABORT), or an exclusive INSERT hitting an existing key.
_CONFLICT_CODES: Final = frozenset(
    {sqlite3.SQLITE_CONSTRAINT_TRIGGER, sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY, sqlite3.SQLITE_CONSTRAINT_UNIQUE}
)
#: Primary result codes after which retrying later may succeed: a lock held past the busy
#: timeout, an interrupted statement, a failing or full disk, memory.
_UNAVAILABLE_CODES: Final = frozenset(
    {
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
        sqlite3.SQLITE_NOMEM,
        sqlite3.SQLITE_INTERRUPT,
        sqlite3.SQLITE_IOERR,
        sqlite3.SQLITE_FULL,
        sqlite3.SQLITE_PROTOCOL,
    }
)
#: Primary result codes that retrying never fixes: the file is read-only to this process, cannot
#: be opened, or is not a (whole) SQLite database.
_REFUSED_CODES: Final = frozenset(
    {
        sqlite3.SQLITE_READONLY,
        sqlite3.SQLITE_PERM,
        sqlite3.SQLITE_AUTH,
        sqlite3.SQLITE_CANTOPEN,
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_CORRUPT,
    }
)
#: File errors of creating the database: permission refused, or a disk that fails or is full.
_REFUSED_ERRNOS: Final = frozenset({errno.EACCES, errno.EPERM, errno.EROFS})
_UNAVAILABLE_ERRNOS: Final = frozenset({errno.EIO, errno.ENOSPC, errno.EDQUOT})


def translate(err: BaseException, what: str) -> Exception | None:
    """Return the agent-stores error for a ``sqlite3`` or file error, or ``None`` to let ``err`` propagate.

    The caller raises the result ``from err``. Pure: nothing is logged or retried here.

    Args:
        err: What ``sqlite3`` (through aiosqlite) or creating the file raised.
        what: The operation, named first in the message.

    Returns:
        ``StoreConflictError`` for a failed condition; ``StoreError`` when the file is
        read-only to this process, cannot be opened or is not a SQLite database (retrying
        never helps); ``StoreUnavailableError`` for a lock held past the busy timeout or a
        failing or full disk; ``ValueError`` for a value past SQLite's limits; ``None`` for
        anything else (a bug stays a bug).
    """
    if isinstance(err, sqlite3.Error):
        code = getattr(err, "sqlite_errorcode", None)
        if code is None:
            return None
        message = f"{what}: {getattr(err, 'sqlite_errorname', None) or type(err).__name__} ({err})"
        if code in _CONFLICT_CODES:
            return StoreConflictError(message)
        if code & 0xFF in _UNAVAILABLE_CODES:
            return StoreUnavailableError(message)
        if code & 0xFF in _REFUSED_CODES:
            return StoreError(f"{message}; check the path and the permissions of the file and its folder")
        if code & 0xFF == sqlite3.SQLITE_TOOBIG:
            return ValueError(message)
        return None
    if isinstance(err, OSError) and err.errno in _REFUSED_ERRNOS:
        return StoreError(f"{what}: {err.strerror}; check the permissions of the file and its folder")
    if isinstance(err, OSError) and err.errno in _UNAVAILABLE_ERRNOS:
        return StoreUnavailableError(f"{what}: {err.strerror}")
    return None
