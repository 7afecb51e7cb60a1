"""Drivers seen from under a key prefix: ``PrefixedObjectDriver``, ``PrefixedLogDriver``, :func:`within`."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import cast

from .drivers import (
    CreateLog,
    Listing,
    LogDriver,
    LogInfo,
    LogRecord,
    LogTail,
    LogVersion,
    ObjectDriver,
    OrderedPut,
    ReadMany,
    StoredObject,
    conditional_delete,
    create_of,
    deletes_conditionally,
    offered,
    put_in_order,
    read_many_of,
)

__all__ = ["PrefixedLogDriver", "PrefixedObjectDriver", "get_many", "within"]


async def get_many(driver: ObjectDriver, keys: Sequence[str]) -> list[StoredObject | None]:
    """``get`` of each of ``keys``, in order: one ``get_many`` of ``driver`` when it offers one, else its gets together.

    What a driver that wraps another offers as its own ``get_many``, so a batched read
    (checkpoint listings) reaches the driver underneath as one batch.
    """
    batch = getattr(driver, "get_many", None)
    if batch is not None:
        return list(cast(Sequence[StoredObject | None], await batch(keys)))
    return list(await asyncio.gather(*(driver.get(key) for key in keys)))


class PrefixedObjectDriver:
    """An :class:`~agent_stores.core.drivers.ObjectDriver` whose keys all live under ``prefix`` of another.

    Every key is ``prefix + key`` on the underlying driver, and listings come back without the
    prefix, so a store built on the view never sees, lists or writes a key outside it (an S3
    location's prefix, one application's corner of a shared bucket). The underlying driver is
    borrowed: :meth:`aclose` leaves it open.

    Args:
        driver: The driver to view.
        prefix: ``""`` or a prefix ending with ``/``.

    Raises:
        ValueError: ``prefix`` is neither empty nor ends with ``/``.
    """

    def __init__(self, driver: ObjectDriver, prefix: str) -> None:
        if prefix and not prefix.endswith("/"):
            raise ValueError(f"a driver prefix is empty or ends with '/': {prefix!r}")
        self.driver = driver
        self.prefix = prefix

    async def get(self, key: str) -> StoredObject | None:
        """Return the object under ``prefix + key``."""
        return await self.driver.get(self.prefix + key)

    async def get_many(self, keys: Sequence[str]) -> list[StoredObject | None]:
        """Return the objects under ``prefix + key`` of each of ``keys``, in order, read as one batch."""
        return await get_many(self.driver, [self.prefix + key for key in keys])

    async def head(self, key: str) -> str | None:
        """Return the version of ``prefix + key``."""
        return await self.driver.head(self.prefix + key)

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        """Store ``data`` under ``prefix + key`` (conditions as the underlying driver)."""
        return await self.driver.put(self.prefix + key, data, if_absent=if_absent, if_version=if_version)

    async def put_in_order(self, items: Sequence[OrderedPut]) -> list[str]:
        """Store each item under ``prefix + key``, in order (see ``OrderedPutDriver``).

        One round trip where the underlying driver writes in order, else one put after the other.
        """
        prefix = self.prefix
        return await put_in_order(self.driver, [OrderedPut(prefix + i.key, i.data, i.if_absent) for i in items])

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        """Remove ``prefix + key``."""
        return await self.driver.delete(self.prefix + key, if_version=if_version)

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        """List under ``self.prefix + prefix``; keys and common prefixes come back relative to the view."""
        cut = len(self.prefix)
        listing = await self.driver.list(
            self.prefix + prefix,
            delimiter=delimiter,
            after=None if after is None else self.prefix + after,
            limit=limit,
        )
        return Listing([k[cut:] for k in listing.keys], [p[cut:] for p in listing.prefixes])

    async def aclose(self) -> None:
        """Nothing to release: the underlying driver is borrowed."""
        return None

    def __repr__(self) -> str:
        return f"PrefixedObjectDriver({self.driver!r}, prefix={self.prefix!r})"


class PrefixedLogDriver:
    """A :class:`~agent_stores.core.drivers.LogDriver` whose keys all live under ``prefix`` of another.

    Every log key is ``prefix + key`` on the underlying driver, and listings come back without
    the prefix, so a history provider built on the view never sees, lists or writes a log
    outside it (a tenant's root). ``create`` and ``read_many`` exist where the underlying driver
    offers them. The underlying driver is borrowed: :meth:`aclose` leaves it open.

    Args:
        driver: The driver to view.
        prefix: ``""`` or a prefix ending with ``/``.

    Raises:
        ValueError: ``prefix`` is neither empty nor ends with ``/``.
    """

    def __init__(self, driver: LogDriver, prefix: str) -> None:
        if prefix and not prefix.endswith("/"):
            raise ValueError(f"a driver prefix is empty or ends with '/': {prefix!r}")
        self.driver = driver
        self.prefix = prefix

    async def tail(self, key: str, count: int) -> LogTail:
        """The tail of ``prefix + key``."""
        return await self.driver.tail(self.prefix + key, count)

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        """Append to ``prefix + key`` (conditions as the underlying driver)."""
        return await self.driver.append(
            self.prefix + key, records, expected_version=expected_version, session_id=session_id, ttl=ttl
        )

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        """Read ``prefix + key``."""
        return await self.driver.read(self.prefix + key, last=last)

    @property
    def create(self) -> CreateLog:
        """``create`` of ``prefix + key``, where the underlying driver has it.

        Raises:
            AttributeError: The underlying driver has no ``create``.
        """
        offered(create_of(self.driver), "create")
        return self._create

    async def _create(
        self, key: str, records: Sequence[LogRecord], *, session_id: str, ttl: float | None = None
    ) -> LogVersion | None:
        create = offered(create_of(self.driver), "create")
        return await create(self.prefix + key, records, session_id=session_id, ttl=ttl)

    @property
    def read_many(self) -> ReadMany:
        """``read_many`` of ``prefix + key`` of each key, where the underlying driver has it.

        Raises:
            AttributeError: The underlying driver has no ``read_many``.
        """
        offered(read_many_of(self.driver), "read_many")
        return self._read_many

    async def _read_many(self, keys: Sequence[str]) -> list[list[bytes] | None]:
        read_many = offered(read_many_of(self.driver), "read_many")
        return await read_many([self.prefix + key for key in keys])

    async def length(self, key: str) -> int:
        """The length of ``prefix + key``."""
        return await self.driver.length(self.prefix + key)

    async def delete(self, key: str) -> bool:
        """Delete ``prefix + key``."""
        return await self.driver.delete(self.prefix + key)

    @property
    def deletes_conditionally(self) -> bool:
        """Whether :meth:`delete_if_version` works: the underlying driver offers it."""
        return deletes_conditionally(self.driver)

    async def delete_if_version(self, key: str, version: LogVersion) -> bool:
        """Delete ``prefix + key`` only while it is at ``version`` (see ``ConditionalLogDelete``).

        Raises:
            StoreConflictError: The log is absent or at another version; nothing was removed.
            NotImplementedError: The underlying driver cannot delete conditionally.
        """
        return await conditional_delete(self.driver).delete_if_version(self.prefix + key, version)

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        """List under ``self.prefix + prefix``; keys come back relative to the view."""
        cut = len(self.prefix)
        logs = await self.driver.list_logs(
            self.prefix + prefix, after=None if after is None else self.prefix + after, limit=limit
        )
        return [LogInfo(log.key[cut:], log.session_id) for log in logs]

    async def purge_expired(self) -> int:
        """Remove every expired log of the underlying driver (expiry is not per prefix)."""
        return await self.driver.purge_expired()

    async def aclose(self) -> None:
        """Nothing to release: the underlying driver is borrowed."""
        return None

    def __repr__(self) -> str:
        return f"PrefixedLogDriver({self.driver!r}, prefix={self.prefix!r})"


def within(driver: LogDriver, prefix: str) -> LogDriver:
    """Return ``driver`` seen from under ``prefix``: its own view when it offers one, else a :class:`PrefixedLogDriver`.

    A driver that keeps logs somewhere a key prefix does not reach (the object-store log keeps
    each tenant's history in that tenant's folder) offers ``within(prefix)`` itself.
    """
    if not prefix:
        return driver
    own = getattr(driver, "within", None)
    if callable(own):
        return cast(LogDriver, own(prefix))
    return PrefixedLogDriver(driver, prefix)
