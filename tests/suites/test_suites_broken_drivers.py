"""The driver suites (and the history suite, through the core's adapter) catch deliberately broken drivers.

Each broken driver is the core's correct in-process driver with one bug. One ``pytester`` run
executes, for every broken driver, only the clauses meant to catch its bug, and each of them
must fail in its call (not in setup): the correct drivers pass every clause in
``test_driver_conformance.py``, so the failure is the bug's. The runs also prove that a
driver which pages forever, blocks forever or spins forever fails a clause instead of hanging.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import re
import time
import zlib
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from agent_stores.core import (
    Listing,
    LogInfo,
    LogRecord,
    LogTail,
    LogVersion,
    OrderedPut,
    StoreConflictError,
    StoredObject,
    StoreUnavailableError,
)
from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver

pytest_plugins = ["pytester"]

# -- broken log drivers -----------------------------------------------------------------------


class VersionIsLength(MemoryLogDriver):
    """Reports the log's length as its version: a rewritten log returns to an old version."""

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        await super().append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)
        log = self._logs[key]
        log.version = len(log.records)
        return log.version


class VersionIsLastDigest(MemoryLogDriver):
    """Derives the version from the content: appending identical records keeps it."""

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        await super().append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)
        log = self._logs[key]
        log.version = f"{key}:{log.records[-1].digest}"
        return log.version


class ConflictLeavesRecords(MemoryLogDriver):
    """Appends first and checks the version afterwards, leaving the records of a conflicting append."""

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        log = self._live(key)
        if log is not None and log.version != expected_version:
            log.records.extend(records)
        return await super().append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)


class ChecksThenAppends(MemoryLogDriver):
    """Checks the version, awaits a round trip, then appends unconditionally."""

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        current = (await self.tail(key, 0)).version
        if current != expected_version:
            raise StoreConflictError("conflict")
        await asyncio.sleep(0)
        now = (await self.tail(key, 0)).version
        return await super().append(key, records, expected_version=now, session_id=session_id, ttl=ttl)


class TailReturnsOldest(MemoryLogDriver):
    """Returns the first ``count`` digests instead of the last."""

    async def tail(self, key: str, count: int) -> tuple[int, list[str], LogVersion]:  # type: ignore[override]
        full = await super().tail(key, 10**9)
        return full._replace(digests=full.digests[:count])


class ReadLastReturnsOldest(MemoryLogDriver):
    """Returns the oldest ``last`` payloads instead of the newest."""

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        payloads = await super().read(key)
        return payloads if last is None else payloads[:last]


class PayloadsAsText(MemoryLogDriver):
    """Stores payloads as text, replacing what is not UTF-8."""

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        return [p.decode("utf-8", "replace").encode() for p in await super().read(key, last=last)]


class DeleteMatchesPrefix(MemoryLogDriver):
    """Deletes every key starting with the key (a pattern delete)."""

    async def delete(self, key: str) -> bool:
        found = await super().delete(key)
        for other in [k for k in self._logs if k.startswith(key)]:
            del self._logs[other]
        return found


class DeleteIgnoresVersion(MemoryLogDriver):
    """``delete_if_version`` deletes whatever version the log is at (the version is not checked)."""

    async def delete_if_version(self, key: str, version: LogVersion) -> bool:
        if not await self.delete(key):
            raise StoreConflictError(f"log {key!r} is absent")
        return True


class DeleteChecksThenDeletes(MemoryLogDriver):
    """``delete_if_version`` reads the version, awaits, then deletes: an append landing between is lost."""

    async def delete_if_version(self, key: str, version: LogVersion) -> bool:
        if (await self.tail(key, 0)).version != version:
            raise StoreConflictError(f"log {key!r} is not at version {version!r}")
        for _ in range(8):  # the window between check and delete: other tasks run
            await asyncio.sleep(0)
        await self.delete(key)
        return True


class ListRepeatsBoundaryKey(MemoryLogDriver):
    """Lists keys from ``after`` inclusive: a walk that pages on the last key never ends."""

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        keys = sorted(k for k in self._logs if k.startswith(prefix) and (after is None or k >= after))
        return [LogInfo(k, log.session_id) for k in keys if (log := self._live(k)) is not None][:limit]


class ListIgnoresAfter(MemoryLogDriver):
    """Ignores ``after``: every page is the first page."""

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        return await super().list_logs(prefix, limit=limit)


class ListMatchesPrefixAsGlob(MemoryLogDriver):
    """Passes the prefix to a glob match unescaped (a ``SCAN MATCH prefix*``)."""

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        keys = sorted(k for k in self._logs if fnmatch.fnmatchcase(k, prefix + "*") and (after is None or k > after))
        return [LogInfo(k, log.session_id) for k in keys if (log := self._live(k)) is not None][:limit]


class ListKeepsOldSessionId(MemoryLogDriver):
    """Keeps each key's session id apart from the log, and never removes it on delete."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._session_ids: dict[str, str] = {}

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        self._session_ids.setdefault(key, session_id)
        return await super().append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        listed = await super().list_logs(prefix, after=after, limit=limit)
        return [LogInfo(log.key, self._session_ids[log.key]) for log in listed]


class LengthCountsExpired(MemoryLogDriver):
    """Counts an expired log's records."""

    async def length(self, key: str) -> int:
        log = self._logs.get(key)
        return 0 if log is None else len(log.records)


class ListsExpiredLogs(MemoryLogDriver):
    """Lists expired logs."""

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        keys = sorted(k for k in self._logs if k.startswith(prefix) and (after is None or k > after))
        return [LogInfo(k, self._logs[k].session_id) for k in keys][:limit]


class KeepsExpiredRecords(MemoryLogDriver):
    """Revives an expired log's records when it is written again."""

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        expired = self._logs.get(key) if self._live(key) is None else None
        version = await super().append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)
        if expired is not None:
            self._logs[key].records[:0] = expired.records
        return version


class TtlOnlyOnCreate(MemoryLogDriver):
    """Sets the expiry when the log is created, never refreshes it."""

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        log = self._live(key)
        expires_at = None if log is None else log.expires_at
        version = await super().append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)
        if log is not None:
            self._logs[key].expires_at = expires_at
        return version


class PurgeRemovesLiveLogs(MemoryLogDriver):
    """Purges every log, expired or not."""

    async def purge_expired(self) -> int:
        count = len(self._logs)
        self._logs.clear()
        return count


class PurgeCountsNothing(MemoryLogDriver):
    """Purges expired logs but always reports 0."""

    async def purge_expired(self) -> int:
        await super().purge_expired()
        return 0


class PurgeLeavesRecords(MemoryLogDriver):
    """Purges each expired log's header but leaves its records, which collide with the next log's (a duplicate key)."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._orphans: dict[str, list[LogRecord]] = {}

    async def purge_expired(self) -> int:
        expired = [k for k in self._logs if self._live(k) is None]
        for key in expired:
            self._orphans[key] = self._logs.pop(key).records
        return len(expired)

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        if key in self._orphans and key not in self._logs:
            raise RuntimeError(f"duplicate key value violates unique constraint (key={key!r}, seq=0)")
        return await super().append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)


def _index_refuses(key: str, limit: int) -> None:
    """An index over compressed keys: a key that compresses past ``limit`` bytes cannot be stored."""
    size = len(zlib.compress(key.encode()))
    if size > limit:
        raise RuntimeError(f"index row size {size} exceeds btree maximum {limit}")


class IndexesCompressedLogKeys(MemoryLogDriver):
    """Indexes keys compressed, up to 400 bytes: a repeated character fits, a real 600-character key does not."""

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        _index_refuses(key, 400)
        return await super().append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)


class IndexesCompressedObjectKeys(MemoryObjectDriver):
    """Indexes keys compressed, up to 600 bytes: a repeated character fits, a real 1,024-byte key does not."""

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        _index_refuses(key, 600)
        return await super().put(key, data, if_absent=if_absent, if_version=if_version)


def _text_column(*values: str | None) -> None:
    """A SQL ``text`` column: NUL cannot be stored, and the client raises its own error."""
    if any(value is not None and "\x00" in value for value in values):
        raise RuntimeError("PostgreSQL text fields cannot contain NUL (0x00) bytes")


class RawErrorOnNulLogKey(MemoryLogDriver):
    """Lets the database client's error for NUL through instead of ``ValueError``."""

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        _text_column(key)
        return await super().append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)


class RefusesNulInLogKeys(MemoryLogDriver):
    """Refuses NUL in keys, prefixes and ``after`` with ``ValueError``, as ``drivers.py`` allows."""

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        if "\x00" in key:
            raise ValueError("NUL")
        return await super().append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        if "\x00" in prefix + (after or ""):
            raise ValueError("NUL")
        return await super().list_logs(prefix, after=after, limit=limit)


class EmptyAppendCreatesTheLog(MemoryLogDriver):
    """Appends an empty batch like any other: an absent log comes into existence with no records."""

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        if not records:
            log = self._live(key)
            if (None if log is None else log.version) != expected_version:
                raise StoreConflictError("moved")
            if log is not None:
                return log.version
            placeholder = [LogRecord("placeholder", b"")]
            version = await super().append(key, placeholder, expected_version=None, session_id=session_id, ttl=ttl)
            self._logs[key].records.clear()
            return version
        return await super().append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)


class TtlNoneKeepsTheExpiry(MemoryLogDriver):
    """An append without ``ttl`` leaves the expiry an earlier append set."""

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        log = self._live(key)
        expires_at = None if log is None else log.expires_at
        version = await super().append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)
        if ttl is None:
            self._logs[key].expires_at = expires_at
        return version


class RawErrorOnNulObjectKey(MemoryObjectDriver):
    """Lets the database client's error for NUL through instead of ``ValueError``."""

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        _text_column(key)
        return await super().put(key, data, if_absent=if_absent, if_version=if_version)


class LogServer:
    """One database behind every pool: it accepts one new connection every 5 ms."""

    def __init__(self) -> None:
        self.log = MemoryLogDriver()
        self.accepting = asyncio.Lock()


class LazyPoolChecksThenCreates:
    """A driver over a lazily growing connection pool that creates a log with a check, then an INSERT.

    Extending a log is one conditional statement (atomic); creating one is two round trips. Racers
    that each open their first connection arrive one after another (the server accepts one
    connection at a time), so the check-then-insert only loses when warm racers start together.
    """

    def __init__(self, server: LogServer) -> None:
        self.server = server
        self.idle = 0

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncIterator[MemoryLogDriver]:
        if self.idle:
            self.idle -= 1
        else:
            async with self.server.accepting:
                await asyncio.sleep(0.005)
        try:
            yield self.server.log
        finally:
            self.idle += 1

    async def tail(self, key: str, count: int) -> LogTail:
        async with self._connection() as log:
            return await log.tail(key, count)

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        async with self._connection() as log:
            if expected_version is None:
                if (await log.tail(key, 0)).version is not None:
                    raise StoreConflictError("exists")
                await asyncio.sleep(0)  # the INSERT is a second round trip
                expected_version = (await log.tail(key, 0)).version
            return await log.append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        async with self._connection() as log:
            return await log.read(key, last=last)

    async def length(self, key: str) -> int:
        async with self._connection() as log:
            return await log.length(key)

    async def delete(self, key: str) -> bool:
        async with self._connection() as log:
            return await log.delete(key)

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        async with self._connection() as log:
            return await log.list_logs(prefix, after=after, limit=limit)

    async def purge_expired(self) -> int:
        async with self._connection() as log:
            return await log.purge_expired()

    async def aclose(self) -> None:
        return None


class TailNeverAnswers(MemoryLogDriver):
    """``tail`` waits forever (a server that never replies, with no client timeout)."""

    async def tail(self, key: str, count: int) -> tuple[int, list[str], LogVersion]:  # type: ignore[override]
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


class ThirdTailFails(MemoryLogDriver):
    """The third ``tail`` raises ``StoreUnavailableError`` (one dropped connection): a racer fails its warm-up."""

    calls = 0

    async def tail(self, key: str, count: int) -> tuple[int, list[str], LogVersion]:  # type: ignore[override]
        type(self).calls += 1
        if type(self).calls == 3:
            raise StoreUnavailableError("the connection was dropped")
        return await super().tail(key, count)


class LengthSpinsForever(MemoryLogDriver):
    """``length`` loops in its own code without ever awaiting."""

    async def length(self, key: str) -> int:
        while True:
            time.sleep(0.001)  # noqa: ASYNC251 - the bug: a busy loop that never yields to the event loop


# -- broken object drivers --------------------------------------------------------------------


class ObjectChecksThenCreates(MemoryObjectDriver):
    """Checks that the key is absent, awaits a round trip, then writes unconditionally."""

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        if if_absent:
            if await self.head(key) is not None:
                raise StoreConflictError("exists")
            await asyncio.sleep(0)
            return await super().put(key, data)
        return await super().put(key, data, if_version=if_version)


class ObjectComparesThenWrites(MemoryObjectDriver):
    """Compares the version, awaits a round trip, then writes or deletes unconditionally."""

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        if if_version is not None:
            if await self.head(key) != if_version:
                raise StoreConflictError("moved")
            await asyncio.sleep(0)
            return await super().put(key, data)
        return await super().put(key, data, if_absent=if_absent)

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        if if_version is not None:
            if await self.head(key) != if_version:
                raise StoreConflictError("moved")
            await asyncio.sleep(0)
        return await super().delete(key)


class ObjectVersionIsLength(MemoryObjectDriver):
    """Versions are the data's length: different contents of one length share a version."""

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        await super().put(key, data, if_absent=if_absent, if_version=if_version)
        self._objects[key] = StoredObject(bytes(data), str(len(data)))
        return str(len(data))


class IfVersionOnMissingKeyWrites(MemoryObjectDriver):
    """Treats a missing key as matching any ``if_version`` (an ``If-Match`` a missing object satisfies)."""

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        if if_version is not None and key not in self._objects:
            if_version = None
        return await super().put(key, data, if_absent=if_absent, if_version=if_version)


class DeleteIgnoresIfVersion(MemoryObjectDriver):
    """Deletes whatever version is stored."""

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        return await super().delete(key)


class HeadCachesVersions(MemoryObjectDriver):
    """``head`` answers from a cache filled by the first ``head`` of each key."""

    def __init__(self) -> None:
        super().__init__()
        self._cache: dict[str, str | None] = {}

    async def head(self, key: str) -> str | None:
        if key not in self._cache:
            self._cache[key] = await super().head(key)
        return self._cache[key]


class StripsTrailingNul(MemoryObjectDriver):
    """Stores data as a C string would: trailing NUL bytes are lost."""

    async def get(self, key: str) -> StoredObject | None:
        stored = await super().get(key)
        return None if stored is None else stored._replace(data=stored.data.rstrip(b"\x00"))


class TruncatesLargeObjects(MemoryObjectDriver):
    """Keeps only the first MiB of an object."""

    async def get(self, key: str) -> StoredObject | None:
        stored = await super().get(key)
        return None if stored is None else stored._replace(data=stored.data[: 1 << 20])


class FoldsKeyCase(MemoryObjectDriver):
    """Lowercases keys."""

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        return await super().put(key.lower(), data, if_absent=if_absent, if_version=if_version)

    async def get(self, key: str) -> StoredObject | None:
        return await super().get(key.lower())

    async def head(self, key: str) -> str | None:
        return await super().head(key.lower())


class ListIgnoresAfterObjects(MemoryObjectDriver):
    """Ignores ``after``: every page is the first page."""

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        return await super().list(prefix, delimiter=delimiter, limit=limit)


class AfterFiltersKeysOnly(MemoryObjectDriver):
    """Applies ``after`` to keys before folding, as S3's ``StartAfter`` does: a folded prefix comes back."""

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        keys: list[str] = []
        prefixes: list[str] = []
        for key in self._sorted:
            if not key.startswith(prefix) or (after is not None and key <= after):
                continue
            rest = key[len(prefix) :]
            if delimiter and delimiter in rest:
                common = prefix + rest[: rest.index(delimiter) + len(delimiter)]
                if common not in prefixes:
                    prefixes.append(common)
            else:
                keys.append(key)
            if limit is not None and len(keys) + len(prefixes) >= limit:
                break
        return Listing(keys, prefixes)


class LimitCountsKeysOnly(MemoryObjectDriver):
    """Counts only keys against ``limit``; common prefixes come on top."""

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        full = await super().list(prefix, delimiter=delimiter, after=after)
        keys = full.keys if limit is None else full.keys[:limit]
        last = keys[-1] if keys and limit is not None and len(full.keys) > limit else None
        return Listing(keys, [p for p in full.prefixes if last is None or p < last])


class ListsInUtf16Order(MemoryObjectDriver):
    """Orders listings by UTF-16 code units, as JavaScript and Java compare strings."""

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        full = await super().list(prefix, delimiter=delimiter, after=after, limit=limit)
        order = lambda name: name.encode("utf-16-be")  # noqa: E731
        return Listing(sorted(full.keys, key=order), sorted(full.prefixes, key=order))


class ListMatchesPrefixAsRegex(MemoryObjectDriver):
    """Passes the prefix to a regex unescaped (a ``$regex: "^" + prefix``)."""

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        try:
            pattern = re.compile(prefix)
        except re.error:
            pattern = re.compile(re.escape(prefix))
        matching = [k for k in self._sorted if pattern.match(k) and (after is None or k > after)]
        keys = [k for k in matching if not delimiter or delimiter not in k[len(prefix) :]]
        return Listing(keys if limit is None else keys[:limit], [])


class PrefixesWithoutDelimiter(MemoryObjectDriver):
    """Returns common prefixes without their trailing delimiter."""

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        full = await super().list(prefix, delimiter=delimiter, after=after, limit=limit)
        return Listing(full.keys, [p.rstrip("/") for p in full.prefixes])


class DelimiterIsAlwaysSlash(MemoryObjectDriver):
    """Folds on ``/`` whatever delimiter is asked for."""

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        return await super().list(prefix, delimiter=delimiter and "/", after=after, limit=limit)


class SynchronousHead(MemoryObjectDriver):
    """``head`` is a plain method: the core cannot await it."""

    def head(self, key: str) -> str | None:  # type: ignore[override]
        stored = self._objects.get(key)
        return None if stored is None else stored.version


class CutsLongKeys(MemoryLogDriver):
    """Truncates keys to 255 characters, as a fixed-width column would."""

    async def tail(self, key: str, count: int) -> tuple[int, list[str], LogVersion]:  # type: ignore[override]
        return await super().tail(key[:255], count)

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        return await super().append(
            key[:255], records, expected_version=expected_version, session_id=session_id, ttl=ttl
        )

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        return await super().read(key[:255], last=last)


class PutInOrderLastFirst(MemoryObjectDriver):
    """``put_in_order`` writes the last item first: a refusal (or a stop) leaves later items without earlier ones.

    What a checkpoint save writing its index entry before its record would leave.
    """

    async def put_in_order(self, items: Sequence[OrderedPut]) -> list[str]:
        versions = [await self.put(item.key, item.data, if_absent=item.if_absent) for item in reversed(items)]
        return versions[::-1]


class PutInOrderGoesOnAfterRefusal(MemoryObjectDriver):
    """``put_in_order`` writes every item it can and raises for the refused one only at the end."""

    async def put_in_order(self, items: Sequence[OrderedPut]) -> list[str]:
        versions: list[str] = []
        refused: StoreConflictError | None = None
        for item in items:
            try:
                versions.append(await self.put(item.key, item.data, if_absent=item.if_absent))
            except StoreConflictError as err:
                refused = refused or err
        if refused is not None:
            raise refused
        return versions


class PutNeverAnswers(MemoryObjectDriver):
    """``put`` waits forever."""

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        await asyncio.sleep(3600)
        raise AssertionError("unreachable")


# -- the runs ---------------------------------------------------------------------------------

_LOG_CAPS = "LogDriverCapabilities(ttl=True, concurrent_instances=True, conditional_delete=True)"
_OBJECT_CAPS = "ObjectDriverCapabilities(atomic_create_across_instances=True, atomic_if_version_across_instances=True)"
_HISTORY_CAPS = "HistoryCapabilities(admin=True, ttl=True, concurrent_instances=True)"

# (driver, suite, clauses that must fail)
_CASES: list[tuple[type[object], str, list[str]]] = [
    (
        VersionIsLength,
        "log",
        [
            "test_versions_never_repeat_after_delete_and_rewrite",
            "test_stale_writer_conflicts_after_another_deleted_and_rewrote_the_log",
            "test_append_after_expiry_starts_a_new_log_at_a_new_version",
        ],
    ),
    (
        VersionIsLength,
        "history",
        [
            "test_stale_instance_saves_after_another_rewrote_the_session",
            "test_stale_instance_saves_after_the_session_expired_and_was_rewritten",
        ],
    ),
    (VersionIsLastDigest, "log", ["test_every_append_moves_the_log_to_a_new_version"]),
    (
        ConflictLeavesRecords,
        "log",
        [
            "test_append_at_a_wrong_version_conflicts_and_stores_nothing",
            "test_interleaved_conditional_appends_exactly_one_wins",
            "test_large_batches_append_atomically",
        ],
    ),
    (
        ChecksThenAppends,
        "log",
        [
            "test_concurrent_appends_on_one_instance_exactly_one_wins",
            "test_concurrent_appends_across_instances_exactly_one_wins",
        ],
    ),
    (TailReturnsOldest, "log", ["test_tail_returns_the_newest_digests_oldest_first"]),
    (ReadLastReturnsOldest, "log", ["test_read_last_returns_the_newest_records_oldest_first"]),
    (PayloadsAsText, "log", ["test_payloads_round_trip_byte_exact"]),
    (DeleteMatchesPrefix, "log", ["test_logs_with_related_keys_are_independent"]),
    (DeleteIgnoresVersion, "log", ["test_delete_if_version_removes_only_at_the_current_version"]),
    (DeleteChecksThenDeletes, "log", ["test_delete_if_version_racing_an_append_exactly_one_wins"]),
    (
        ListRepeatsBoundaryKey,
        "log",
        [
            "test_list_logs_pages_return_each_log_once_in_order",
            "test_list_logs_after_is_exclusive_and_need_not_be_a_key",
        ],
    ),
    (ListRepeatsBoundaryKey, "history", ["test_list_sessions_pages_through_this_source"]),
    (ListIgnoresAfter, "log", ["test_list_logs_pages_return_each_log_once_in_order"]),
    (ListIgnoresAfter, "history", ["test_list_sessions_pages_through_this_source"]),
    (ListMatchesPrefixAsGlob, "log", ["test_list_logs_prefix_is_literal"]),
    (ListKeepsOldSessionId, "log", ["test_list_logs_keeps_the_session_id_of_the_log_now_stored"]),
    (LengthCountsExpired, "log", ["test_expired_log_is_absent_for_every_method"]),
    (LengthCountsExpired, "history", ["test_count_messages_of_an_expired_session_is_zero"]),
    (ListsExpiredLogs, "log", ["test_expired_log_is_absent_for_every_method"]),
    (KeepsExpiredRecords, "log", ["test_append_after_expiry_starts_a_new_log_at_a_new_version"]),
    (TtlOnlyOnCreate, "log", ["test_append_with_ttl_refreshes_the_expiry"]),
    (PurgeRemovesLiveLogs, "log", ["test_purge_expired_removes_only_expired_logs"]),
    (PurgeRemovesLiveLogs, "history", ["test_purge_expired_spares_live_sessions"]),
    (PurgeCountsNothing, "log", ["test_purge_expired_removes_only_expired_logs"]),
    (
        LazyPoolChecksThenCreates,
        "log-pool",
        [
            "test_concurrent_appends_on_one_instance_exactly_one_wins",
            "test_concurrent_appends_across_instances_exactly_one_wins",
        ],
    ),
    (RawErrorOnNulLogKey, "log", ["test_nul_in_keys_is_refused_with_value_error_or_kept"]),
    (RawErrorOnNulObjectKey, "object", ["test_nul_in_keys_is_refused_with_value_error_or_kept"]),
    (EmptyAppendCreatesTheLog, "log", ["test_empty_append_is_refused_with_value_error"]),
    (TtlNoneKeepsTheExpiry, "log", ["test_expired_log_is_absent_for_every_method"]),
    (IndexesCompressedLogKeys, "log", ["test_logs_with_related_keys_are_independent"]),
    (IndexesCompressedObjectKeys, "object", ["test_keys_up_to_the_declared_length_are_stored_exactly"]),
    (PurgeLeavesRecords, "log", ["test_purge_expired_removes_only_expired_logs"]),
    (PurgeLeavesRecords, "history", ["test_purge_expired_spares_live_sessions"]),
    (
        ObjectChecksThenCreates,
        "object",
        [
            "test_concurrent_exclusive_creates_on_one_instance_exactly_one_wins",
            "test_concurrent_exclusive_creates_across_instances_exactly_one_wins",
        ],
    ),
    (
        ObjectComparesThenWrites,
        "object",
        [
            "test_concurrent_conditional_writes_on_one_instance_exactly_one_wins",
            "test_concurrent_conditional_writes_across_instances_exactly_one_wins",
        ],
    ),
    (
        ObjectVersionIsLength,
        "object",
        [
            "test_overwrite_with_different_content_gets_a_new_version",
            "test_if_version_replaces_only_the_current_version",
        ],
    ),
    (IfVersionOnMissingKeyWrites, "object", ["test_if_version_replaces_only_the_current_version"]),
    (DeleteIgnoresIfVersion, "object", ["test_delete_if_version_removes_only_the_current_version"]),
    (
        HeadCachesVersions,
        "object",
        ["test_put_get_head_and_delete_agree", "test_overwrite_with_different_content_gets_a_new_version"],
    ),
    (StripsTrailingNul, "object", ["test_payloads_round_trip_byte_exact"]),
    (TruncatesLargeObjects, "object", ["test_large_payloads_round_trip"]),
    (FoldsKeyCase, "object", ["test_keys_are_exact"]),
    (
        ListIgnoresAfterObjects,
        "object",
        [
            "test_list_after_is_exclusive_over_keys_and_prefixes",
            "test_paged_listing_equals_the_unpaged_listing",
            "test_list_matches_the_specification",
        ],
    ),
    (
        AfterFiltersKeysOnly,
        "object",
        ["test_list_after_is_exclusive_over_keys_and_prefixes", "test_paged_listing_equals_the_unpaged_listing"],
    ),
    (LimitCountsKeysOnly, "object", ["test_list_limit_counts_keys_and_prefixes_together"]),
    (ListsInUtf16Order, "object", ["test_list_orders_by_code_point"]),
    (ListMatchesPrefixAsRegex, "object", ["test_list_prefix_is_literal"]),
    (PrefixesWithoutDelimiter, "object", ["test_list_with_delimiter_folds_deeper_keys_into_common_prefixes"]),
    (DelimiterIsAlwaysSlash, "object", ["test_list_folds_on_any_delimiter"]),
    (SynchronousHead, "object", ["test_driver_implements_the_protocol"]),
    (PutInOrderLastFirst, "object", ["test_put_in_order_writes_in_order_and_stops_at_the_first_refusal"]),
    (PutInOrderGoesOnAfterRefusal, "object", ["test_put_in_order_writes_in_order_and_stops_at_the_first_refusal"]),
    (CutsLongKeys, "log", ["test_logs_with_related_keys_are_independent"]),
]

# Drivers that never answer or spin: the clause must fail with its time limit, naming itself
# and what it waited for (driver, suite, clause, words the failure must contain).
_HANGS: list[tuple[type[object], str, str, list[str]]] = [
    (
        TailNeverAnswers,
        "log",
        "test_append_creates_the_log_at_the_version_it_returns",
        [
            "test_append_creates_the_log_at_the_version_it_returns did not finish",
            "in tail: await asyncio.Event().wait()",
        ],
    ),
    (
        PutNeverAnswers,
        "object",
        "test_concurrent_exclusive_creates_on_one_instance_exactly_one_wins",
        [
            "did not finish within its time limit of 1 s",
            "8 other tasks of the clause",
            "in put: await asyncio.sleep(3600)",
        ],
    ),
    (
        LengthSpinsForever,
        "log",
        "test_append_creates_the_log_at_the_version_it_returns",
        [
            "did not finish within its time limit of 1 s",
            "without ever awaiting",
            "in length: time.sleep(0.001)",
            "stopped by pytest-timeout: Timeout (>3.0s)",  # time_limit + HARD_STOP_GRACE_S
        ],
    ),
]

_SUITES = {
    "log": (
        "LogDriverConformance",
        _LOG_CAPS,
        "log_driver_factory",
        "driver = {cls}(clock=clock)\n        return lambda: driver",
    ),
    "log-pool": (
        "LogDriverConformance",
        _LOG_CAPS,
        "log_driver_factory",
        "server = LogServer()\n        return lambda: {cls}(server)",
    ),
    "object": (
        "ObjectDriverConformance",
        _OBJECT_CAPS,
        "object_driver_factory",
        "driver = {cls}()\n        return lambda: driver",
    ),
    "history": (
        "HistoryProviderConformance",
        _HISTORY_CAPS,
        "history_factory",
        "driver = {cls}(clock=clock)\n        return lambda **options: LogHistoryProvider(driver, **options)",
    ),
}

_HEADER = f"""
import pytest
from agent_stores.core import LogHistoryProvider
from agent_stores.testing import *
from {__name__} import *
"""

_CLASS = """

class Test{name}({base}):
    capabilities = {caps}
    time_limit = {limit}
    fake_clock = {fake_clock}

    @pytest.fixture
    def {fixture}(self, clock):
        {factory}
"""

# These runs only need to see a broken driver fail: skip shrinking its counterexamples.
_FAIL_FAST = """
from hypothesis import Phase, settings

settings.register_profile("fail-fast", phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.load_profile("fail-fast")
"""


def _module(cases: Sequence[tuple[type[object], str]], limit: float) -> tuple[str, list[str]]:
    """Return the source of a test module with one class per (driver, suite), and the class names."""
    source = _HEADER
    names: list[str] = []
    for cls, suite in cases:
        base, caps, fixture, factory = _SUITES[suite]
        fake_clock = "clock=clock" in factory  # the factory builds its drivers on the clause's clock
        name = f"{cls.__name__}_{suite.replace('-', '_')}"
        names.append(name)
        source += _CLASS.format(
            name=name,
            base=base,
            caps=caps,
            limit=limit,
            fake_clock=fake_clock,
            fixture=fixture,
            factory=factory.format(cls=cls.__name__),
        )
    return source, names


def _run(pytester: pytest.Pytester, node_ids: list[str], source: str) -> dict[str, tuple[str, str, str]]:
    """Run ``node_ids`` of ``source``; return ``{class::clause: (outcome, phase, report)}``."""
    pytester.makeconftest(_FAIL_FAST)
    pytester.makepyfile(test_broken_drivers_run=source)
    recorder = pytester.inline_run(
        *(f"test_broken_drivers_run.py::{node}" for node in node_ids),
        "-p",
        "no:cacheprovider",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
        "-W",
        "ignore::pytest.PytestUnraisableExceptionWarning",
    )
    outcomes: dict[str, tuple[str, str, str]] = {}
    for report in recorder.getreports("pytest_runtest_logreport"):
        node = "::".join(report.nodeid.split("::")[-2:])
        if report.failed or node not in outcomes:
            outcomes[node] = (report.outcome, report.when or "", report.longreprtext)
    return outcomes


def test_broken_drivers_fail_the_clauses_written_for_their_bugs(pytester: pytest.Pytester) -> None:
    source, names = _module([(cls, suite) for cls, suite, _ in _CASES], limit=60)
    nodes = [f"Test{name}::{clause}" for name, (_, _, clauses) in zip(names, _CASES, strict=True) for clause in clauses]
    outcomes = _run(pytester, nodes, source)
    missing = sorted(set(nodes) - set(outcomes))
    assert not missing, f"clauses that did not run: {missing}"
    survived = sorted(node for node in nodes if outcomes[node][0] != "failed")
    assert not survived, f"broken drivers passed the clauses written for their bugs: {survived}"
    not_in_call = {node: outcomes[node][2][-600:] for node in nodes if outcomes[node][1] != "call"}
    assert not not_in_call, f"clauses failed outside their call (a broken setup, not the bug): {not_in_call}"


def test_drivers_that_hang_fail_with_the_time_limit(pytester: pytest.Pytester) -> None:
    source, names = _module([(cls, suite) for cls, suite, _, _ in _HANGS], limit=1)
    nodes = [f"Test{name}::{clause}" for name, (_, _, clause, _) in zip(names, _HANGS, strict=True)]
    started = time.monotonic()
    outcomes = _run(pytester, nodes, source)
    elapsed = time.monotonic() - started
    for node, (_, _, _, words) in zip(nodes, _HANGS, strict=True):
        outcome, when, report = outcomes[node]
        assert (outcome, when) == ("failed", "call"), f"{node}: {outcome} in {when}:\n{report[-2000:]}"
        for word in words:
            assert word in report, f"{node}: the failure does not say {word!r}:\n{report[-3000:]}"
    # Two clauses cancelled at 1 s, one interrupted by pytest-timeout 2 s after its limit.
    assert elapsed < 20, f"the hanging clauses took {elapsed:.1f} s"


def test_a_racer_failing_before_the_start_fails_the_race_with_its_error(pytester: pytest.Pytester) -> None:
    """A race's racer whose warm-up raises breaks the start line: the clause names the error, not its time limit."""
    source, names = _module([(ThirdTailFails, "log")], limit=30)
    node = f"Test{names[0]}::test_concurrent_appends_across_instances_exactly_one_wins"
    started = time.monotonic()
    outcome, when, report = _run(pytester, [node], source)[node]
    elapsed = time.monotonic() - started
    assert (outcome, when) == ("failed", "call"), f"{outcome} in {when}:\n{report[-2000:]}"
    assert "the connection was dropped" in report, report[-3000:]
    assert "BrokenBarrierError" in report, report[-3000:]
    assert "did not finish" not in report, report[-3000:]
    assert elapsed < 20, f"the race took {elapsed:.1f} s to fail"


def test_a_failure_says_what_the_clause_means_and_what_it_relies_on(pytester: pytest.Pytester) -> None:
    """A driver reusing versions fails a log clause and a history clause: each says its contract and what it needs."""
    source, names = _module([(VersionIsLength, "log"), (VersionIsLength, "history")], limit=60)
    log_node = f"Test{names[0]}::test_stale_writer_conflicts_after_another_deleted_and_rewrote_the_log"
    history_node = f"Test{names[1]}::test_stale_instance_saves_after_another_rewrote_the_session"
    outcomes = _run(pytester, [log_node, history_node], source)
    log_report, history_report = outcomes[log_node][2], outcomes[history_node][2]
    assert outcomes[log_node][0] == outcomes[history_node][0] == "failed"
    for expected in (
        "an append at the version a writer read before another deleted and rewrote the log did not raise",
        "test_stale_writer_conflicts_after_another_deleted_and_rewrote_the_log: Instance A reads the end;",
        "relies on the following",
        "(test_versions_never_repeat_after_delete_and_rewrite)",
    ):
        assert expected in log_report, f"the log clause's failure does not say {expected!r}:\n{log_report[-3000:]}"
    for expected in (
        "not B's messages followed by all of A's",
        "test_stale_instance_saves_after_another_rewrote_the_session: Instance A saves;",
        "Failure means A decided what to store",
        "(LogDriverConformance.test_versions_never_repeat_after_delete_and_rewrite)",
        "run LogDriverConformance on the driver first",
    ):
        assert expected in history_report, f"the history clause's failure does not say {expected!r}:\n{history_report}"
