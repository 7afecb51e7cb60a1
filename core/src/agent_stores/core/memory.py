"""In-process drivers: dict-backed, for tests and for running the core end to end without a server.

One driver instance is one store; every adapter built on the same instance sees the same data.
Each operation completes without awaiting in between, so it is atomic within the event loop.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence

from .drivers import Listing, LogRecord, LogTail, StoredObject
from .errors import StoreConflictError

__all__ = ["MemoryLogDriver", "MemoryObjectDriver"]


class MemoryLogDriver:
    """A :class:`~agent_stores.core.drivers.LogDriver` in a dict of lists."""

    def __init__(self) -> None:
        self._logs: dict[str, list[LogRecord]] = {}

    async def tail(self, key: str, count: int) -> LogTail:
        log = self._logs.get(key, [])
        return LogTail(len(log), [r.digest for r in log[max(0, len(log) - count) :]])

    async def append(self, key: str, records: Sequence[LogRecord], *, expected_length: int) -> None:
        log = self._logs.setdefault(key, [])
        if len(log) != expected_length:
            raise StoreConflictError(f"log {key!r} has {len(log)} records, expected {expected_length}")
        log.extend(records)

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        log = self._logs.get(key, [])
        start = 0 if last is None else max(0, len(log) - last)
        return [r.payload for r in log[start:]]

    async def length(self, key: str) -> int:
        return len(self._logs.get(key, []))

    async def delete(self, key: str) -> bool:
        return bool(self._logs.pop(key, None))

    async def list_keys(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[str]:
        keys = sorted(
            k for k, log in self._logs.items() if log and k.startswith(prefix) and (after is None or k > after)
        )
        return keys[:limit]

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

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        current = self._objects.get(key)
        if if_version is not None and (current is None or current.version != if_version):
            raise StoreConflictError(f"object {key!r} is not at version {if_version!r}")
        if current is None:
            return False
        del self._objects[key]
        self._sorted.pop(bisect.bisect_left(self._sorted, key))
        return True

    async def list(self, prefix: str, *, delimiter: str | None = "/") -> Listing:
        keys: list[str] = []
        prefixes: list[str] = []
        for key in self._sorted[bisect.bisect_left(self._sorted, prefix) :]:
            if not key.startswith(prefix):
                break
            rest = key[len(prefix) :]
            cut = rest.find(delimiter) if delimiter else -1
            if cut >= 0:
                common = prefix + rest[: cut + len(delimiter or "")]
                if not prefixes or prefixes[-1] != common:
                    prefixes.append(common)
            else:
                keys.append(key)
        return Listing(keys, prefixes)

    async def aclose(self) -> None:
        return None
