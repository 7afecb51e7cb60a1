"""The SQLite log and object drivers: each operation is one statement, so one thread hop.

The core's adapters (``LogHistoryProvider``, ``ObjectAgentFileStore``, ``ObjectSessionStore``)
hold every rule; these drivers store and fetch opaque bytes in the schema of ``_database.py``.
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
from agent_stores.core.drivers import check_distinct_keys, prefix_bounds

from ._database import SQLiteDatabase

__all__ = ["SQLiteLogDriver", "SQLiteObjectDriver"]

# Rows per INSERT statement of an append: 2 parameters each plus 6 shared ones stay below
# SQLite's oldest default limit of 999 bound parameters. Larger batches (imports) are split
# into several statements inside one transaction.
_ROWS_PER_STATEMENT = 400

_LIVE = "(expires_at IS NULL OR expires_at > ?)"

# The length and version of the live log, and the digests of its last ?3 messages, oldest
# first: one row per digest (or a single row with a NULL digest when ?3 is 0), none when the
# log is absent or expired. Both lookups are index searches.
_TAIL = """
SELECT l.length, l.version, m.digest
FROM agent_stores_logs AS l
LEFT JOIN agent_stores_messages AS m ON m.log_id = l.log_id AND m.id >= (
    SELECT min(id) FROM (
        SELECT id FROM agent_stores_messages WHERE log_id = l.log_id ORDER BY id DESC LIMIT ?3))
WHERE l.key = ?1 AND (l.expires_at IS NULL OR l.expires_at > ?2)
ORDER BY m.id"""

_LIVE_LOG_ID = f"(SELECT log_id FROM agent_stores_logs WHERE key = ? AND {_LIVE})"
_READ_ALL = f"SELECT payload FROM agent_stores_messages WHERE log_id = {_LIVE_LOG_ID} ORDER BY id"
_READ_LAST = f"SELECT payload FROM agent_stores_messages WHERE log_id = {_LIVE_LOG_ID} ORDER BY id DESC LIMIT ?"
_LENGTH = f"SELECT length FROM agent_stores_logs WHERE key = ? AND {_LIVE}"
_DELETE_LOG = "DELETE FROM agent_stores_logs WHERE key = ? RETURNING expires_at IS NULL OR expires_at > ?"
_PURGE = "DELETE FROM agent_stores_logs WHERE expires_at <= ?"
_DELETE_AT = f"DELETE FROM agent_stores_logs WHERE key = ? AND version = ? AND {_LIVE}"

_APPEND_COLUMNS = "(key, session_id, expected, version, expires_at, now, first, digest, payload)"

# Items per statement of put_in_order: 4 parameters each stay below SQLite's oldest default limit
# of 999 bound parameters. More items go in further statements, each sent once the one before
# stored all of its items.
_PUTS_PER_STATEMENT = 200


@lru_cache(maxsize=16)
def _put_in_order_sql(items: int) -> str:
    """One statement storing the first ``items`` objects up to the first refused ``if_absent``.

    Parameters: a key, data, plain flag and if-absent flag per item. The refusals are found
    first (a materialized CTE, read before any row is written: every item's condition is
    judged on the objects as they were before the statement, as its own ``put`` would judge
    it, the keys being distinct); then the items before the first refusal are written in
    order, each with a fresh row id (``INSERT OR REPLACE``). One statement: atomic, so a stop
    leaves all of them or none. Returns each written item's key and row id.
    """
    values = ", ".join(f"({n}, ?, ?, ?, ?)" for n in range(items))
    return (
        f"WITH items (n, key, data, plain, absent) AS (VALUES {values}), "
        f"stop (n) AS MATERIALIZED (SELECT coalesce(min(n), {items}) FROM items AS i "
        "WHERE i.absent AND EXISTS (SELECT 1 FROM agent_stores_objects AS o WHERE o.key = i.key)) "
        "INSERT OR REPLACE INTO agent_stores_objects (key, data, plain) "
        "SELECT key, data, plain FROM items WHERE n < (SELECT n FROM stop) ORDER BY n RETURNING key, id"
    )


@lru_cache(maxsize=64)
def _append_sql(rows: int, *, first: bool) -> str:
    """The INSERT of ``rows`` messages into the append view.

    Parameters: ``?1`` key, ``?2`` session id, ``?3`` expected version, ``?4`` new version,
    ``?5`` expiry, ``?6`` now, then a digest and a payload per row. Only the first row of a
    batch (``first``) carries the condition; later rows reuse ``?1`` and bind two values each.
    """
    values = [
        f"(?1, ?2, ?3, ?4, ?5, ?6, 1, ?{7 + 2 * i}, ?{8 + 2 * i})"
        if first and i == 0
        else f"(?1, NULL, NULL, NULL, NULL, NULL, 0, ?{7 + 2 * i}, ?{8 + 2 * i})"
        for i in range(rows)
    ]
    return f"INSERT INTO agent_stores_append {_APPEND_COLUMNS} VALUES {', '.join(values)}"


def _range(column: str, prefix: str) -> tuple[str, list[object]]:
    low, high = prefix_bounds(prefix)
    if high is None:
        return f"{column} >= ?", [low]
    return f"{column} >= ? AND {column} < ?", [low, high]


class SQLiteLogDriver:
    """A :class:`~agent_stores.core.LogDriver` in ``agent_stores_logs`` / ``agent_stores_messages``.

    Steady-state costs: ``append`` of a batch of up to 400 records, ``tail``, ``read``
    (also ``read(last=N)``, one indexed ``ORDER BY id DESC LIMIT N``), ``length``,
    ``delete`` and ``purge_expired`` are one statement each. Expiry is lazy: an expired log
    reads as absent and is removed when it is written again or by :meth:`purge_expired`.

    Args:
        database: The database; closed by :meth:`aclose` only when it owns its connection.
        clock: Seconds since the epoch, for expiry (tests may pass a fake clock).
    """

    def __init__(self, database: SQLiteDatabase, *, clock: Callable[[], float] = time.time) -> None:
        self.database = database
        self._clock = clock

    async def tail(self, key: str, count: int) -> LogTail:
        """Return the live log's length, version and the digests of its last ``count`` records."""
        rows = await self.database.fetchall(_TAIL, (key, self._clock(), max(0, count)))
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
            ValueError: ``records`` is empty.
            StoreConflictError: The log is not at ``expected_version``; nothing was appended.
        """
        if not records:
            raise ValueError("append needs at least one record")
        now = self._clock()
        version = secrets.randbits(63)
        shared = [key, session_id, expected_version, version, None if ttl is None else now + ttl, now]
        try:
            if len(records) <= _ROWS_PER_STATEMENT:
                await self.database.execute(_append_sql(len(records), first=True), _parameters(shared, records))
            else:
                async with self.database.transaction():
                    for start in range(0, len(records), _ROWS_PER_STATEMENT):
                        chunk = records[start : start + _ROWS_PER_STATEMENT]
                        sql = _append_sql(len(chunk), first=start == 0)
                        await self.database.execute(sql, _parameters(shared, chunk))
        except StoreConflictError as err:
            raise StoreConflictError(f"log {key!r} is not at version {expected_version!r}") from err
        return version

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        """Return the live log's payloads in append order; with ``last``, only the newest ``last``."""
        if last is None:
            return [row[0] for row in await self.database.fetchall(_READ_ALL, (key, self._clock()))]
        if last <= 0:
            return []
        rows = await self.database.fetchall(_READ_LAST, (key, self._clock(), last))
        return [row[0] for row in reversed(rows)]

    async def length(self, key: str) -> int:
        """Return the live log's length (0 when absent or expired)."""
        rows = await self.database.fetchall(_LENGTH, (key, self._clock()))
        return rows[0][0] if rows else 0

    async def delete(self, key: str) -> bool:
        """Remove the log and its records; return whether it was live."""
        rows = await self.database.fetchall(_DELETE_LOG, (key, self._clock()))
        return bool(rows and rows[0][0])

    async def delete_if_version(self, key: str, version: LogVersion) -> bool:
        """Remove the log only if it is live and at ``version`` (one statement); return ``True``.

        Raises:
            StoreConflictError: The log is absent, expired or at another version; nothing was removed.
        """
        if not isinstance(version, int) or not await self.database.execute(_DELETE_AT, (key, version, self._clock())):
            raise StoreConflictError(f"log {key!r} is not at version {version!r}")
        return True

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        """Return up to ``limit`` live logs under ``prefix`` in key order, after the key ``after``."""
        in_range, parameters = _range("key", prefix)
        rows = await self.database.fetchall(
            f"SELECT key, session_id FROM agent_stores_logs WHERE {in_range} AND key > ? AND {_LIVE} "
            "ORDER BY key LIMIT ?",
            (*parameters, after or "", self._clock(), limit),
        )
        return [LogInfo(row[0], row[1]) for row in rows]

    async def purge_expired(self) -> int:
        """Remove every expired log now (one indexed DELETE); return how many."""
        return await self.database.execute(_PURGE, (self._clock(),))

    async def aclose(self) -> None:
        """Close the database if it owns its connection."""
        await self.database.aclose()


def _parameters(shared: Sequence[object], records: Sequence[LogRecord]) -> list[object]:
    parameters = list(shared)
    for record in records:
        parameters.append(record.digest)
        parameters.append(record.payload)
    return parameters


class SQLiteObjectDriver:
    """A :class:`~agent_stores.core.ObjectDriver` in ``agent_stores_objects``; every call is one statement.

    ``put_in_order`` (a checkpoint's record then its index entry) is one statement too.

    A version is the row id, which every put replaces with a fresh one (AUTOINCREMENT never
    hands an id out twice), so compare-and-set and exclusive create are single statements.

    Args:
        database: The database; closed by :meth:`aclose` only when it owns its connection.
    """

    def __init__(self, database: SQLiteDatabase) -> None:
        self.database = database

    async def get(self, key: str) -> StoredObject | None:
        """Return the object's bytes and version, or ``None``."""
        rows = await self.database.fetchall("SELECT data, id FROM agent_stores_objects WHERE key = ?", (key,))
        return StoredObject(bytes(rows[0][0]), str(rows[0][1])) if rows else None

    async def get_many(self, keys: Sequence[str]) -> list[StoredObject | None]:
        """Return :meth:`get` of every key, in order, in one statement per 500 keys (listings read many)."""
        found: dict[str, StoredObject] = {}
        for start in range(0, len(keys), 500):
            chunk = list(dict.fromkeys(keys[start : start + 500]))
            rows = await self.database.fetchall(
                f"SELECT key, data, id FROM agent_stores_objects WHERE key IN ({', '.join('?' * len(chunk))})", chunk
            )
            found.update((row[0], StoredObject(bytes(row[1]), str(row[2]))) for row in rows)
        return [found.get(key) for key in keys]

    async def head(self, key: str) -> str | None:
        """Return the object's version, or ``None``."""
        rows = await self.database.fetchall("SELECT id FROM agent_stores_objects WHERE key = ?", (key,))
        return str(rows[0][0]) if rows else None

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        """Store ``data`` under ``key`` (conditionally) and return its new version.

        Raises:
            StoreConflictError: ``if_absent`` and the key exists, or ``if_version`` is not current.
        """
        data = bytes(data)
        plain = int(data.isascii() and b"\x00" not in data)
        if if_version is not None:
            expected = _object_version(if_version)
            rows = (
                []
                if if_absent or expected is None
                else await self.database.fetchall(
                    "INSERT OR REPLACE INTO agent_stores_objects (key, data, plain) SELECT ?1, ?2, ?3 "
                    "WHERE EXISTS (SELECT 1 FROM agent_stores_objects WHERE key = ?1 AND id = ?4) RETURNING id",
                    (key, data, plain, expected),
                )
            )
            if not rows:
                raise StoreConflictError(f"object {key!r} is not at version {if_version!r}")
        elif if_absent:
            try:
                rows = await self.database.fetchall(
                    "INSERT INTO agent_stores_objects (key, data, plain) VALUES (?, ?, ?) RETURNING id",
                    (key, data, plain),
                )
            except StoreConflictError as err:
                raise StoreConflictError(f"object {key!r} exists") from err
        else:
            rows = await self.database.fetchall(
                "INSERT OR REPLACE INTO agent_stores_objects (key, data, plain) VALUES (?, ?, ?) RETURNING id",
                (key, data, plain),
            )
        return str(rows[0][0])

    async def put_in_order(self, items: Sequence[OrderedPut]) -> list[str]:
        """Store the items in order in one statement (one thread hop), stopping at the first refused ``if_absent``.

        See ``OrderedPutDriver``: the statement stores the items before the first refusal (all
        or none of them, should it be stopped); more than 200 items take a statement per 200.

        Raises:
            ValueError: Two items share a key; nothing was written.
            StoreConflictError: An item's key exists and it is ``if_absent``; the items before
                it were stored, it and those after it were not.
        """
        check_distinct_keys(items)
        versions: list[str] = []
        for start in range(0, len(items), _PUTS_PER_STATEMENT):
            chunk = items[start : start + _PUTS_PER_STATEMENT]
            parameters: list[object] = []
            for item in chunk:
                data = bytes(item.data)
                parameters += [item.key, data, int(data.isascii() and b"\x00" not in data), int(item.if_absent)]
            rows = await self.database.fetchall(_put_in_order_sql(len(chunk)), parameters)
            ids = {row[0]: str(row[1]) for row in rows}
            versions += [ids[item.key] for item in chunk[: len(ids)]]
            if len(ids) < len(chunk):
                raise StoreConflictError(f"object {chunk[len(ids)].key!r} exists")
        return versions

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        """Remove ``key``; return whether it existed.

        Raises:
            StoreConflictError: ``if_version`` is given and is not the current version.
        """
        if if_version is None:
            return await self.database.execute("DELETE FROM agent_stores_objects WHERE key = ?", (key,)) > 0
        expected = _object_version(if_version)
        deleted = expected is not None and await self.database.execute(
            "DELETE FROM agent_stores_objects WHERE key = ? AND id = ?", (key, expected)
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
        in_range, parameters = _range("key", prefix)
        page = (after or "", -1 if limit is None else limit)
        if not delimiter:
            rows = await self.database.fetchall(
                f"SELECT key FROM agent_stores_objects WHERE {in_range} AND key > ? ORDER BY key LIMIT ?",
                (*parameters, *page),
            )
            return Listing([row[0] for row in rows], [])
        rows = await self.database.fetchall(
            "SELECT name, folded FROM (SELECT "
            "CASE WHEN cut > 0 THEN substr(key, 1, ? + cut + ? - 1) ELSE key END AS name, max(cut > 0) AS folded "
            f"FROM (SELECT key, instr(substr(key, ?), ?) AS cut FROM agent_stores_objects WHERE {in_range}) "
            "GROUP BY name) WHERE name > ? ORDER BY name LIMIT ?",
            (len(prefix), len(delimiter), len(prefix) + 1, delimiter, *parameters, *page),
        )
        return Listing([row[0] for row in rows if not row[1]], [row[0] for row in rows if row[1]])

    async def find_keys(self, prefix: str, *, recursive: bool, literal: str | None = None) -> list[str]:
        """Return the keys under ``prefix`` that are not directory markers (search candidates), by key.

        Without ``recursive`` only keys with no ``/`` after the prefix. With ``literal`` (lowercase
        ASCII), rows whose data is plain ASCII are kept only when they contain it ignoring ASCII
        case; every other row is kept (a superset, never a miss).
        """
        in_range, parameters = _range("key", prefix)
        conditions = [in_range, "substr(key, -1) <> '/'"]
        if not recursive:
            conditions.append("instr(substr(key, ?), '/') = 0")
            parameters.append(len(prefix) + 1)
        if literal is not None and await self.database.text_is_utf8():
            conditions.append("(plain = 0 OR instr(lower(CAST(data AS TEXT)), ?) > 0)")
            parameters.append(literal)
        rows = await self.database.fetchall(
            f"SELECT key FROM agent_stores_objects WHERE {' AND '.join(conditions)} ORDER BY key", parameters
        )
        return [row[0] for row in rows]

    async def aclose(self) -> None:
        """Close the database if it owns its connection."""
        await self.database.aclose()


def _object_version(version: str) -> int | None:
    """The row id a version string names, or ``None`` when it cannot be one of ours."""
    try:
        return int(version)
    except (TypeError, ValueError):
        return None
