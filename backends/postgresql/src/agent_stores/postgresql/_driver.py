"""The PostgreSQL log and object drivers: each operation is one statement, one round trip.

The core's adapters (``LogHistoryProvider``, ``ObjectAgentFileStore``, ``ObjectSessionStore``)
hold every rule; these drivers store and fetch opaque bytes in the schema of ``_schema.py``.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from functools import lru_cache

from agent_stores.core import (
    Listing,
    LogInfo,
    LogRecord,
    LogTail,
    LogVersion,
    OrderedPut,
    StoreConflictError,
    StoredObject,
)
from agent_stores.core.drivers import UnseenAppend, check_distinct_keys, prefix_bounds

from ._database import PostgreSQLDatabase
from ._schema import ORDER_PREFIX

__all__ = ["PostgreSQLLogDriver", "PostgreSQLObjectDriver"]

_LIVE = "(expires_at IS NULL OR expires_at > %s)"

# The live log's length and version and the digests of its last %s records, oldest first: one
# row per digest (a single row with a NULL digest when there are none), no row when the log is
# absent or expired. Both lookups are index searches.
_TAIL = f"""
SELECT l.length, l.version, m.digest
FROM agent_stores_logs AS l
LEFT JOIN LATERAL (
    SELECT digest, seq FROM agent_stores_messages WHERE log_id = l.log_id ORDER BY seq DESC LIMIT %s
) AS m ON true
WHERE l.key = %s AND {_LIVE.replace("expires_at", "l.expires_at")}
ORDER BY m.seq"""
# The arrays go in binary (``%b``): psycopg's text form of a ``bytea[]`` escapes every payload
# byte in Python, which cost a save more client time than its statement's other parameters.
_APPEND = "SELECT agent_stores_append(%s, %s, %s, %s, %s, %s, %b::text[], %b::bytea[])"
_APPEND_UNSEEN = (
    "SELECT * FROM agent_stores_append_unseen(%s, %s, %s, %s, %s, %s, %b::text[], %s, %s, %b::text[], %b::bytea[])"
)
# Newest first: the caller reverses them.
_READ = "SELECT * FROM agent_stores_read(%s, %s, %s::bigint)"
_LENGTH = f"SELECT length FROM agent_stores_logs WHERE key = %s AND {_LIVE}"
_DELETE_LOG = "DELETE FROM agent_stores_logs WHERE key = %s RETURNING expires_at IS NULL OR expires_at > %s"
_DELETE_AT = f"DELETE FROM agent_stores_logs WHERE key = %s AND version = %s AND {_LIVE} RETURNING 1"
_PURGE = "DELETE FROM agent_stores_logs WHERE expires_at <= %s"


def _check_key(key: str, what: str = "key") -> None:
    """Refuse what a ``text`` column cannot hold (NUL), before anything is written."""
    if "\x00" in key:
        raise ValueError(f"a PostgreSQL {what} cannot hold NUL (U+0000)")


def _stored_session_id(session_id: str) -> str:
    r"""A session id as the ``text`` column holds it: NUL (which ``text`` cannot hold) as ``\0``, ``\`` doubled."""
    return session_id.replace("\\", "\\\\").replace("\x00", "\\0")


def _session_id_of(stored: str) -> str:
    """The inverse of :func:`_stored_session_id`."""
    if "\\" not in stored:
        return stored
    parts = stored.split("\\\\")
    return "\\".join(part.replace("\\0", "\x00") for part in parts)


def _range(column: str, prefix: str) -> tuple[str, list[object]]:
    low, high = prefix_bounds(prefix)
    if high is None:
        return f"{column} >= %s", [low]
    return f"{column} >= %s AND {column} < %s", [low, high]


# An object by its key: the primary key is the key's digest (keys of any length fit).
_OBJECT = "key_digest = agent_stores_key_digest(%s) AND key = %s"
# The index of objects' key prefixes; ordering by (_HEAD, key) is ordering by key.
_HEAD = f"left(key, {ORDER_PREFIX})"


#: Items per statement of ``put_in_order``; more go in further statements, each sent once the one
#: before stored all of its items.
_PUTS_PER_STATEMENT = 64


@lru_cache(maxsize=64)
def _put_in_order_sql(absent: tuple[bool, ...]) -> str:
    """One statement writing one object per flag of ``absent`` (``True``: only if absent), in order.

    Each write is a data-modifying ``WITH`` step that runs only when the step before it wrote
    its row (``EXISTS`` over that step's ``RETURNING``): an ``if_absent`` step that finds its
    key taken (``ON CONFLICT DO NOTHING``) writes nothing, so no later step writes either.
    Parameters: a key, data and plain flag per item. Returns one row, each item's new version
    or ``NULL`` for an item not written. One statement: atomic, so a stop leaves all or none.
    """
    steps: list[str] = []
    for n, if_absent in enumerate(absent):
        after = f" WHERE EXISTS (SELECT 1 FROM s{n - 1})" if n else ""
        write = (
            "DO NOTHING RETURNING version"
            if if_absent
            else "DO UPDATE SET data = EXCLUDED.data, plain = EXCLUDED.plain, version = EXCLUDED.version "
            "RETURNING o.version"
        )
        steps.append(
            f"s{n} AS (INSERT INTO agent_stores_objects AS o (key, data, plain) SELECT %s::text, %s::bytea, %s::boolean"
            f"{after} ON CONFLICT (key_digest) {write})"
        )
    versions = ", ".join(f"(SELECT version FROM s{n})" for n in range(len(absent)))
    return f"WITH {', '.join(steps)} SELECT {versions}"


def _object_range(prefix: str, after: str | None = None) -> tuple[str, list[object]]:
    """The objects under ``prefix`` (after the key ``after``), with the bounds the prefix index serves.

    A key in ``[low, high)`` has its first characters in ``[left(low), left(high)]``, so the
    conditions on ``_HEAD`` only narrow the scan; those on ``key`` decide.
    """
    low, high = prefix_bounds(prefix)
    conditions = [f"key >= %s AND {_HEAD} >= left(%s, {ORDER_PREFIX})"]
    parameters: list[object] = [low, low]
    if high is not None:
        conditions.append(f"key < %s AND {_HEAD} <= left(%s, {ORDER_PREFIX})")
        parameters += [high, high]
    if after:
        conditions.append(f"key > %s AND {_HEAD} >= left(%s, {ORDER_PREFIX})")
        parameters += [after, after]
    return " AND ".join(conditions), parameters


class PostgreSQLLogDriver:
    """A :class:`~agent_stores.core.LogDriver` in ``agent_stores_logs`` / ``agent_stores_messages``.

    Every call is one statement: ``append`` (one call of the ``agent_stores_append`` function,
    atomic, conditional on the version, any batch size), ``tail``, ``read`` (one call of the
    ``agent_stores_read`` function, whose query the server plans once per connection;
    ``read(last=N)`` is an indexed ``ORDER BY seq DESC LIMIT N``), ``length``, ``delete``, ``list_logs`` and
    ``purge_expired``. Expiry is lazy: an expired log reads as absent and is removed when it is
    written again or by :meth:`purge_expired`.

    Args:
        database: The database; closed by :meth:`aclose` only when it owns its pool.
        clock: Seconds since the epoch, for expiry (tests may pass a fake clock).
    """

    def __init__(self, database: PostgreSQLDatabase, *, clock: Callable[[], float] = time.time) -> None:
        self.database = database
        self._clock = clock

    def telemetry_attributes(self) -> dict[str, str | int]:
        """Where the server is, for the core's spans (see ``agent_stores.core.telemetry``)."""
        return self.database.telemetry_attributes()

    async def tail(self, key: str, count: int) -> LogTail:
        """Return the live log's length, version and the digests of its last ``count`` records."""
        _check_key(key)
        rows = await self.database.fetch(_TAIL, (max(0, count), key, self._clock()))
        if not rows:
            return LogTail(0, [], None)
        return LogTail(rows[0][0], [row[2] for row in rows if row[2] is not None], rows[0][1])

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        """Append ``records`` atomically if the live log is at ``expected_version``; return the new version.

        Raises:
            ValueError: ``records`` is empty, or the key holds NUL (a session id may: it is escaped).
            StoreConflictError: The log is not at ``expected_version``; nothing was appended.
        """
        if not records:
            raise ValueError("append needs at least one record")
        _check_key(key)
        expected = _log_version(expected_version)
        if expected_version is not None and expected is None:
            raise StoreConflictError(f"log {key!r} is not at version {expected_version!r}")
        now = self._clock()
        version = secrets.randbits(63)
        parameters = (
            key,
            _stored_session_id(session_id),
            expected,
            version,
            None if ttl is None else now + ttl,
            now,
            [record.digest for record in records],
            [bytes(record.payload) for record in records],
        )
        try:
            await self.database.fetch(_APPEND, parameters)
        except StoreConflictError as err:
            raise StoreConflictError(f"log {key!r} is not at version {expected_version!r}") from err
        return version

    async def append_unseen(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        window: int,
        stop: Sequence[str],
        staging: str,
        read: int,
        session_id: str,
        ttl: float | None = None,
    ) -> UnseenAppend:
        """Check the log's end and append ``records`` in one call of ``agent_stores_append_unseen``.

        The conditions are :class:`~agent_stores.core.drivers.UnseenAppendDriver`'s, evaluated on
        the locked log row; when they fail nothing is written and the tail read is returned.

        Raises:
            ValueError: ``records`` is empty, or a key holds NUL.
        """
        if not records:
            raise ValueError("append needs at least one record")
        _check_key(key)
        _check_key(staging)
        now = self._clock()
        parameters = (
            key,
            _stored_session_id(session_id),
            secrets.randbits(63),
            None if ttl is None else now + ttl,
            now,
            max(0, window),
            list(stop),
            staging,
            max(0, read),
            [record.digest for record in records],
            [bytes(record.payload) for record in records],
        )
        appended, length, version, digests = (await self.database.fetch(_APPEND_UNSEEN, parameters))[0]
        return UnseenAppend(bool(appended), LogTail(length, list(digests), version))

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        """Return the live log's payloads in append order; with ``last``, only the newest ``last``."""
        _check_key(key)
        if last is not None and last <= 0:
            return []
        rows = await self.database.fetch(_READ, (key, self._clock(), None if last is None else min(last, 2**63 - 1)))
        return [row[0] for row in reversed(rows)]

    async def length(self, key: str) -> int:
        """Return the live log's length (0 when absent or expired)."""
        _check_key(key)
        rows = await self.database.fetch(_LENGTH, (key, self._clock()))
        return rows[0][0] if rows else 0

    async def delete(self, key: str) -> bool:
        """Remove the log and its records; return whether it was live."""
        _check_key(key)
        rows = await self.database.fetch(_DELETE_LOG, (key, self._clock()))
        return bool(rows and rows[0][0])

    async def delete_if_version(self, key: str, version: LogVersion) -> bool:
        """Remove the log only if it is live and at ``version`` (one statement); return ``True``.

        Raises:
            StoreConflictError: The log is absent, expired or at another version; nothing was removed.
        """
        _check_key(key)
        expected = _log_version(version)
        rows = [] if expected is None else await self.database.fetch(_DELETE_AT, (key, expected, self._clock()))
        if not rows:
            raise StoreConflictError(f"log {key!r} is not at version {version!r}")
        return True

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        """Return up to ``limit`` live logs under ``prefix`` in key order, after the key ``after``."""
        _check_key(prefix, "prefix")
        _check_key(after or "", "after bound")
        if limit <= 0:
            raise ValueError(f"limit must be positive, got {limit!r}")
        in_range, parameters = _range("key", prefix)
        rows = await self.database.fetch(
            f"SELECT key, session_id FROM agent_stores_logs WHERE {in_range} AND key > %s AND {_LIVE} "
            "ORDER BY key LIMIT %s",
            (*parameters, after or "", self._clock(), limit),
        )
        return [LogInfo(row[0], _session_id_of(row[1])) for row in rows]

    async def purge_expired(self) -> int:
        """Remove every expired log now (one indexed DELETE); return how many."""
        return await self.database.execute(_PURGE, (self._clock(),))

    async def aclose(self) -> None:
        """Close the database if it owns its pool."""
        await self.database.aclose()


def _log_version(version: LogVersion) -> int | None:
    """The integer a log version names, or ``None`` (absent, or not one of ours)."""
    if version is None or isinstance(version, bool):
        return None
    try:
        value = int(version)
    except (TypeError, ValueError):
        return None
    return value if -(2**63) <= value < 2**63 else None


class PostgreSQLObjectDriver:
    """A :class:`~agent_stores.core.ObjectDriver` in ``agent_stores_objects``; every call is one statement.

    A version is drawn from a sequence by every put (never handed out twice), so
    compare-and-set (``UPDATE ... WHERE version = ...``) and exclusive create
    (``INSERT ... ON CONFLICT DO NOTHING``) are single statements, atomic across connections.

    Args:
        database: The database; closed by :meth:`aclose` only when it owns its pool.
    """

    def __init__(self, database: PostgreSQLDatabase) -> None:
        self.database = database

    def telemetry_attributes(self) -> dict[str, str | int]:
        """Where the server is, for the core's spans (see ``agent_stores.core.telemetry``)."""
        return self.database.telemetry_attributes()

    async def get(self, key: str) -> StoredObject | None:
        """Return the object's bytes and version, or ``None``."""
        _check_key(key)
        rows = await self.database.fetch(f"SELECT data, version FROM agent_stores_objects WHERE {_OBJECT}", (key, key))
        return StoredObject(bytes(rows[0][0]), str(rows[0][1])) if rows else None

    async def get_many(self, keys: Sequence[str]) -> list[StoredObject | None]:
        """Return :meth:`get` of every key, in order, in one statement per 500 keys (listings read many)."""
        for key in keys:
            _check_key(key)
        found: dict[str, StoredObject] = {}
        for start in range(0, len(keys), 500):
            batch = list(dict.fromkeys(keys[start : start + 500]))
            rows = await self.database.fetch(
                "SELECT key, data, version FROM agent_stores_objects WHERE key_digest = ANY(ARRAY("
                "SELECT agent_stores_key_digest(k) FROM unnest(%s::text[]) AS k)) AND key = ANY(%s::text[])",
                (batch, batch),
            )
            found.update((row[0], StoredObject(bytes(row[1]), str(row[2]))) for row in rows)
        return [found.get(key) for key in keys]

    async def head(self, key: str) -> str | None:
        """Return the object's version, or ``None``."""
        _check_key(key)
        rows = await self.database.fetch(f"SELECT version FROM agent_stores_objects WHERE {_OBJECT}", (key, key))
        return str(rows[0][0]) if rows else None

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        """Store ``data`` under ``key`` (conditionally) and return its new version.

        Raises:
            ValueError: The key is empty or holds NUL.
            StoreConflictError: ``if_absent`` and the key exists, or ``if_version`` is not current.
        """
        if not key:
            raise ValueError("the key must not be empty")
        _check_key(key)
        data = bytes(data)
        plain = data.isascii() and b"\x00" not in data
        if if_version is not None:
            expected = _object_version(if_version)
            rows = (
                []
                if if_absent or expected is None
                else await self.database.fetch(
                    "UPDATE agent_stores_objects SET data = %s, plain = %s, "
                    f"version = nextval('agent_stores_object_versions') WHERE {_OBJECT} AND version = %s "
                    "RETURNING version",
                    (data, plain, key, key, expected),
                )
            )
            if not rows:
                raise StoreConflictError(f"object {key!r} is not at version {if_version!r}")
        elif if_absent:
            rows = await self.database.fetch(
                "INSERT INTO agent_stores_objects (key, data, plain) VALUES (%s, %s, %s) "
                "ON CONFLICT (key_digest) DO NOTHING RETURNING version",
                (key, data, plain),
            )
            if not rows:
                raise StoreConflictError(f"object {key!r} exists")
        else:
            rows = await self.database.fetch(
                "INSERT INTO agent_stores_objects AS o (key, data, plain) VALUES (%s, %s, %s) "
                "ON CONFLICT (key_digest) DO UPDATE SET data = EXCLUDED.data, plain = EXCLUDED.plain, "
                "version = EXCLUDED.version RETURNING o.version",
                (key, data, plain),
            )
        return str(rows[0][0])

    async def put_in_order(self, items: Sequence[OrderedPut]) -> list[str]:
        """Store the items in order in one statement (one round trip), stopping at the first refused ``if_absent``.

        See ``OrderedPutDriver``: the statement writes the items before the first refusal (all
        or none of them, should it be stopped); more than 64 items take a statement per 64.

        Raises:
            ValueError: A key is empty or holds NUL, or two items share a key; nothing was written.
            StoreConflictError: An item's key exists and it is ``if_absent``; the items before
                it were stored, it and those after it were not.
        """
        for item in items:
            if not item.key:
                raise ValueError("the key must not be empty")
            _check_key(item.key)
        check_distinct_keys(items)
        versions: list[str] = []
        for start in range(0, len(items), _PUTS_PER_STATEMENT):
            chunk = items[start : start + _PUTS_PER_STATEMENT]
            parameters: list[object] = []
            for item in chunk:
                data = bytes(item.data)
                parameters += [item.key, data, data.isascii() and b"\x00" not in data]
            rows = await self.database.fetch(_put_in_order_sql(tuple(i.if_absent for i in chunk)), parameters)
            for item, version in zip(chunk, rows[0], strict=True):
                if version is None:
                    raise StoreConflictError(f"object {item.key!r} exists")
                versions.append(str(version))
        return versions

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        """Remove ``key``; return whether it existed.

        Raises:
            StoreConflictError: ``if_version`` is given and is not the current version.
        """
        _check_key(key)
        if if_version is None:
            return await self.database.execute(f"DELETE FROM agent_stores_objects WHERE {_OBJECT}", (key, key)) > 0
        expected = _object_version(if_version)
        deleted = expected is not None and await self.database.execute(
            f"DELETE FROM agent_stores_objects WHERE {_OBJECT} AND version = %s", (key, key, expected)
        )
        if not deleted:
            raise StoreConflictError(f"object {key!r} is not at version {if_version!r}")
        return True

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        """List keys under ``prefix``; with a delimiter, deeper keys fold into common prefixes (in SQL)."""
        if limit is not None and limit <= 0:
            raise ValueError(f"limit must be positive, got {limit!r}")
        _check_key(prefix, "prefix")
        _check_key(after or "", "after bound")
        if not delimiter:
            in_range, parameters = _object_range(prefix, after)
            rows = await self.database.fetch(
                f"SELECT key FROM agent_stores_objects WHERE {in_range} ORDER BY {_HEAD}, key LIMIT %s",
                (*parameters, limit),
            )
            return Listing([row[0] for row in rows], [])
        in_range, parameters = _object_range(prefix)
        page = (after or "", limit)
        _check_key(delimiter, "delimiter")
        rows = await self.database.fetch(
            "SELECT name, bool_or(folded) FROM (SELECT "
            'CASE WHEN cut > 0 THEN left(key, %s + cut + %s - 1) ELSE key END COLLATE "C" AS name, '
            "cut > 0 AS folded "
            f"FROM (SELECT key, strpos(substr(key, %s), %s) AS cut FROM agent_stores_objects WHERE {in_range}) AS k"
            ") AS n WHERE name > %s GROUP BY name ORDER BY name LIMIT %s",
            (len(prefix), len(delimiter), len(prefix) + 1, delimiter, *parameters, *page),
        )
        return Listing([row[0] for row in rows if not row[1]], [row[0] for row in rows if row[1]])

    async def find_keys(self, prefix: str, *, recursive: bool, literal: str | None = None) -> list[str]:
        """Return the keys under ``prefix`` that are not directory markers (search candidates), by key.

        Without ``recursive`` only keys with no ``/`` after the prefix. With ``literal`` (lowercase
        ASCII), rows whose data is plain ASCII are kept only when they contain it ignoring ASCII
        case; every other row is kept (a superset, never a miss).
        """
        _check_key(prefix, "prefix")
        in_range, parameters = _object_range(prefix)
        conditions = [in_range, "right(key, 1) <> '/'"]
        if not recursive:
            conditions.append("strpos(substr(key, %s), '/') = 0")
            parameters.append(len(prefix) + 1)
        if literal is not None:
            conditions.append(
                "CASE WHEN plain THEN strpos(lower(convert_from(data, 'UTF8') COLLATE \"C\"), %s) > 0 ELSE true END"
            )
            parameters.append(literal)
        rows = await self.database.fetch(
            f"SELECT key FROM agent_stores_objects WHERE {' AND '.join(conditions)} ORDER BY key", parameters
        )
        return [row[0] for row in rows]

    async def aclose(self) -> None:
        """Close the database if it owns its pool."""
        await self.database.aclose()


def _object_version(version: str) -> int | None:
    """The sequence number a version string names, or ``None`` when it cannot be one of ours."""
    try:
        value = int(version)
    except (TypeError, ValueError):
        return None
    return value if -(2**63) <= value < 2**63 else None
