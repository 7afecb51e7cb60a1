"""``translate()`` of the SQLite backend as a table: each error, made by sqlite3 itself, and the class it becomes."""

from __future__ import annotations

import errno
import sqlite3
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest

from agent_stores.core import StoreConflictError, StoreError, StoreUnavailableError
from agent_stores.sqlite._errors import translate


def _raised(action: Callable[[], object]) -> BaseException:
    try:
        action()
    except BaseException as err:
        return err
    raise AssertionError("expected the action to raise")


def _table(connection: sqlite3.Connection) -> None:
    connection.execute("CREATE TABLE t (k TEXT PRIMARY KEY, v BLOB)")
    connection.execute("INSERT INTO t VALUES ('a', x'00')")


def unique_violation(tmp: Path) -> BaseException:
    with closing(sqlite3.connect(":memory:")) as db:
        _table(db)
        return _raised(lambda: db.execute("INSERT INTO t VALUES ('a', x'01')"))


def trigger_abort(tmp: Path) -> BaseException:
    with closing(sqlite3.connect(":memory:")) as db:
        _table(db)
        db.execute("CREATE TRIGGER guard BEFORE UPDATE ON t BEGIN SELECT RAISE(ABORT, 'version'); END")
        return _raised(lambda: db.execute("UPDATE t SET v = x'02'"))


def busy_past_timeout(tmp: Path) -> BaseException:
    path = tmp / "busy.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as holder:
        _table(holder)
        holder.execute("BEGIN EXCLUSIVE")
        with closing(sqlite3.connect(path, timeout=0)) as other:
            return _raised(lambda: other.execute("SELECT * FROM t").fetchall())


def read_only_database(tmp: Path) -> BaseException:
    path = tmp / "ro.db"
    with closing(sqlite3.connect(path)) as db:
        _table(db)
        db.commit()
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        return _raised(lambda: db.execute("INSERT INTO t VALUES ('b', x'00')"))


def cannot_open(tmp: Path) -> BaseException:
    return _raised(lambda: sqlite3.connect(tmp / "no-such-folder" / "x.db"))


def not_a_database(tmp: Path) -> BaseException:
    path = tmp / "text.db"
    path.write_bytes(b"this is a text file, not a database; " * 100)
    with closing(sqlite3.connect(path)) as db:
        return _raised(lambda: db.execute("SELECT * FROM sqlite_master").fetchall())


def too_big(tmp: Path) -> BaseException:
    with closing(sqlite3.connect(":memory:")) as db:
        _table(db)
        db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 100)
        return _raised(lambda: db.execute("INSERT INTO t VALUES ('big', ?)", (b"x" * 1000,)))


def disk_io_error(tmp: Path) -> BaseException:
    # A failing disk cannot be had on demand: the error as sqlite3 makes it (the class, then its code).
    err = sqlite3.OperationalError("disk I/O error")
    err.sqlite_errorcode = sqlite3.SQLITE_IOERR_WRITE  # type: ignore[attr-defined]
    err.sqlite_errorname = "SQLITE_IOERR_WRITE"  # type: ignore[attr-defined]
    return err


def syntax_error(tmp: Path) -> BaseException:
    with closing(sqlite3.connect(":memory:")) as db:
        return _raised(lambda: db.execute("SELEC 1"))


def no_such_table(tmp: Path) -> BaseException:
    with closing(sqlite3.connect(":memory:")) as db:
        return _raised(lambda: db.execute("SELECT * FROM missing"))


def unbindable_parameter(tmp: Path) -> BaseException:
    with closing(sqlite3.connect(":memory:")) as db:
        return _raised(lambda: db.execute("SELECT ?", (object(),)))


def folder_not_writable(tmp: Path) -> BaseException:
    return PermissionError(errno.EACCES, "Permission denied", str(tmp / "agent.db"))


def read_only_file_system(tmp: Path) -> BaseException:
    return OSError(errno.EROFS, "Read-only file system", str(tmp / "agent.db"))


def disk_full(tmp: Path) -> BaseException:
    return OSError(errno.ENOSPC, "No space left on device", str(tmp / "agent.db"))


def folder_missing(tmp: Path) -> BaseException:
    return _raised(lambda: (tmp / "missing" / "agent.db").open("x"))


TABLE: list[tuple[Callable[[Path], BaseException], type[Exception] | None]] = [
    (unique_violation, StoreConflictError),
    (trigger_abort, StoreConflictError),
    (busy_past_timeout, StoreUnavailableError),
    (disk_io_error, StoreUnavailableError),
    (disk_full, StoreUnavailableError),
    (read_only_database, StoreError),
    (cannot_open, StoreError),
    (not_a_database, StoreError),
    (folder_not_writable, StoreError),
    (read_only_file_system, StoreError),
    (too_big, ValueError),
    (syntax_error, None),
    (no_such_table, None),
    (unbindable_parameter, None),
    (folder_missing, None),
]


@pytest.mark.parametrize(("make", "expected"), TABLE, ids=[make.__name__ for make, _ in TABLE])
def test_translate(
    make: Callable[[Path], BaseException],
    expected: type[Exception] | None,
    tmp_path: Path,
    check_translation: Callable[..., None],
) -> None:
    err = make(tmp_path)
    translated = translate(err, "op")
    check_translation(err, translated, expected, prefix="op: ")
    if expected is StoreError:
        assert "check" in str(translated)  # says what to check
