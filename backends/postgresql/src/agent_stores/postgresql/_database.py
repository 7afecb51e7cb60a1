"""``PostgreSQLDatabase``: the connection pool (or connection) the PostgreSQL stores share, and their one funnel.

Every statement of the backend passes through :meth:`PostgreSQLDatabase.fetch` or
:meth:`PostgreSQLDatabase.execute`, which log it and translate psycopg errors by SQLSTATE
(``_errors.translate``), never by message text. Statements are sent without server-side
prepared statements (``prepare_threshold=None``) and rely on no session state, so the stores
work through a transaction-mode pooler such as PgBouncer. The schema is set up lazily on first
use by the numbered migrations of ``_schema.py``, applied under ``pg_advisory_xact_lock``, so
processes starting at the same time apply each migration exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import time
import weakref
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, LiteralString, TypeVar, cast
from urllib.parse import parse_qsl, quote, unquote, urlsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict
from psycopg_pool import AsyncConnectionPool

from agent_stores.core import StoreError, StoreNotFoundError, StoreUnavailableError, redact_url
from agent_stores.core.urls import check_user_part, parse_count, parse_seconds

from ._errors import translate
from ._schema import ADVISORY_LOCK, MIGRATIONS, SCHEMA_VERSION

__all__ = [
    "DEFAULT_POOL_SIZE",
    "DEFAULT_POOL_TIMEOUT",
    "DEFAULT_READ_TIMEOUT",
    "PostgreSQLDatabase",
    "PostgreSQLOptions",
    "migrate_schema",
    "parse_postgresql_url",
]

logger = logging.getLogger("agent_stores.postgresql")

#: Connections an owned pool opens at most.
DEFAULT_POOL_SIZE: Final = 10
#: Seconds a statement waits for a connection of the pool before ``StoreUnavailableError``.
DEFAULT_POOL_TIMEOUT: Final = 30.0
#: Seconds a statement of an owned pool waits for the server's answer before its connection is
#: discarded and the call fails with ``StoreUnavailableError`` (a stalled server or network).
DEFAULT_READ_TIMEOUT: Final = 60.0
#: Seconds an owned database keeps one connection out of its pool between statements before
#: giving it back (so the pool still renews its connections).
_HELD_FOR: Final = 300.0

#: The query parameters this backend reads itself; every other one goes to libpq as it is.
OWN_OPTIONS: Final = frozenset({"pool_size", "pool_timeout", "read_timeout"})

_SCHEMES: Final = ("postgresql", "postgres")
_IDLE: Final = psycopg.pq.TransactionStatus.IDLE
T = TypeVar("T")
_CONNECTION_KWARGS: Final[dict[str, Any]] = {"autocommit": True, "prepare_threshold": None}


@dataclass(frozen=True, slots=True)
class PostgreSQLOptions:
    """How an owned pool connects.

    Attributes:
        conninfo: The libpq connection URL (the store URL without this backend's own options).
        pool_size: Connections the pool opens at most (it keeps one open when idle).
        pool_timeout: Seconds a statement waits for a free connection, or for the server to
            be reachable again, before ``StoreUnavailableError``.
        read_timeout: Seconds a statement waits for the server's answer (a client-side
            deadline: a stalled server or network answers nothing, and the server's own
            ``statement_timeout`` cannot end that wait). At the deadline the connection is shut
            and discarded and the call raises ``StoreUnavailableError``; the statement, one
            self-committing transaction, was applied whole or not at all.
        must_exist: Create nothing: a database without the stores' tables is
            ``StoreNotFoundError`` on first use.
    """

    conninfo: str = field(repr=False)
    pool_size: int = DEFAULT_POOL_SIZE
    pool_timeout: float = DEFAULT_POOL_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    must_exist: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.pool_size, bool) or not isinstance(self.pool_size, int) or self.pool_size < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"pool_size must be a positive integer, got {self.pool_size!r}")
        for name in ("pool_timeout", "read_timeout"):
            timeout = getattr(self, name)
            if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout < float("inf"):
                raise ValueError(f"{name} must be a positive number of seconds, got {timeout!r}")
        if not isinstance(self.must_exist, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"must_exist must be True or False, got {self.must_exist!r}")


def parse_postgresql_url(url: str, **options: Any) -> PostgreSQLOptions:
    """Parse a ``postgresql://`` (or ``postgres://``) URL into :class:`PostgreSQLOptions`, without I/O.

    ``postgresql://user:password@host:port/database?sslmode=verify-full&...``: the user part
    percent-encoded; ``pool_size``, ``pool_timeout`` and ``read_timeout`` are this backend's own query options
    (keyword ``options`` override them); every other query parameter is libpq's own
    (``sslmode``, ``sslrootcert``, ``connect_timeout``, ``application_name``, ...) and is checked
    by libpq's parser. A password belongs in the user part (or a ``.pgpass`` file), never in the
    query, where logs and process lists show it.

    Raises:
        ValueError: Not a PostgreSQL URL, a malformed port or user part, a password in the
            query, or an unknown or invalid option.
    """
    if not isinstance(url, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"expected a postgresql:// URL string, got {type(url).__name__}")
    parts = urlsplit(url)
    if parts.scheme.lower() not in _SCHEMES or "://" not in url:
        raise ValueError(f"not a PostgreSQL URL (expected postgresql://host/database): {redact_url(url)!r}")
    check_user_part(url, what="PostgreSQL URL")
    if parts.fragment:
        raise ValueError(f"PostgreSQL URLs take no fragment: {redact_url(url)!r}")
    try:
        parts.port  # noqa: B018  # reading it checks it
    except ValueError:
        raise ValueError(f"malformed port in PostgreSQL URL {redact_url(url)!r}") from None
    try:
        query = parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError:
        raise ValueError(f"malformed query in PostgreSQL URL {redact_url(url)!r}") from None
    names = [name for name, _ in query]
    if "password" in names:
        raise ValueError(
            "a PostgreSQL URL takes its password in the user part (postgresql://user:password@host/db) "
            "or from a .pgpass file, never in the query"
        )
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"the PostgreSQL URL gives {repeated} more than once")
    own = {name: value for name, value in query if name in OWN_OPTIONS}
    libpq = [(name, value) for name, value in query if name not in OWN_OPTIONS]
    unknown = sorted(set(options) - OWN_OPTIONS - {"must_exist"})
    if unknown:
        raise ValueError(
            f"unknown PostgreSQL options {unknown}; known: must_exist, pool_size, pool_timeout, read_timeout"
        )
    merged: dict[str, Any] = {**own, **options}
    if isinstance(merged.get("pool_size"), str):
        merged["pool_size"] = parse_count(merged["pool_size"], option="pool_size")
    for name in ("pool_timeout", "read_timeout"):
        if isinstance(merged.get(name), str):
            merged[name] = parse_seconds(merged[name], option=name)
    conninfo = _libpq_url(parts.scheme, parts.netloc, parts.path, libpq)
    try:
        conninfo_to_dict(conninfo)  # libpq's own parser: unknown parameters and bad values
    except psycopg.ProgrammingError as err:
        raise ValueError(f"invalid PostgreSQL URL {redact_url(url)!r}: {_without_secret(err)}") from None
    return PostgreSQLOptions(conninfo, **merged)


def _libpq_url(scheme: str, netloc: str, path: str, query: Sequence[tuple[str, str]]) -> str:
    """The URL as libpq reads it: the user part re-escaped (libpq ends it at the first ``@``), the query re-quoted."""
    user_part, at, hosts = netloc.rpartition("@")
    if at:
        user, colon, password = user_part.partition(":")
        user_part = quote(unquote(user), safe="") + (colon + quote(unquote(password), safe="") if colon else "")
    text = f"{scheme}://{user_part}{at}{hosts}{path}"
    if query:
        text += "?" + "&".join(f"{quote(name, safe='')}={quote(value, safe='/:,-_.~')}" for name, value in query)
    return text


def _without_secret(err: BaseException) -> str:
    """The first line of libpq's parser message: it names a parameter, never a password (refused in the query)."""
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


Client = psycopg.AsyncConnection[Any] | AsyncConnectionPool[Any]


class PostgreSQLDatabase:
    """The pool (or connection) every PostgreSQL store built on it shares.

    Owned (:meth:`from_url`): a ``psycopg_pool.AsyncConnectionPool`` of autocommit connections
    without server-side prepared statements, opened on first use (after a first connection
    applied the migrations, so a wrong password or host is reported as itself, not as a pool
    timeout) and closed by :meth:`aclose`.

    Borrowed (``PostgreSQLDatabase(client)``): your ``psycopg.AsyncConnection`` or
    ``AsyncConnectionPool``, never closed here. A borrowed connection must be in autocommit
    mode (each store write is one self-committing statement and must never commit or roll
    back your pending work): checked on first use, ``ValueError`` otherwise. Connections a
    borrowed pool hands out are used one statement at a time and returned to it. Only our
    objects (``agent_stores_*``) are created; nothing else in the database is changed.
    """

    def __init__(self, client: Client) -> None:
        if not isinstance(client, psycopg.AsyncConnection | AsyncConnectionPool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"expected a psycopg AsyncConnection or psycopg_pool AsyncConnectionPool, got {type(client).__name__}"
            )
        self._client: Client | None = client
        self.options: PostgreSQLOptions | None = None
        self._init_state()

    def _init_state(self) -> None:
        self._ready_event = False
        self._setup_lock = asyncio.Lock()
        self._closed = False
        # An owned pool's connection kept out of the pool between statements (see ``_statement``).
        self._held: psycopg.AsyncConnection[Any] | None = None
        self._held_until = 0.0

    @classmethod
    def for_client(cls, client: Client) -> PostgreSQLDatabase:
        """Return the one database wrapping the borrowed ``client`` (created on first request)."""
        if not isinstance(client, psycopg.AsyncConnection | AsyncConnectionPool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                "expected a psycopg AsyncConnection, a psycopg_pool AsyncConnectionPool or a PostgreSQLDatabase, "
                f"got {type(client).__name__}"
            )
        database = _BORROWED.get(client)
        if database is None:
            database = _BORROWED[client] = cls(client)
        return database

    @classmethod
    def from_options(cls, options: PostgreSQLOptions) -> PostgreSQLDatabase:
        """Return an owned database that connects with ``options`` on first use."""
        database = cls.__new__(cls)
        database._client = None
        database.options = options
        database._init_state()
        return database

    @classmethod
    def from_url(cls, url: str, **options: Any) -> PostgreSQLDatabase:
        """Return an owned database for a ``postgresql://`` URL (see :func:`parse_postgresql_url`); no I/O yet."""
        return cls.from_options(parse_postgresql_url(url, **options))

    @property
    def owned(self) -> bool:
        """Whether :meth:`aclose` closes the pool (it was made here)."""
        return self.options is not None

    # -- the funnel ----------------------------------------------------------------------

    async def fetch(self, sql: str, parameters: Sequence[Any] | dict[str, Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement and return all its rows (binary results: ``bytea`` as ``bytes``)."""
        return await self._statement(sql, parameters, fetch=True)

    async def execute(self, sql: str, parameters: Sequence[Any] | dict[str, Any] = ()) -> int:
        """Run one statement that returns no rows; return how many rows it changed."""
        return await self._statement(sql, parameters, fetch=False)

    async def _statement(self, sql: str, parameters: Sequence[Any] | dict[str, Any], *, fetch: bool) -> Any:
        """The one place a statement reaches psycopg: log it, run it, translate its errors.

        An owned pool keeps one connection out of the pool between statements and runs the
        next statement on it when it is free (a pool checkout and return cost about as much as
        the statement's own client work); concurrent statements take connections from the pool
        as usual. A connection that failed, or outlived ``_HELD_FOR``, goes back to the pool,
        which discards a broken one. Every statement of an owned pool runs under
        ``read_timeout`` (:func:`_bounded`).
        """
        client = self._client if self._ready_event else await self._ready()
        assert client is not None
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("postgresql: %s (%d parameters)", " ".join(sql.split())[:200], len(parameters))
        try:
            if isinstance(client, AsyncConnectionPool):
                options = self.options
                if options is None:
                    async with client.connection() as connection:
                        return await _run(connection, sql, parameters, fetch=fetch)
                connection = self._held
                if connection is None:
                    connection = await client.getconn()
                else:
                    self._held = None
                try:
                    work = _run(connection, sql, parameters, fetch=fetch)
                    result = await _bounded(connection, options.read_timeout, work)
                except BaseException:
                    await client.putconn(connection)
                    raise
                now = time.monotonic()
                if self._held is None and not self._closed and connection.pgconn.transaction_status == _IDLE:
                    if self._held_until == 0.0:
                        self._held_until = now + _HELD_FOR
                    if now < self._held_until:
                        self._held = connection
                        return result
                    self._held_until = 0.0
                await client.putconn(connection)
                return result
            return await _run(client, sql, parameters, fetch=fetch)
        except psycopg.Error as err:
            raise _translated(err, "PostgreSQL statement failed") from err
        except Exception as err:  # psycopg_pool.PoolTimeout and PoolClosed are not psycopg.Error
            translated = translate(err, "PostgreSQL statement failed")
            if translated is None:
                raise
            raise translated from err

    # -- lifecycle and schema ------------------------------------------------------------

    async def _ready(self) -> Client:
        """Connect (when owned), check and migrate once; return the client."""
        async with self._setup_lock:
            if self._ready_event and self._client is not None:
                return self._client
            if self._closed:
                raise StoreUnavailableError("the PostgreSQL database was closed")
            if self.options is None:
                client = self._client
                assert client is not None
                if isinstance(client, psycopg.AsyncConnection):
                    _check_borrowed(client)
                    await self._migrate(client)
                else:
                    async with client.connection() as connection:
                        await self._migrate(connection)
            else:
                options = self.options
                try:
                    connection = await psycopg.AsyncConnection.connect(options.conninfo, **_CONNECTION_KWARGS)
                except psycopg.Error as err:
                    raise _translated(err, "cannot connect to the PostgreSQL server") from err
                try:
                    await _bounded(connection, options.read_timeout, self._migrate(connection))
                finally:
                    await connection.close()
                pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
                    options.conninfo,
                    kwargs=dict(_CONNECTION_KWARGS),
                    min_size=1,
                    max_size=options.pool_size,
                    timeout=options.pool_timeout,
                    open=False,
                    name="agent-stores",
                )
                await pool.open(wait=False)
                self._client = pool
            self._ready_event = True
            assert self._client is not None
            return self._client

    async def _migrate(self, connection: psycopg.AsyncConnection[Any]) -> None:
        must_exist = self.options is not None and self.options.must_exist
        try:
            await migrate_connection(connection, create=not must_exist)
        except psycopg.Error as err:
            raise _translated(err, "cannot set up the PostgreSQL tables") from err

    async def migrate(self) -> list[int]:
        """Apply the migrations the database lacks now, even under ``must_exist``; return their numbers.

        Raises:
            StoreError: The server refused the role, or the schema is newer than this release.
            StoreUnavailableError: The server could not be reached.
        """
        client = self._client if self.options is None else None
        try:
            if isinstance(client, psycopg.AsyncConnection):
                return await migrate_connection(client)
            if isinstance(client, AsyncConnectionPool):
                async with client.connection() as connection:
                    return await migrate_connection(connection)
            assert self.options is not None
            connection = await psycopg.AsyncConnection.connect(self.options.conninfo, **_CONNECTION_KWARGS)
            try:
                return await migrate_connection(connection)
            finally:
                await connection.close()
        except psycopg.Error as err:
            raise _translated(err, "cannot set up the PostgreSQL tables") from err

    async def schema_versions(self) -> list[int]:
        """Return the numbers of the migrations applied to this database, ascending."""
        return [row[0] for row in await self.fetch(_APPLIED)]

    async def aclose(self) -> None:
        """Close the pool when it is owned. Idempotent; a borrowed client stays open."""
        if not self.owned:
            return
        async with self._setup_lock:
            self._closed = True
            self._ready_event = False
            client, self._client = self._client, None
            held, self._held = self._held, None
        if held is not None and isinstance(client, AsyncConnectionPool):
            await client.putconn(held)
        if client is not None:
            await client.close()

    def telemetry_attributes(self) -> dict[str, str | int]:
        """Where the server is and the database's name, for the core's spans (see ``agent_stores.core.telemetry``)."""
        client = self._client
        if self.options is not None:
            conninfo = self.options.conninfo
        elif isinstance(client, AsyncConnectionPool):
            if not isinstance(client.conninfo, str):
                return {}  # a pool given a callable connects wherever that says, each time
            conninfo = client.conninfo
        elif client is not None:
            info = client.info
            return _server_attributes({"host": info.host, "port": str(info.port), "dbname": info.dbname})
        else:
            return {}
        try:
            parsed = conninfo_to_dict(conninfo)
        except psycopg.Error:
            return {}
        return _server_attributes({k: str(v) for k, v in parsed.items() if v is not None})

    def __repr__(self) -> str:
        if self.options is None:
            return "PostgreSQLDatabase(borrowed client)"
        return f"PostgreSQLDatabase({redact_url(self.options.conninfo)!r})"


async def _run(
    connection: psycopg.AsyncConnection[Any], sql: str, parameters: Sequence[Any] | dict[str, Any], *, fetch: bool
) -> Any:
    cursor = await connection.execute(cast("LiteralString", sql), parameters, binary=True)
    if fetch:
        return await cursor.fetchall()
    return cursor.rowcount


async def _bounded(connection: psycopg.AsyncConnection[Any], seconds: float, work: Awaitable[T]) -> T:
    """Await ``work`` on ``connection``; past ``seconds``, shut its socket and raise ``StoreUnavailableError``.

    libpq has no timeout for an answer and the server's ``statement_timeout`` cannot end a wait
    on a server that answers nothing. Shutting the socket (not closing it: the event loop still
    watches that descriptor) wakes the waiting call with an end of stream, which psycopg reports
    as a broken connection; the pool then discards it. The statement, one self-committing
    transaction, was applied whole or not at all. Cancelling the call instead would make
    psycopg ask the stalled server to cancel the query and wait on that too.
    """
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        with contextlib.suppress(Exception):
            fd = connection.pgconn.socket
            with socket.socket(fileno=os.dup(fd)) as sock:
                sock.shutdown(socket.SHUT_RDWR)

    timer = asyncio.get_running_loop().call_later(seconds, expire)
    try:
        return await work
    except psycopg.Error as err:
        if expired:
            raise StoreUnavailableError(
                f"no answer from the PostgreSQL server within {seconds:g} s (read_timeout); the connection was closed"
            ) from err
        raise
    finally:
        timer.cancel()
        if expired and not connection.closed:
            await connection.close()  # shut after it answered: never reused


def _translated(err: psycopg.Error, what: str) -> Exception:
    translated = translate(err, what)
    if translated is None:
        return err
    return translated


_APPLIED = "SELECT version FROM agent_stores_migrations ORDER BY version"

# One wrapper per borrowed client, so stores sharing a client share its setup.
_BORROWED: weakref.WeakKeyDictionary[Any, PostgreSQLDatabase] = weakref.WeakKeyDictionary()


async def migrate_connection(connection: psycopg.AsyncConnection[Any], *, create: bool = True) -> list[int]:
    """Apply the migrations the database lacks, each once, even with several processes racing; return them.

    Reads the applied versions first (no lock when the schema is current); otherwise takes
    ``pg_advisory_xact_lock`` in one transaction, reads again, applies what is missing and
    records it, so a second process waits and then applies nothing.

    Raises:
        StoreNotFoundError: ``create`` is false and the database holds no agent-stores tables.
        StoreError: The database's schema is newer than this release writes.
    """
    applied = await _applied(connection)
    if applied is not None and SCHEMA_VERSION in applied:
        _check_not_newer(applied)
        return []
    if not create:
        if applied is None:
            raise StoreNotFoundError("the PostgreSQL database holds no agent-stores tables")
        raise StoreError(
            f"the PostgreSQL database has agent-stores schema version {max(applied, default=0)}, this release "
            f"needs {SCHEMA_VERSION}: run `agent-stores migrate-schema URL` with a role that may change the schema"
        )
    done: list[int] = []
    async with connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock(%s)", (ADVISORY_LOCK,))
        await connection.execute(
            """CREATE TABLE IF NOT EXISTS agent_stores_migrations (
                version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())"""
        )
        have = {row[0] for row in await (await connection.execute(_APPLIED)).fetchall()}
        _check_not_newer(have)
        for version, name, statements in MIGRATIONS:
            if version in have:
                continue
            for statement in statements:
                await connection.execute(cast("LiteralString", statement))
            await connection.execute(
                "INSERT INTO agent_stores_migrations (version, name) VALUES (%s, %s)", (version, name)
            )
            logger.info("postgresql: applied migration %d (%s)", version, name)
            done.append(version)
    return done


async def _applied(connection: psycopg.AsyncConnection[Any]) -> set[int] | None:
    rows = await (await connection.execute("SELECT to_regclass('agent_stores_migrations') IS NOT NULL")).fetchall()
    if not rows or not rows[0][0]:
        return None
    return {row[0] for row in await (await connection.execute(_APPLIED)).fetchall()}


async def migrate_schema(url: str) -> list[int]:
    """Apply the stores' migrations to the database ``url`` names, ahead of deployment; return those applied.

    For teams whose applications run without DDL rights: run this once with a role that may
    create tables, then the stores find the schema current and change nothing.

    Raises:
        ValueError: The URL is malformed.
        StoreError: The server refused the role, or the schema is newer than this release.
        StoreUnavailableError: The server could not be reached.
    """
    database = PostgreSQLDatabase.from_url(url)
    try:
        return await database.migrate()
    finally:
        await database.aclose()


def _check_not_newer(applied: set[int]) -> None:
    newer = sorted(v for v in applied if v > SCHEMA_VERSION)
    if newer:
        raise StoreError(
            f"the PostgreSQL database has agent-stores schema version {newer[-1]}, newer than this "
            f"agent-stores-postgresql supports ({SCHEMA_VERSION}); upgrade agent-stores-postgresql"
        )


def _check_borrowed(connection: psycopg.AsyncConnection[Any]) -> None:
    if connection.closed:
        raise ValueError("the borrowed psycopg connection is closed")
    if not connection.autocommit:
        raise ValueError(
            "the borrowed psycopg connection must be in autocommit mode: "
            "psycopg.AsyncConnection.connect(url, autocommit=True) (each store write commits itself and must "
            "never commit or roll back your pending work)"
        )


def _server_attributes(parameters: dict[str, str]) -> dict[str, str | int]:
    """``server.address``, ``server.port`` and ``db.namespace`` from libpq connection parameters.

    A unix-socket directory is not an address, and a list of hosts names no single server: both are left out.
    """
    attributes: dict[str, str | int] = {}
    host = parameters.get("host", "")
    if host and not host.startswith("/") and "," not in host:
        attributes["server.address"] = host
        port = parameters.get("port", "")
        if port.isdigit():
            attributes["server.port"] = int(port)
    if parameters.get("dbname"):
        attributes["db.namespace"] = parameters["dbname"]
    return attributes
