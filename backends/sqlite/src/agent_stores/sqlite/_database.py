"""``SQLiteDatabase``: the one aiosqlite connection the SQLite stores share, and the funnel every statement takes.

Every statement of the backend passes through :meth:`SQLiteDatabase.fetchall` or
:meth:`SQLiteDatabase.execute` (one aiosqlite call, so one thread hop, each), which log it and
translate ``sqlite3`` errors by their SQLite result code (``_errors.translate``), never by
message text. The schema is set up lazily on first use by a numbered list of idempotent
migrations, recorded in the table ``agent_stores_migrations`` and applied under
``BEGIN IMMEDIATE``, so processes opening a new file at the same time apply each migration
exactly once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sqlite3
import time
import weakref
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qsl, quote, unquote, urlsplit

import aiosqlite

from agent_stores.core import StoreError, StoreNotFoundError, StoreUnavailableError, redact_url
from agent_stores.core.urls import check_user_part, parse_seconds

from ._errors import translate

__all__ = ["DEFAULT_BUSY_TIMEOUT", "SCHEMA_VERSION", "SQLiteDatabase", "SQLiteOptions", "parse_sqlite_url"]

logger = logging.getLogger("agent_stores.sqlite")

#: Seconds a statement waits for another connection's write lock before failing (owned connections).
DEFAULT_BUSY_TIMEOUT: Final = 30.0

_MEMORY = ":memory:"
_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")
_JOURNAL_MODES = ("WAL", "DELETE", "TRUNCATE", "PERSIST")

# -- schema ------------------------------------------------------------------------------------
#
# History: one row per log in agent_stores_logs (its length, its version and its expiry) and one
# row per message in agent_stores_messages, ordered by id within a log through the (log_id, id)
# index. A version is a random 63-bit integer drawn by the writer for every append, so a writer
# holding an old version conflicts even after the log was deleted and written again.
#
# A conditional append is ONE statement: an INSERT of all the batch's rows into the view
# agent_stores_append, whose INSTEAD OF trigger runs once per row, in order. The first row
# (first = 1) checks the expected version against the live log and raises ABORT on mismatch
# (SQLITE_CONSTRAINT_TRIGGER, which undoes the whole statement), removes an expired log being
# started over, and creates the log row; every row then inserts its message and bumps the log.
# One statement is atomic and holds the write lock for its whole run, across processes too.
#
# Objects (files and session snapshots): one row per key; the version is the row id, which
# every put replaces with a fresh one (INSERT OR REPLACE) and AUTOINCREMENT never hands out twice.
# ``plain`` is 1 when the data is ASCII without NUL: only such rows may be ruled out by the
# case-insensitive literal filter of file search (see _driver.py).

_MIGRATIONS: Final[tuple[tuple[int, str, tuple[str, ...]], ...]] = (
    (
        1,
        "history logs and messages, objects",
        (
            """CREATE TABLE IF NOT EXISTS agent_stores_logs (
                log_id INTEGER PRIMARY KEY,
                key TEXT NOT NULL UNIQUE,
                session_id TEXT NOT NULL,
                length INTEGER NOT NULL,
                version INTEGER NOT NULL,
                expires_at REAL
            )""",
            """CREATE INDEX IF NOT EXISTS agent_stores_logs_expiry
                ON agent_stores_logs (expires_at) WHERE expires_at IS NOT NULL""",
            """CREATE TABLE IF NOT EXISTS agent_stores_messages (
                id INTEGER PRIMARY KEY,
                log_id INTEGER NOT NULL,
                digest TEXT NOT NULL,
                payload BLOB NOT NULL
            )""",
            "CREATE INDEX IF NOT EXISTS agent_stores_messages_log ON agent_stores_messages (log_id, id)",
            """CREATE TRIGGER IF NOT EXISTS agent_stores_logs_delete AFTER DELETE ON agent_stores_logs
            BEGIN
                DELETE FROM agent_stores_messages WHERE log_id = OLD.log_id;
            END""",
            """CREATE VIEW IF NOT EXISTS agent_stores_append
                (key, session_id, expected, version, expires_at, now, first, digest, payload)
            AS SELECT NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL WHERE 0""",
            """CREATE TRIGGER IF NOT EXISTS agent_stores_append_row INSTEAD OF INSERT ON agent_stores_append
            BEGIN
                -- First row: the live log (unexpired) must be at the expected version (NULL: no live log).
                SELECT RAISE(ABORT, 'agent-stores: the log is not at the expected version')
                WHERE NEW.first AND NEW.expected IS NOT (
                    SELECT version FROM agent_stores_logs
                    WHERE key = NEW.key AND (expires_at IS NULL OR expires_at > NEW.now));
                -- First row: an expired log is started over; the delete trigger drops its messages.
                DELETE FROM agent_stores_logs WHERE NEW.first AND key = NEW.key AND expires_at <= NEW.now;
                INSERT INTO agent_stores_logs (key, session_id, length, version)
                SELECT NEW.key, NEW.session_id, 0, 0 WHERE NEW.first AND NEW.expected IS NULL;
                -- Every row: store the message, then count it; the first row also sets version and expiry.
                INSERT INTO agent_stores_messages (log_id, digest, payload)
                VALUES ((SELECT log_id FROM agent_stores_logs WHERE key = NEW.key), NEW.digest, NEW.payload);
                UPDATE agent_stores_logs
                SET length = length + 1,
                    version = CASE WHEN NEW.first THEN NEW.version ELSE version END,
                    expires_at = CASE WHEN NEW.first THEN NEW.expires_at ELSE expires_at END
                WHERE key = NEW.key;
            END""",
            """CREATE TABLE IF NOT EXISTS agent_stores_objects (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                key TEXT NOT NULL UNIQUE,
                data BLOB NOT NULL,
                plain INTEGER NOT NULL
            )""",
        ),
    ),
)

#: The schema version this release writes: the number of the last migration.
SCHEMA_VERSION: Final = _MIGRATIONS[-1][0]


@dataclass(frozen=True, slots=True)
class SQLiteOptions:
    """How an owned connection is opened.

    Attributes:
        path: The database file, or ``":memory:"`` for a private in-memory database.
        busy_timeout: Seconds a statement waits for another connection's lock before failing
            with ``StoreUnavailableError``: SQLite's own retry, what makes several processes on
            one file safe.
        synchronous: ``PRAGMA synchronous``. ``"NORMAL"`` (the default, with WAL) never
            corrupts the database, and a committed save survives a crash of the process, but
            the last saves before a power loss or OS crash may be rolled back. ``"FULL"`` makes
            every commit durable against power loss too, at an fsync per save.
        journal_mode: ``PRAGMA journal_mode``; ``"WAL"`` (the default) lets readers run while
            one writer writes. Ignored for in-memory databases.
        file_mode: Permission bits of a database file this connection creates (``0o600``:
            only its owner reads the conversations; SQLite gives the ``-wal`` and ``-shm`` files
            the database file's mode). An existing file's mode is never changed.
        must_exist: Open only a database file that exists and holds the stores' tables: the
            file is opened without being created and keeps its journal mode
            (``StoreNotFoundError`` on first use otherwise).
    """

    path: str
    busy_timeout: float = DEFAULT_BUSY_TIMEOUT
    synchronous: str = "NORMAL"
    journal_mode: str = "WAL"
    file_mode: int = 0o600
    must_exist: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.busy_timeout, bool) or not isinstance(self.busy_timeout, int | float):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"busy_timeout must be a number of seconds, got {self.busy_timeout!r}")
        if not self.busy_timeout >= 0:
            raise ValueError(f"busy_timeout must not be negative, got {self.busy_timeout!r}")
        if str(self.synchronous).upper() not in _SYNCHRONOUS:
            raise ValueError(f"synchronous must be one of {', '.join(_SYNCHRONOUS)}, got {self.synchronous!r}")
        if str(self.journal_mode).upper() not in _JOURNAL_MODES:
            raise ValueError(f"journal_mode must be one of {', '.join(_JOURNAL_MODES)}, got {self.journal_mode!r}")
        if isinstance(self.file_mode, bool) or not isinstance(self.file_mode, int) or not 0 <= self.file_mode <= 0o777:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"file_mode must be permission bits such as 0o600, got {self.file_mode!r}")
        if not isinstance(self.must_exist, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"must_exist must be True or False, got {self.must_exist!r}")

    @property
    def in_memory(self) -> bool:
        """Whether the database lives in memory (private to its one connection)."""
        return self.path == _MEMORY


def parse_sqlite_url(url: str, **options: Any) -> SQLiteOptions:
    """Parse a SQLAlchemy-style SQLite URL into :class:`SQLiteOptions`.

    ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db``, ``sqlite://`` or
    ``sqlite:///:memory:`` (in-memory). Query parameters ``busy_timeout`` (seconds),
    ``synchronous`` and ``journal_mode`` set the options; keyword ``options`` override them.

    Raises:
        ValueError: Not a ``sqlite://`` URL, a host is given, the path is empty, or an option
            is unknown or invalid.
    """
    if not isinstance(url, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"expected a sqlite:// URL string, got {type(url).__name__}")
    parts = urlsplit(url)
    if parts.scheme.lower() != "sqlite" or not url.lower().startswith("sqlite://"):
        raise ValueError(f"not a SQLite URL (expected sqlite:///path.db or sqlite://): {redact_url(url)!r}")
    check_user_part(url, what="SQLite URL")
    if parts.netloc:
        raise ValueError(
            f"SQLite URLs take no host: {redact_url(url)!r}; use sqlite:///relative.db or sqlite:////absolute.db"
        )
    if parts.fragment:
        raise ValueError(f"SQLite URLs take no fragment: {redact_url(url)!r}")
    if not parts.path:
        path = _MEMORY
    else:
        path = unquote(parts.path[1:])  # drop the "/" that ends the empty authority
        if not path:
            raise ValueError(
                f"SQLite URL has an empty path: {redact_url(url)!r}; use sqlite:// for an in-memory database"
            )
    try:
        query = dict(parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query)))
    except ValueError as err:
        raise ValueError(f"malformed query in SQLite URL {redact_url(url)!r}") from err
    merged: dict[str, Any] = {**query, **options}
    unknown = sorted(set(merged) - {"busy_timeout", "synchronous", "journal_mode", "file_mode"})
    if unknown:
        raise ValueError(f"unknown SQLite options {unknown}; known: busy_timeout, file_mode, journal_mode, synchronous")
    if isinstance(merged.get("file_mode"), str):
        try:
            merged["file_mode"] = int(merged["file_mode"], 8)
        except ValueError as err:
            raise ValueError(
                f"file_mode must be octal permission bits such as 600, got {merged['file_mode']!r}"
            ) from err
    if isinstance(merged.get("busy_timeout"), str):
        merged["busy_timeout"] = parse_seconds(merged["busy_timeout"], option="busy_timeout", zero=True)
    return SQLiteOptions(path, **merged)


class SQLiteDatabase:
    """One aiosqlite connection, shared by every SQLite store built on it.

    Borrowed (``SQLiteDatabase(connection)``): the connection is never closed and nothing
    database-wide is changed on it (no ``journal_mode`` or ``synchronous`` switch); only our
    tables (``agent_stores_*``) are created. It must be open and in autocommit mode
    (``aiosqlite.connect(..., isolation_level=None)``) because every write of ours is one
    self-committing statement and we must never commit or roll back the caller's pending
    work; its ``row_factory`` must be ``None`` or ``sqlite3.Row`` and its ``text_factory``
    ``str``. This is checked on first use (``ValueError`` otherwise). Statements the caller
    runs on the same connection inside an explicit transaction of their own would include our
    writes in it: keep such transactions out of the shared connection.

    Owned (:meth:`from_url` / :meth:`from_path`): opened lazily on first use, with the
    journal mode, ``synchronous`` level and busy timeout of :class:`SQLiteOptions`, and
    closed by :meth:`aclose`.

    Every statement is one aiosqlite call (one thread hop) through :meth:`fetchall` or
    :meth:`execute`. The rare multi-statement transaction (:meth:`transaction`) holds a lock
    that makes the other tasks' statements on this connection wait until it ends, so none of
    them lands inside it.
    """

    def __init__(self, connection: aiosqlite.Connection) -> None:
        if not isinstance(connection, aiosqlite.Connection):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"expected an aiosqlite.Connection, got {type(connection).__name__}")
        self._borrowed: aiosqlite.Connection | None = connection
        self.options: SQLiteOptions | None = None
        self._init_state()

    def _init_state(self) -> None:
        self._connection: aiosqlite.Connection | None = None  # set once the schema is ready
        self._opened: aiosqlite.Connection | None = None  # an owned connection, once opened
        self._setup_lock = asyncio.Lock()
        self._transaction_lock = asyncio.Lock()
        self._transaction_owner: asyncio.Task[Any] | None = None
        self._closed = False
        self._utf8 = True

    @classmethod
    def for_connection(cls, connection: aiosqlite.Connection) -> SQLiteDatabase:
        """Return the one database wrapping the borrowed ``connection`` (created on first request)."""
        if not isinstance(connection, aiosqlite.Connection):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"expected an aiosqlite.Connection or SQLiteDatabase, got {type(connection).__name__}")
        database = _BORROWED.get(connection)
        if database is None:
            database = _BORROWED[connection] = cls(connection)
        return database

    @classmethod
    def from_options(cls, options: SQLiteOptions) -> SQLiteDatabase:
        """Return an owned database opened with ``options`` on first use."""
        database = cls.__new__(cls)
        database._borrowed = None
        database.options = options
        database._init_state()
        return database

    @classmethod
    def from_url(cls, url: str, **options: Any) -> SQLiteDatabase:
        """Return an owned database for a ``sqlite://`` URL (see :func:`parse_sqlite_url`); no I/O yet."""
        return cls.from_options(parse_sqlite_url(url, **options))

    @classmethod
    def from_path(cls, path: str | Path, **options: Any) -> SQLiteDatabase:
        """Return an owned database on the file ``path`` (``":memory:"`` for in-memory); no I/O yet.

        ``options``: ``busy_timeout``, ``synchronous``, ``journal_mode`` (see :class:`SQLiteOptions`).
        """
        return cls.from_options(SQLiteOptions(str(path), **options))

    @property
    def owned(self) -> bool:
        """Whether :meth:`aclose` closes the connection (it was opened here)."""
        return self._borrowed is None

    # -- the funnel ----------------------------------------------------------------------

    async def fetchall(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        """Run one statement and return all its rows (tuples, or ``sqlite3.Row``)."""
        return await self._statement(sql, parameters, fetch=True)

    async def execute(self, sql: str, parameters: Sequence[Any] = ()) -> int:
        """Run one statement that returns no rows; return how many rows it changed."""
        return await self._statement(sql, parameters, fetch=False)

    async def _statement(self, sql: str, parameters: Sequence[Any], *, fetch: bool) -> Any:
        connection = self._connection or await self._ready()
        lock = self._transaction_lock
        if lock.locked() and self._transaction_owner is not asyncio.current_task():
            async with lock:  # another task's transaction is open: run after it, not inside it
                return await self._call(connection, sql, parameters, fetch=fetch)
        return await self._call(connection, sql, parameters, fetch=fetch)

    @staticmethod
    async def _call(connection: aiosqlite.Connection, sql: str, parameters: Sequence[Any], *, fetch: bool) -> Any:
        """The one place a statement reaches aiosqlite: log it, run it, translate its errors."""
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("sqlite: %s (%d parameters)", " ".join(sql.split())[:200], len(parameters))
        try:
            if fetch:
                return list(await connection.execute_fetchall(sql, parameters))
            return (await connection.execute(sql, parameters)).rowcount
        except sqlite3.Error as err:
            translated = translate(err, "SQLite statement failed")
            if translated is None:
                raise
            raise translated from err
        except ValueError as err:  # aiosqlite raises a bare ValueError once its connection is closed
            raise StoreUnavailableError("the SQLite connection is closed") from err

    @asynccontextmanager
    async def transaction(self) -> AsyncGenerator[None]:
        """Run the block's statements in one ``BEGIN IMMEDIATE`` transaction (several hops; rare paths only).

        Commits when the block succeeds and rolls back when it raises. Other tasks' statements
        on this connection wait until the transaction ends.
        """
        connection = self._connection or await self._ready()
        async with self._transaction_lock:
            self._transaction_owner = asyncio.current_task()
            try:
                await self._call(connection, "BEGIN IMMEDIATE", (), fetch=False)
                yield
                await self._call(connection, "COMMIT", (), fetch=False)
            except BaseException:
                await self._rollback(connection)
                raise
            finally:
                self._transaction_owner = None

    async def _rollback(self, connection: aiosqlite.Connection) -> None:
        try:
            await self._call(connection, "ROLLBACK", (), fetch=False)
        except (StoreError, sqlite3.Error):  # nothing to roll back (SQLite already did), or the connection is gone
            logger.debug("sqlite: rollback failed", exc_info=True)

    # -- lifecycle and schema ------------------------------------------------------------

    async def _ready(self) -> aiosqlite.Connection:
        """Open (when owned), check and migrate the connection once; return it."""
        async with self._setup_lock:
            if self._connection is not None:
                return self._connection
            if self._closed:
                raise StoreUnavailableError("the SQLite database was closed")
            connection = self._borrowed or await self._open()
            if self._borrowed is not None:
                _check_borrowed(connection)
            await self._migrate(connection)
            encoding = await self._call(connection, "PRAGMA encoding", (), fetch=True)
            self._utf8 = bool(encoding) and str(encoding[0][0]).upper() == "UTF-8"
            self._connection = connection
            return connection

    async def _open(self) -> aiosqlite.Connection:
        options = self.options
        assert options is not None  # owned databases always have options
        if self._opened is None:
            target, uri = options.path, False
            if options.must_exist and not options.in_memory and not options.path.startswith("file:"):
                # Opened read-write without create: a missing file stays missing.
                _require_file(options.path)
                target, uri = f"file:{quote(options.path)}?mode=rw", True
            try:
                if not options.in_memory and not options.must_exist:
                    # One create-if-absent syscall, once per owned connection: no thread hop for it.
                    _create_private(options.path, options.file_mode)
                self._opened = await aiosqlite.connect(
                    target, timeout=options.busy_timeout, isolation_level=None, uri=uri
                )
            except (sqlite3.Error, OSError) as err:
                translated = translate(err, f"cannot open SQLite database {options.path!r}")
                if translated is None:
                    raise
                raise translated from err
        connection = self._opened
        try:
            if not options.in_memory and not options.must_exist:
                await self._set_journal_mode(connection, options)
            await self._call(connection, f"PRAGMA synchronous = {options.synchronous.upper()}", (), fetch=False)
        except BaseException:
            # Close what we opened: a failed open must not leave aiosqlite's worker thread
            # running, which would keep the interpreter from exiting.
            self._opened = None
            await connection.close()
            raise
        return connection

    async def _set_journal_mode(self, connection: aiosqlite.Connection, options: SQLiteOptions) -> None:
        """Switch the journal mode, waiting out other connections as the busy timeout allows.

        Switching to WAL needs the database to itself, and SQLite answers SQLITE_BUSY at once
        (without its busy handler) while another process is opening or migrating the same
        new file; so the switch is retried with backoff until ``busy_timeout`` has passed.
        """
        wanted = options.journal_mode.upper()
        deadline = time.monotonic() + options.busy_timeout
        delay = 0.005
        while True:
            try:
                rows = await self._call(connection, f"PRAGMA journal_mode = {wanted}", (), fetch=True)
                break
            except StoreUnavailableError as err:
                cause = err.__cause__
                busy = getattr(cause, "sqlite_errorcode", None) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
                if not busy or time.monotonic() + delay > deadline:
                    raise
                await asyncio.sleep(delay)
                delay = min(delay * 2, 0.1)
        if rows and str(rows[0][0]).upper() != wanted:
            logger.warning("sqlite: %s kept journal_mode %s", options.path, rows[0][0])

    async def _migrate(self, connection: aiosqlite.Connection) -> None:
        """Apply the migrations this database lacks, each once, even with several processes racing."""
        applied = await self._applied(connection)
        if applied is not None and SCHEMA_VERSION in applied:
            _check_not_newer(applied)
            return
        if applied is None and self.options is not None and self.options.must_exist:
            raise StoreNotFoundError(f"the SQLite database {self.options.path!r} holds no agent-stores tables")
        await self._call(connection, "BEGIN IMMEDIATE", (), fetch=False)
        try:
            await self._call(
                connection,
                """CREATE TABLE IF NOT EXISTS agent_stores_migrations (
                    version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at REAL NOT NULL)""",
                (),
                fetch=False,
            )
            done = {row[0] for row in await self._call(connection, _APPLIED, (), fetch=True)}
            _check_not_newer(done)
            for version, name, statements in _MIGRATIONS:
                if version in done:
                    continue
                for statement in statements:
                    await self._call(connection, statement, (), fetch=False)
                await self._call(
                    connection,
                    "INSERT INTO agent_stores_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (version, name, time.time()),
                    fetch=False,
                )
                logger.info("sqlite: applied migration %d (%s)", version, name)
            await self._call(connection, "COMMIT", (), fetch=False)
        except BaseException:
            await self._rollback(connection)
            raise

    async def _applied(self, connection: aiosqlite.Connection) -> set[int] | None:
        exists = await self._call(
            connection,
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'agent_stores_migrations'",
            (),
            fetch=True,
        )
        if not exists:
            return None
        return {row[0] for row in await self._call(connection, _APPLIED, (), fetch=True)}

    async def text_is_utf8(self) -> bool:
        """Whether the database's text encoding is UTF-8 (SQLite's default; fixed when the file is created)."""
        if self._connection is None:
            await self._ready()
        return self._utf8

    async def schema_versions(self) -> list[int]:
        """Return the numbers of the migrations applied to this database, ascending."""
        return [row[0] for row in await self.fetchall(_APPLIED)]

    async def aclose(self) -> None:
        """Close the connection when it is owned. Idempotent.

        A borrowed connection's wrapper is shared by every store on that connection, so
        closing it does nothing: the connection's owner closes the connection.
        """
        if not self.owned:
            return
        async with self._setup_lock:
            self._closed = True
            self._connection = None
            opened, self._opened = self._opened, None
        if opened is not None:
            await opened.close()

    def __repr__(self) -> str:
        where = "borrowed connection" if self.options is None else repr(self.options.path)
        return f"SQLiteDatabase({where})"


_APPLIED = "SELECT version FROM agent_stores_migrations ORDER BY version"

# One wrapper per borrowed connection, so stores sharing a connection share its setup and lock.
_BORROWED: weakref.WeakKeyDictionary[aiosqlite.Connection, SQLiteDatabase] = weakref.WeakKeyDictionary()


def _create_private(path: str, mode: int) -> None:
    """Create the database file with ``mode`` (whatever the umask) unless it exists; never touch an existing one."""
    if path.startswith("file:"):
        return  # a URI filename: SQLite opens it as given
    try:
        descriptor = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode)
    except FileExistsError:
        return
    try:
        os.fchmod(descriptor, mode)  # the umask may have cleared bits the caller asked for
    finally:
        os.close(descriptor)


def _require_file(path: str) -> None:
    """Raise ``StoreNotFoundError`` unless the database file exists (one syscall: no thread hop for it)."""
    if not os.path.isfile(path):
        raise StoreNotFoundError(f"the SQLite database {path!r} does not exist")


def _check_not_newer(applied: set[int]) -> None:
    newer = sorted(v for v in applied if v > SCHEMA_VERSION)
    if newer:
        raise StoreError(
            f"the SQLite database has schema version {newer[-1]}, newer than this agent-stores-sqlite "
            f"supports ({SCHEMA_VERSION}); upgrade agent-stores-sqlite"
        )


def _check_borrowed(connection: aiosqlite.Connection) -> None:
    try:
        isolation_level = connection.isolation_level
        row_factory = connection.row_factory
        text_factory = connection.text_factory
    except ValueError as err:  # aiosqlite: not opened yet, or closed
        raise ValueError("the borrowed aiosqlite connection is not open; await aiosqlite.connect(...) first") from err
    if isolation_level is not None:
        raise ValueError(
            "the borrowed aiosqlite connection must be in autocommit mode: "
            "aiosqlite.connect(path, isolation_level=None) (each store write commits itself and must "
            "never commit or roll back your pending work)"
        )
    if row_factory not in (None, sqlite3.Row):
        raise ValueError("the borrowed aiosqlite connection's row_factory must be None or sqlite3.Row")
    if text_factory is not str:
        raise ValueError("the borrowed aiosqlite connection's text_factory must be str")
