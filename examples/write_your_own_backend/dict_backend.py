"""A complete agent-stores backend in one file: two drivers over a toy server, and the backend ``open_stores`` finds.

The "server" here is a pair of Python dicts, so the example runs anywhere; a real backend
keeps the same shape and replaces each dict access with a call to its client. The rules of
the drivers are those of ``agent_stores.core.drivers``; the core's adapters turn them into a
``HistoryProvider``, an ``AgentFileStore`` and a ``SessionStore``.

Each operation below runs without awaiting between its check and its write, so it is atomic
in the event loop. A real driver gets the same guarantee from its server: a transaction, a
conditional write (``If-None-Match`` / ``If-Match``) or a server-side script.
"""

# The driver methods implement protocols whose methods are documented in agent_stores.core.drivers.
# ruff: noqa: D102

from __future__ import annotations

import bisect
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agent_stores.core import (
    Listing,
    LogHistoryProvider,
    LogInfo,
    LogRecord,
    LogTail,
    LogVersion,
    ObjectAgentFileStore,
    ObjectSessionStore,
    StoreConflictError,
    StoredObject,
)


@dataclass
class _Log:
    session_id: str
    version: int
    records: list[LogRecord] = field(default_factory=lambda: [])
    expires_at: float | None = None


@dataclass
class DictServer:
    """The backing data every driver "connects" to: what a database server is to its clients."""

    logs: dict[str, _Log] = field(default_factory=lambda: {})
    objects: dict[str, StoredObject] = field(default_factory=lambda: {})
    sorted_keys: list[str] = field(default_factory=lambda: [])
    # One counter for every version ever issued: a version never comes back, even after delete.
    versions: itertools.count[int] = field(default_factory=lambda: itertools.count(1))


class DictLogDriver:
    """A ``LogDriver``: one append-only log per key, conditional appends, expiry.

    ``clock`` (seconds since the epoch) decides expiry; the conformance suite passes a fake one.
    """

    def __init__(self, server: DictServer, *, clock: Callable[[], float] = time.time) -> None:
        self.server = server
        self.clock = clock

    def _live(self, key: str) -> _Log | None:
        log = self.server.logs.get(key)
        if log is not None and log.expires_at is not None and log.expires_at <= self.clock():
            return None  # expired: absent for every method
        return log

    async def tail(self, key: str, count: int) -> LogTail:
        log = self._live(key)
        if log is None:
            return LogTail(0, [], None)
        digests = [r.digest for r in log.records[len(log.records) - min(count, len(log.records)) :]]
        return LogTail(len(log.records), digests, log.version)

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
            raise ValueError("append needs at least one record")
        log = self._live(key)
        if (None if log is None else log.version) != expected_version:
            raise StoreConflictError(f"log {key!r} is not at version {expected_version!r}")
        if log is None:  # a new log, or one that expired: start over
            log = self.server.logs[key] = _Log(session_id, 0)
        log.records.extend(records)
        log.version = next(self.server.versions)
        log.expires_at = None if ttl is None else self.clock() + ttl
        return log.version

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        log = self._live(key)
        records = [] if log is None else log.records
        start = 0 if last is None else max(0, len(records) - last)
        return [r.payload for r in records[start:]]

    async def length(self, key: str) -> int:
        log = self._live(key)
        return 0 if log is None else len(log.records)

    async def delete(self, key: str) -> bool:
        existed = self._live(key) is not None
        self.server.logs.pop(key, None)
        return existed

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        keys = sorted(k for k in self.server.logs if k.startswith(prefix) and (after is None or k > after))
        live = [(k, log) for k in keys if (log := self._live(k)) is not None]
        return [LogInfo(k, log.session_id) for k, log in live[:limit]]

    async def purge_expired(self) -> int:
        expired = [k for k in self.server.logs if self._live(k) is None]
        for key in expired:
            del self.server.logs[key]
        return len(expired)

    async def aclose(self) -> None:
        return None


class DictObjectDriver:
    """An ``ObjectDriver``: key -> bytes with exclusive create, compare-and-set, ordered paged listings."""

    def __init__(self, server: DictServer) -> None:
        self.server = server

    async def get(self, key: str) -> StoredObject | None:
        return self.server.objects.get(key)

    async def head(self, key: str) -> str | None:
        stored = self.server.objects.get(key)
        return None if stored is None else stored.version

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        current = self.server.objects.get(key)
        if if_absent and current is not None:
            raise StoreConflictError(f"object {key!r} exists")
        if if_version is not None and (current is None or current.version != if_version):
            raise StoreConflictError(f"object {key!r} is not at version {if_version!r}")
        if current is None:
            bisect.insort(self.server.sorted_keys, key)
        version = str(next(self.server.versions))
        self.server.objects[key] = StoredObject(bytes(data), version)
        return version

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        current = self.server.objects.get(key)
        if if_version is not None and (current is None or current.version != if_version):
            raise StoreConflictError(f"object {key!r} is not at version {if_version!r}")
        if current is None:
            return False
        del self.server.objects[key]
        self.server.sorted_keys.remove(key)
        return True

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        entries: dict[str, bool] = {}  # name -> is a common prefix; keys are sorted by code point
        for key in self.server.sorted_keys[bisect.bisect_left(self.server.sorted_keys, prefix) :]:
            if not key.startswith(prefix):
                break
            rest = key[len(prefix) :]
            if delimiter and delimiter in rest:
                entries[prefix + rest[: rest.index(delimiter) + len(delimiter)]] = True
            else:
                entries[key] = False
        names = sorted(n for n in entries if after is None or n > after)[:limit]
        return Listing([n for n in names if not entries[n]], [n for n in names if entries[n]])

    async def aclose(self) -> None:
        return None


class DictBackend:
    """What ``open_stores("dict://")`` returns: the three stores over one server."""

    def __init__(self, url: str = "dict://", **options: Any) -> None:
        if url.rstrip("/") != "dict:" or options:
            raise ValueError(f"dict URLs take no host, path or options: {url!r} {sorted(options)}")
        server = DictServer()
        self.log_driver, self.object_driver = DictLogDriver(server), DictObjectDriver(server)

    def history_provider(self, *, source_id: str, **options: Any) -> LogHistoryProvider:
        return LogHistoryProvider(self.log_driver, source_id=source_id, **options)

    def file_store(self, **options: Any) -> ObjectAgentFileStore:
        return ObjectAgentFileStore(self.object_driver, **options)

    def session_store(self, **options: Any) -> ObjectSessionStore:
        return ObjectSessionStore(self.object_driver, **options)

    async def aclose(self) -> None:
        return None
