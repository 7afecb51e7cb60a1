"""In-process drivers: dict-backed, for tests and for running the core end to end without a server.

One driver instance is one store; every adapter built on the same instance sees the same data.
Each operation completes without awaiting in between, so it is atomic within the event loop.
"""

from __future__ import annotations

import bisect
import itertools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .drivers import Listing, LogInfo, LogRecord, LogTail, LogVersion, OrderedPut, StoredObject, check_distinct_keys
from .errors import StoreConflictError, StoreNotFoundError
from .files import ObjectAgentFileStore
from .history import LogHistoryProvider
from .lifecycle import (
    MUST_EXIST,
    adapter_capabilities,
    merge_capabilities,
    share_decode_cache,
    take_decode_cache,
)
from .redaction import redact_url
from .sessions import ObjectSessionStore

__all__ = ["MemoryBackend", "MemoryLogDriver", "MemoryObjectDriver"]


@dataclass
class _Log:
    session_id: str
    version: int
    records: list[LogRecord] = field(default_factory=lambda: [])
    expires_at: float | None = None


class MemoryLogDriver:
    """A :class:`~agent_stores.core.drivers.LogDriver` in a dict; versions come from one counter."""

    def __init__(self, *, clock: Callable[[], float] = time.time) -> None:
        self._logs: dict[str, _Log] = {}
        self._versions = itertools.count(1)
        self._clock = clock

    def _live(self, key: str) -> _Log | None:
        log = self._logs.get(key)
        if log is not None and log.expires_at is not None and log.expires_at <= self._clock():
            return None
        return log

    async def tail(self, key: str, count: int) -> LogTail:
        log = self._live(key)
        if log is None:
            return LogTail(0, [], None)
        records = log.records
        return LogTail(len(records), [r.digest for r in records[max(0, len(records) - count) :]], log.version)

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
        current = None if log is None else log.version
        if current != expected_version:
            raise StoreConflictError(f"log {key!r} is at version {current!r}, expected {expected_version!r}")
        if log is None:
            log = self._logs[key] = _Log(session_id, 0)
        log.records.extend(records)
        log.version = next(self._versions)
        log.expires_at = None if ttl is None else self._clock() + ttl
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
        live = self._live(key) is not None
        self._logs.pop(key, None)
        return live

    async def delete_if_version(self, key: str, version: LogVersion) -> bool:
        log = self._live(key)
        if log is None or log.version != version:
            raise StoreConflictError(f"log {key!r} is not at version {version!r}")
        del self._logs[key]
        return True

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        keys = sorted(k for k in self._logs if k.startswith(prefix) and (after is None or k > after))
        live = ((k, self._live(k)) for k in keys)
        return [LogInfo(k, log.session_id) for k, log in live if log is not None][:limit]

    async def purge_expired(self) -> int:
        expired = [k for k in self._logs if self._live(k) is None]
        for key in expired:
            del self._logs[key]
        return len(expired)

    async def aclose(self) -> None:
        return None


class MemoryObjectDriver:
    """A :class:`~agent_stores.core.drivers.ObjectDriver` in a sorted dict."""

    def __init__(self) -> None:
        self._objects: dict[str, StoredObject] = {}
        self._sorted: list[str] = []
        self._versions = itertools.count(1)

    async def get(self, key: str) -> StoredObject | None:
        return self._objects.get(key)

    async def head(self, key: str) -> str | None:
        stored = self._objects.get(key)
        return None if stored is None else stored.version

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        current = self._objects.get(key)
        if if_absent and current is not None:
            raise StoreConflictError(f"object {key!r} exists")
        if if_version is not None and (current is None or current.version != if_version):
            raise StoreConflictError(f"object {key!r} is not at version {if_version!r}")
        version = str(next(self._versions))
        if current is None:
            bisect.insort(self._sorted, key)
        self._objects[key] = StoredObject(bytes(data), version)
        return version

    async def put_in_order(self, items: Sequence[OrderedPut]) -> list[str]:
        """Store each item in order, stopping at the first refused ``if_absent`` (see ``OrderedPutDriver``)."""
        check_distinct_keys(items)
        return [await self.put(item.key, item.data, if_absent=item.if_absent) for item in items]

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        current = self._objects.get(key)
        if if_version is not None and (current is None or current.version != if_version):
            raise StoreConflictError(f"object {key!r} is not at version {if_version!r}")
        if current is None:
            return False
        del self._objects[key]
        self._sorted.pop(bisect.bisect_left(self._sorted, key))
        return True

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        if limit is not None and limit <= 0:
            raise ValueError(f"limit must be positive, got {limit!r}")
        keys: list[str] = []
        prefixes: list[str] = []
        start = prefix if after is None else max(prefix, after)
        for key in self._sorted[bisect.bisect_left(self._sorted, start) :]:
            if not key.startswith(prefix):
                break
            rest = key[len(prefix) :]
            cut = rest.find(delimiter) if delimiter else -1
            if cut >= 0:
                common = prefix + rest[: cut + len(delimiter or "")]
                if (after is not None and common <= after) or (prefixes and prefixes[-1] == common):
                    continue
                prefixes.append(common)
            elif after is None or key > after:
                keys.append(key)
            else:
                continue
            if limit is not None and len(keys) + len(prefixes) >= limit:
                break
        return Listing(keys, prefixes)

    async def aclose(self) -> None:
        return None


class MemoryBackend:
    """The ``memory://`` backend of :func:`~agent_stores.core.open_stores`: all three stores in this process."""

    def __init__(self, url: str = "memory://", **options: Any) -> None:
        url, decode_cache = take_decode_cache(url, options)
        if url.rstrip("/") != "memory:":
            raise ValueError(f"memory URLs take no host or path: {redact_url(url)!r}")
        if options.pop(MUST_EXIST, False):
            raise StoreNotFoundError("memory:// opens a new, empty store in this process: nothing to read")
        if options:
            raise ValueError(f"unknown memory backend options: {sorted(options)}")
        self.decode_cache = decode_cache
        self._log = MemoryLogDriver()
        self._objects = MemoryObjectDriver()

    def object_driver(self) -> MemoryObjectDriver:
        """This backend's object driver."""
        return self._objects

    def log_driver(self) -> MemoryLogDriver:
        """This backend's log driver."""
        return self._log

    def history_provider(self, *, source_id: str, **options: Any) -> LogHistoryProvider:
        """Return a provider over this backend's log driver."""
        share_decode_cache(options, self.decode_cache)
        return LogHistoryProvider(self._log, source_id=source_id, **options)

    def file_store(self, **options: Any) -> ObjectAgentFileStore:
        """Return a file store over this backend's object driver."""
        return ObjectAgentFileStore(self._objects, **options)

    def session_store(self, **options: Any) -> ObjectSessionStore:
        """Return a session store over this backend's object driver."""
        return ObjectSessionStore(self._objects, **options)

    def conformance_capabilities(self) -> dict[str, dict[str, Any]]:
        """What ``agent-stores check`` declares for these stores: the core's, in one process only."""
        return merge_capabilities(
            adapter_capabilities(),
            {"history": {"multi_process": False}},
        )

    async def aclose(self) -> None:
        """Nothing to close."""
        return None
