"""The Redis log and object drivers: every operation is one command or one script, one round trip.

The core's adapters (``LogHistoryProvider``, ``ObjectAgentFileStore``, ``ObjectSessionStore``)
hold every rule; these drivers store and fetch opaque bytes in the layout of ``_scripts.py``.
"""

from __future__ import annotations

import asyncio
import heapq
import secrets
from collections.abc import Sequence
from typing import Any, Final, cast

from agent_stores.core import (
    CorruptRecordError,
    Listing,
    LogInfo,
    LogRecord,
    LogTail,
    LogVersion,
    OrderedPut,
    StoreConflictError,
    StoredObject,
)
from agent_stores.core.drivers import check_distinct_keys

from ._connection import RedisConnection, as_bytes, as_str, telemetry_attributes

__all__ = ["RedisLogDriver", "RedisObjectDriver", "lex_range", "listing_bounds", "prefix_upper_bound"]

# Candidates a search tests in one script: one command of a bounded size, however many match.
_MATCH_BATCH: Final = 256
#: Objects one ``get_many`` script reads at most (one shard's keys; more go in further scripts).
_GET_MANY: Final = 512


def prefix_upper_bound(prefix: str) -> bytes | None:
    """The smallest byte string above every string that starts with ``prefix`` (``None``: no bound)."""
    data = prefix.encode("utf-8").rstrip(b"\xff")
    if not data:
        return None
    return data[:-1] + bytes([data[-1] + 1])


def lex_range(prefix: str, after: str | None = None) -> tuple[bytes, bytes] | None:
    """``ZRANGEBYLEX`` bounds of the keys under ``prefix`` sorting after ``after``; ``None`` when empty."""
    low = b"[" + prefix.encode("utf-8")
    upper = prefix_upper_bound(prefix)
    if after is not None and after >= prefix:
        if upper is not None and after.encode("utf-8") >= upper:
            return None
        low = b"(" + after.encode("utf-8")
    return low, b"+" if upper is None else b"(" + upper


def listing_bounds(prefix: str, delimiter: str | None, after: str | None) -> tuple[bytes, bytes] | None:
    """``ZRANGEBYLEX`` bounds where an object listing resumes; ``None`` when nothing is left.

    When ``after`` lies inside a common prefix (it contains the delimiter past ``prefix``),
    every key of that prefix folds into an entry that does not sort after ``after``, so the
    listing resumes past the whole prefix. Otherwise every key after ``after`` yields an entry
    after it (an entry that is a prefix of a key and sorts between ``after`` and the key would
    have to be a prefix of ``after`` too).
    """
    if after is None or not delimiter or not after.startswith(prefix):
        return lex_range(prefix, after)
    cut = after.find(delimiter, len(prefix))
    if cut < 0:
        return lex_range(prefix, after)
    resume = prefix_upper_bound(after[: cut + len(delimiter)])
    high = prefix_upper_bound(prefix)
    if resume is None or (high is not None and resume >= high):
        return None
    return b"[" + resume, b"+" if high is None else b"(" + high


class RedisLogDriver:
    """A :class:`~agent_stores.core.LogDriver` in Redis lists, one set of keys per log.

    Costs: ``append`` is one ``EVALSHA`` (version check, ``RPUSH`` of payloads and digests,
    TTL refresh, index update) answered with an integer. A steady append without a TTL
    declares the log's three keys and carries two short arguments besides the records; one
    that creates the log or sets a TTL also declares its shard's three keys and carries the
    log key (and, creating, the epoch and session id); dropping the TTL a log had takes a
    second ``EVALSHA`` with the shard's keys;
    ``read`` is one ``LRANGE`` (``read(last=N)`` reads only the newest N); ``length`` one
    ``LLEN``; ``tail`` and ``delete`` one script each; ``list_logs`` and ``purge_expired``
    one script per index shard, run concurrently, and one more per 500 logs due for expiry.
    Expiry is native: every key of a log gets ``PEXPIRE`` on each append with a TTL (and
    ``PERSIST`` without one), so Redis removes an expired log by itself; :meth:`purge_expired`
    and listing only drop expired entries from the index.

    Args:
        connection: The shared connection; closed by :meth:`aclose` only when it owns its client.
    """

    def __init__(self, connection: RedisConnection) -> None:
        self.connection = connection

    def telemetry_attributes(self) -> dict[str, str | int]:
        """Where the server is, for the core's spans (see ``agent_stores.core.telemetry``)."""
        return telemetry_attributes(self.connection.client)

    async def tail(self, key: str, count: int) -> LogTail:
        """Return the log's length, version and the digests of its last ``count`` records."""
        c = self.connection
        reply = await c.run("tail", c.log_tail(c.log_keys(key)[:3], [max(0, count)]))
        epoch, length, digests = cast("list[Any]", reply)
        epoch = as_str(epoch)
        if not epoch:
            return LogTail(0, [], None)
        return LogTail(int(length), [as_str(d) for d in digests], f"{epoch}:{int(length)}")

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        """Append ``records`` atomically if the log is at ``expected_version``; return the new version.

        Raises:
            ValueError: ``records`` is empty.
            StoreConflictError: The log is not at ``expected_version``; nothing was appended.
        """
        c = self.connection
        if not records:
            raise ValueError("append needs at least one record")
        ttl_ms = "" if ttl is None else str(max(1, round(ttl * 1000)))
        keys = c.log_keys(key)
        records_args: list[str | bytes] = [r.digest for r in records]
        records_args += [r.payload for r in records]
        if expected_version is None:
            epoch = secrets.token_hex(8)
            head, created = ["", ttl_ms], [epoch, session_id]
        else:
            head, created = [str(expected_version), ttl_ms], []
            epoch = head[0].rpartition(":")[0]  # what the log holds if the script does not conflict

        # The script with the log's keys, and its shard's when it creates the log or sets a TTL
        # (no closure: nothing more than the call itself stays alive while it is in flight).
        if expected_version is None or ttl is not None:
            call = c.log_append(keys, [*head, key, *created, *records_args])
        else:
            call = c.log_append(keys[:3], [*head, *records_args])
        reply = await c.run("append", call)
        if isinstance(reply, list) and len(cast("list[Any]", reply)) > 1:  # a TTL to drop: the shard's keys too
            reply = await c.run("append", c.log_append(keys, [*head, key, *created, *records_args]))
        if isinstance(reply, list):
            current = as_str(cast("list[Any]", reply)[0])
            raise StoreConflictError(f"log {key!r} is at version {current!r}, not {expected_version!r}")
        return f"{epoch}:{reply}"

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        """Return the log's payloads in append order; with ``last``, only the newest ``last``."""
        if last is not None and last <= 0:
            return []
        c = self.connection
        start = 0 if last is None else -last
        try:
            payloads = cast("list[Any]", await c.run("read", c.send("LRANGE", c.log_payloads(key), start, -1)))
        except UnicodeDecodeError as err:  # redis-py closes the connection of a reply it fails to decode
            raise CorruptRecordError(
                f"log {key!r} holds a record that is not UTF-8, which a client with decode_responses=True "
                "cannot read; nothing was changed"
            ) from err
        if payloads and not isinstance(payloads[0], bytes):  # a client with decode_responses
            return [as_bytes(p) for p in payloads]
        return payloads

    async def length(self, key: str) -> int:
        """Return the log's length (0 when absent or expired)."""
        c = self.connection
        return int(await c.run("length", c.send("LLEN", c.log_payloads(key))))

    async def delete(self, key: str) -> bool:
        """Remove the log and its index entry; return whether it existed (an expired log did not)."""
        c = self.connection
        return bool(int(await c.run("delete", c.log_delete(c.log_keys(key), [key]))))

    async def delete_if_version(self, key: str, version: LogVersion) -> bool:
        """Remove the log only while it is at ``version`` (one script); return ``True``.

        Raises:
            StoreConflictError: The log is absent or at another version; nothing was removed.
        """
        c = self.connection
        removed = version is not None and int(
            await c.run("delete", c.log_delete_at(c.log_keys(key), [key, str(version)]))
        )
        if not removed:
            raise StoreConflictError(f"log {key!r} is not at version {version!r}")
        return True

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        """Return up to ``limit`` live logs under ``prefix`` in key (byte) order, each after the key ``after``.

        Each shard returns its first ``limit`` live keys in range; the smallest ``limit`` of
        their union are the page, exactly.
        """
        if limit <= 0:
            raise ValueError(f"limit must be positive, got {limit!r}")
        bounds = lex_range(prefix, after)
        if bounds is None:
            return []
        c = self.connection
        pages = await asyncio.gather(*(self._list_shard(keys, bounds, limit) for keys in c.log_shards()))
        return heapq.nsmallest(limit, (info for page in pages for info in page), key=lambda info: info.key)

    async def _list_shard(self, keys: list[str], bounds: tuple[bytes, bytes], limit: int) -> list[LogInfo]:
        """One shard's first ``limit`` live logs in ``bounds``, once its logs due for expiry are purged."""
        c = self.connection
        while True:
            due, flat = cast(list[Any], await c.run("list_logs", c.log_list(keys, [*bounds, limit])))
            if not due:
                return [LogInfo(as_str(flat[i]), as_str(flat[i + 1])) for i in range(0, len(flat), 2)]
            await self._purge(keys, cast(list[Any], due))

    async def purge_expired(self) -> int:
        """Drop expired logs from the index (Redis already removed their keys); return how many."""
        c = self.connection
        counts = await asyncio.gather(*(self._purge_shard(keys) for keys in c.log_shards()))
        return sum(counts)

    async def _purge_shard(self, keys: list[str]) -> int:
        """Purge one shard (``keys``: its index, expiry, sessions) until none of its logs is due; return how many."""
        c = self.connection
        removed = 0
        while due := cast(list[Any], await c.run("purge_expired", c.log_due(keys[1:2], []))):
            removed += await self._purge(keys, due)
        return removed

    async def _purge(self, keys: list[str], due: list[Any]) -> int:
        """Run ``LOG_PURGE`` on a shard's logs ``due`` for expiry (``keys``: its index, expiry, sessions)."""
        c = self.connection
        members = [as_str(member) for member in due]
        return int(await c.run("purge_expired", c.log_purge([*keys, *c.log_epochs(keys, members)], members)))

    async def aclose(self) -> None:
        """Close the client if the connection owns it."""
        await self.connection.aclose()


class RedisObjectDriver:
    """A :class:`~agent_stores.core.ObjectDriver` in Redis hashes (data and version), indexed per shard.

    ``get`` is one ``HMGET``, ``head`` one ``HGET``, ``get_many`` one script per shard; ``put``,
    ``put_in_order`` and ``delete`` one script each (the condition, the write and the index
    update together; ``put_in_order`` on a cluster only when its keys share a shard). A version is a random token
    drawn for every put, so a version never comes back after a delete and a new write.
    ``list`` runs one script per shard concurrently, each folding its keys at the delimiter
    and returning its first ``limit`` entries; the smallest ``limit`` of their union are
    exactly the page the contract asks for.

    Args:
        connection: The shared connection; closed by :meth:`aclose` only when it owns its client.
    """

    def __init__(self, connection: RedisConnection) -> None:
        self.connection = connection

    def telemetry_attributes(self) -> dict[str, str | int]:
        """Where the server is, for the core's spans (see ``agent_stores.core.telemetry``)."""
        return telemetry_attributes(self.connection.client)

    async def get(self, key: str) -> StoredObject | None:
        """Return the object, or ``None`` when absent."""
        c = self.connection
        data, version = cast("list[Any]", await c.run("get", c.send("HMGET", c.object_keys(key)[0], "d", "v")))
        if data is None or version is None:
            return None
        return StoredObject(as_bytes(data), as_str(version))

    async def get_many(self, keys: Sequence[str]) -> list[StoredObject | None]:
        """Return :meth:`get` of every key, in order: one script per shard holding some of them (up to 512 keys each).

        The shards' scripts go out together (one pipeline; on a cluster, each node its own), so
        a listing's thousands of reads cost a few round trips, not a command each.
        """
        c = self.connection
        hashes: list[str] = []
        shards: dict[str, list[int]] = {}
        for position, key in enumerate(keys):
            object_key, index = c.object_keys(key)
            hashes.append(object_key)
            shards.setdefault(index, []).append(position)
        chunks = [p[start : start + _GET_MANY] for p in shards.values() for start in range(0, len(p), _GET_MANY)]
        replies = await asyncio.gather(
            *(c.run("get", c.object_get_many([hashes[i] for i in chunk], [])) for chunk in chunks)
        )
        found: list[StoredObject | None] = [None] * len(keys)
        for chunk, reply in zip(chunks, replies, strict=True):
            flat = cast(list[Any], reply)
            for n, position in enumerate(chunk):
                data, version = flat[2 * n], flat[2 * n + 1]
                if data is not None and version is not None:
                    found[position] = StoredObject(as_bytes(data), as_str(version))
        return found

    async def head(self, key: str) -> str | None:
        """Return the object's version, or ``None`` when absent."""
        c = self.connection
        version = await c.run("head", c.send("HGET", c.object_keys(key)[0], "v"))
        return None if version is None else as_str(version)

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        """Store ``data`` under ``key`` and return its new version.

        Raises:
            StoreConflictError: ``if_absent`` and the key exists, or ``if_version`` is not the
                current version (including when the key is absent). Nothing was written.
        """
        c = self.connection
        version = secrets.token_hex(8)
        mode = "version" if if_version is not None else "absent" if if_absent else ""
        args = [data, version, mode, if_version or "", key]
        written = int(await c.run("put", c.object_put(c.object_keys(key), args)))
        if not written:
            condition = f"at version {if_version!r}" if if_version is not None else "absent"
            raise StoreConflictError(f"object {key!r} is not {condition}")
        return version

    async def put_in_order(self, items: Sequence[OrderedPut]) -> list[str]:
        """Store the items in order in one script (one round trip), stopping at the first refused ``if_absent``.

        See ``OrderedPutDriver``. A script runs whole or not at all, so a stop leaves all the
        items before the refusal or none. On a cluster one script reaches only keys of one slot:
        items whose keys lie in different shards (a checkpoint's record and index entry mostly
        do, unless ``shards=1``) are put one after the other instead, in order, a round trip each.

        Raises:
            ValueError: Two items share a key; nothing was written.
            StoreConflictError: An item's key exists and it is ``if_absent``; the items before
                it were stored, it and those after it were not.
        """
        check_distinct_keys(items)
        if not items:
            return []
        c = self.connection
        keys = [c.object_keys(item.key) for item in items]
        if c.cluster and len({index for _, index in keys}) > 1:
            return [await self.put(item.key, item.data, if_absent=item.if_absent) for item in items]
        versions = [secrets.token_hex(8) for _ in items]
        args: list[str | bytes] = []
        for item, version in zip(items, versions, strict=True):
            args += [item.data, version, "1" if item.if_absent else "", item.key]
        written = int(await c.run("put", c.object_put_in_order([k for pair in keys for k in pair], args)))
        if written < len(items):
            raise StoreConflictError(f"object {items[written].key!r} exists")
        return versions

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        """Remove ``key``; return whether it existed.

        Raises:
            StoreConflictError: ``if_version`` is given and is not the current version.
        """
        c = self.connection
        result = int(await c.run("delete", c.object_delete(c.object_keys(key), [key, if_version or ""])))
        if result < 0:
            raise StoreConflictError(f"object {key!r} is not at version {if_version!r}")
        return result == 1

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        """List keys under ``prefix`` in byte (code-point) order, folded at ``delimiter``, paged."""
        if limit is not None and limit <= 0:
            raise ValueError(f"limit must be positive, got {limit!r}")
        bounds = listing_bounds(prefix, delimiter, after)
        if bounds is None:
            return Listing([], [])
        low, high = bounds
        c = self.connection
        args = [prefix, delimiter or "", limit or 0, low, high]
        replies = await asyncio.gather(*(c.run("list", c.object_list([index], args)) for index, _ in c.object_shards()))
        entries: dict[str, bool] = {}
        for reply in replies:
            flat = cast(list[Any], reply)
            for i in range(0, len(flat), 2):
                entries[as_str(flat[i])] = bool(int(flat[i + 1]))
        names = sorted(entries)
        if limit is not None:
            names = names[:limit]
        return Listing([n for n in names if not entries[n]], [n for n in names if entries[n]])

    async def find_keys(self, prefix: str, *, recursive: bool, literal: str | None = None) -> list[str]:
        """Return the keys under ``prefix`` that are not directory markers (search candidates), in order.

        Without ``recursive`` only keys with no ``/`` after the prefix. With ``literal``
        (lowercase ASCII), objects whose data is plain ASCII are kept only when they contain it
        ignoring ASCII case; every other object is kept (a superset, never a miss). Runs on the
        server: one script per shard finds the candidates, and with ``literal`` one more per
        :data:`_MATCH_BATCH` of them tests their data.
        """
        bounds = lex_range(prefix)
        if bounds is None:
            return []
        c = self.connection
        args = [prefix, "1" if recursive else "0", *bounds]
        shards = c.object_shards()
        replies = await asyncio.gather(*(c.run("search", c.object_find([index], args)) for index, _ in shards))
        found = [[as_str(k) for k in cast(list[Any], reply)] for reply in replies]
        if literal:
            batches = [
                (objects, keys[i : i + _MATCH_BATCH])
                for (_, objects), keys in zip(shards, found, strict=True)
                for i in range(0, len(keys), _MATCH_BATCH)
            ]
            found = await asyncio.gather(*(self._match(objects, keys, literal) for objects, keys in batches))
        return sorted(key for keys in found for key in keys)

    async def _match(self, objects: str, keys: list[str], literal: str) -> list[str]:
        """The ``keys`` of one shard (``objects``: its objects' key prefix) whose object may contain ``literal``."""
        c = self.connection
        reply = await c.run("search", c.object_match([objects + key for key in keys], [literal]))
        return [keys[int(n) - 1] for n in cast(list[Any], reply)]

    async def aclose(self) -> None:
        """Close the client if the connection owns it."""
        await self.connection.aclose()
