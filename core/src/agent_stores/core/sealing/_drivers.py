"""Sealing drivers: an object driver and a log driver that seal every value before the driver underneath sees it."""

from __future__ import annotations

from collections.abc import Sequence

from ..cache import BoundedCache
from ..drivers import (
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
from ..errors import CorruptRecordError
from ..keys import split_tenant
from ..prefixed import get_many, within
from ._format import DataKey, digest_key_id, is_sealed, is_sealed_digest, key_suffix, sealed_key_id, split_header
from ._keys import RESERVED, DataKeys
from ._scopes import log_scope_of, object_scope_of

__all__ = ["SealedLogDriver", "SealedObjectDriver", "scope_of"]

_POSITIONS = 4096  # logs whose length after the last append or tail each driver remembers
#: Default bytes of records a log driver remembers having opened (sealed and plain bytes both count).
OPENED_BYTES = 8 << 20
_OPENED_ENTRY = 160  # what an entry costs beyond its two byte strings (tuple, dictionary slot, key)

#: A record opened before: the log it was read from, its data key's id, its plaintext and position.
_Opened = tuple[str, str, bytes, int]


def _opened_cost(payload: bytes, opened: _Opened) -> int:
    return len(payload) + len(opened[2]) + _OPENED_ENTRY


def scope_of(key: str) -> str:
    """The scope whose data keys seal the object ``key`` (log keys: :func:`~._scopes.log_scope_of`)."""
    return object_scope_of(key)


def _refuse_reserved(key: str) -> None:
    if split_tenant(key)[1].startswith(RESERVED):
        raise ValueError(f"{RESERVED!r} is reserved for the store's data keys: {key!r}")


class SealedObjectDriver:
    """An :class:`~agent_stores.core.drivers.ObjectDriver` that seals values (AES-256-GCM) on the way to another.

    Each value is sealed with the current data key of its scope (the tenant of its key) and
    bound to its key: a value copied under another key fails with
    :class:`~agent_stores.core.errors.CorruptRecordError`. Plaintext values stored before
    sealing was switched on read as they are while ``plaintext_reads`` (the default).
    Versions, listings and deletes pass through. The driver underneath is borrowed.

    Args:
        driver: The driver that stores the sealed bytes.
        keys: The store's data keys.
        plaintext_reads: Read values that are not sealed as plaintext (else they are corrupt).
    """

    def __init__(self, driver: ObjectDriver, keys: DataKeys, *, plaintext_reads: bool = True) -> None:
        self.driver = driver
        self.keys = keys
        self.plaintext_reads = plaintext_reads

    async def _open(self, key: str, data: bytes) -> bytes:
        where = f"object {key!r}"
        if not is_sealed(data):
            if self.plaintext_reads or (key.endswith("/") and not data):  # a directory marker
                return data
            raise CorruptRecordError(f"{where} is not sealed")
        data_key = await self.keys.get(scope_of(key), sealed_key_id(data, where=where), where=where)
        plain, position = data_key.open(key, data, where=where)
        if position is not None:
            raise CorruptRecordError(f"{where} holds a sealed log record, not an object")
        return plain

    async def get(self, key: str) -> StoredObject | None:
        """Return the object with its value unsealed."""
        stored = await self.driver.get(key)
        if stored is None:
            return None
        return StoredObject(await self._open(key, stored.data), stored.version)

    async def get_many(self, keys: Sequence[str]) -> list[StoredObject | None]:
        """Return the objects of ``keys``, in order, values unsealed, read as one batch of the driver underneath."""
        stored = await get_many(self.driver, keys)
        return [
            None if item is None else StoredObject(await self._open(key, item.data), item.version)
            for key, item in zip(keys, stored, strict=True)
        ]

    async def head(self, key: str) -> str | None:
        """Return the object's version."""
        return await self.driver.head(key)

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        """Seal ``data`` and store it (conditions as the driver underneath); an empty directory marker stays empty.

        Raises:
            ValueError: ``key`` lies in a scope's reserved ``sealing/`` folder.
        """
        _refuse_reserved(key)
        if key.endswith("/") and not data:  # a directory marker holds no bytes, sealed or not
            return await self.driver.put(key, data, if_absent=if_absent, if_version=if_version)
        sealed = (await self.keys.current(scope_of(key))).seal(key, data)
        return await self.driver.put(key, sealed, if_absent=if_absent, if_version=if_version)

    async def put_in_order(self, items: Sequence[OrderedPut]) -> list[str]:
        """Seal each item as :meth:`put` does and store them in order (see ``OrderedPutDriver``).

        One round trip where the driver underneath writes in order, else one put after the other.

        Raises:
            ValueError: A key lies in a scope's reserved ``sealing/`` folder; nothing was written.
        """
        for item in items:
            _refuse_reserved(item.key)
        return await put_in_order(self.driver, [await self._sealed(item) for item in items])

    async def _sealed(self, item: OrderedPut) -> OrderedPut:
        if item.key.endswith("/") and not item.data:  # a directory marker holds no bytes, sealed or not
            return item
        return item._replace(data=(await self.keys.current(scope_of(item.key))).seal(item.key, item.data))

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        """Remove ``key``.

        Raises:
            ValueError: ``key`` lies in a scope's reserved ``sealing/`` folder.
        """
        _refuse_reserved(key)
        return await self.driver.delete(key, if_version=if_version)

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        """List as the driver underneath does."""
        return await self.driver.list(prefix, delimiter=delimiter, after=after, limit=limit)

    async def aclose(self) -> None:
        """Nothing to release: the driver underneath is borrowed."""
        return None

    def __repr__(self) -> str:
        return f"SealedObjectDriver({self.driver!r})"


class SealedLogDriver:
    """A :class:`~agent_stores.core.drivers.LogDriver` that seals records on the way to another.

    Each record is sealed with the current data key of its scope and bound to its log key and
    position; a load checks that the positions it reads follow each other (from 0 for a whole
    log), so a record copied to another log, tenant or position, or records swapped, are
    :class:`~agent_stores.core.errors.CorruptRecordError`. De-duplication digests are sealed
    deterministically (AES-SIV) under the same key, so equal messages of two tenants or two
    sessions are not linkable in the store, and :meth:`tail` returns them as they were given.
    Where the driver underneath offers ``create`` and ``read_many`` (the object-store log), this
    driver offers them too, sealing and opening as :meth:`append` and :meth:`read` do; where it
    does not, neither attribute exists. The driver underneath is borrowed.

    Args:
        driver: The driver that stores the sealed records.
        keys: The store's data keys.
        plaintext_reads: Read records that are not sealed as plaintext (else they are corrupt).
        opened_bytes: Most bytes of records remembered opened (their sealed and plain bytes), so
            that reading them again decrypts nothing; ``0`` remembers none.
    """

    def __init__(
        self,
        driver: LogDriver,
        keys: DataKeys,
        *,
        plaintext_reads: bool = True,
        opened_bytes: int = OPENED_BYTES,
        root: str = "",
        positions: BoundedCache[str, tuple[LogVersion, int]] | None = None,
        opened: BoundedCache[bytes, _Opened] | None = None,
        scopes: dict[str, str] | None = None,
    ) -> None:
        self.driver = driver
        self.keys = keys
        self.plaintext_reads = plaintext_reads
        self.root = root
        self._positions: BoundedCache[str, tuple[LogVersion, int]] = (
            positions if positions is not None else BoundedCache(max_entries=_POSITIONS)
        )
        self._opened: BoundedCache[bytes, _Opened] = (
            opened if opened is not None else BoundedCache(max_cost=opened_bytes, cost=_opened_cost)
        )
        #: The scope of each log appended to lately (log_scope_of, worked out once per log, not per append).
        self._scopes: dict[str, str] = scopes if scopes is not None else {}

    @property
    def opened_bytes(self) -> int | None:
        """Most bytes of records remembered opened (shared by every view :meth:`within` gives)."""
        return self._opened.max_cost

    def within(self, prefix: str) -> SealedLogDriver:
        """This driver seen from under ``prefix`` (what a tenant's history provider uses)."""
        return SealedLogDriver(
            within(self.driver, prefix),
            self.keys,
            plaintext_reads=self.plaintext_reads,
            root=self.root + prefix,
            positions=self._positions,
            opened=self._opened,
            scopes=self._scopes,
        )

    def over(self, driver: LogDriver) -> SealedLogDriver:
        """This driver's sealing over ``driver``, which holds the same logs (the object log with other options).

        Keys, remembered positions and opened records are shared with this driver.
        """
        return SealedLogDriver(
            driver,
            self.keys,
            plaintext_reads=self.plaintext_reads,
            root=self.root,
            positions=self._positions,
            opened=self._opened,
            scopes=self._scopes,
        )

    async def tail(self, key: str, count: int) -> LogTail:
        """The log's length, version and the digests of its last records, unsealed."""
        full = self.root + key
        tail = await self.driver.tail(key, count)
        self._positions.put(full, (tail.version, tail.length))
        if not any(is_sealed_digest(d) for d in tail.digests):
            return tail
        scope, where = log_scope_of(full), f"log {full!r}"
        digests: list[str] = []
        for digest in tail.digests:
            if is_sealed_digest(digest):
                data_key = await self.keys.get(scope, digest_key_id(digest, where=where), where=where)
                digest = data_key.open_digest(full, digest, where=where)
            elif not self.plaintext_reads:
                raise CorruptRecordError(f"{where} holds a digest that is not sealed")
            digests.append(digest)
        return LogTail(tail.length, digests, tail.version)

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        """Seal ``records`` at the positions they take and append them on the driver's condition."""
        if not records:
            return await self.driver.append(
                key, records, expected_version=expected_version, session_id=session_id, ttl=ttl
            )
        full = self.root + key
        known = self._positions.peek(full)  # not marked used: the append puts it back as the newest
        if expected_version is not None and known is not None and known[0] == expected_version:
            start = known[1]  # the common case, without a coroutine of _length_at
        else:
            start = await self._length_at(key, full, expected_version)
        scope = self._scopes.get(full)
        if scope is None:
            if len(self._scopes) >= _POSITIONS:
                self._scopes.clear()
            scope = self._scopes[full] = log_scope_of(full)
        data_key = self.keys.current_cached(scope) or await self.keys.current(scope)
        sealed = data_key.seal_records(full, records, start)
        try:
            version = await self.driver.append(
                key, sealed, expected_version=expected_version, session_id=session_id, ttl=ttl
            )
        except BaseException:
            self._positions.pop(full)
            raise
        self._positions.put(full, (version, start + len(records)))
        return version

    @property
    def create(self) -> CreateLog:
        """Start a log that was never written, sealed, where the driver underneath has ``create``.

        The records are sealed at positions 0 onwards of the log, as :meth:`append` to an
        absent log seals them; the result is the driver's (``None``: the log was written
        before, nothing was stored).

        Raises:
            AttributeError: The driver underneath has no ``create`` (so ``getattr(driver,
                "create", None)`` is ``None``).
        """
        offered(create_of(self.driver), "create")
        return self._create

    async def _create(
        self, key: str, records: Sequence[LogRecord], *, session_id: str, ttl: float | None = None
    ) -> LogVersion | None:
        create = offered(create_of(self.driver), "create")
        full = self.root + key
        scope = log_scope_of(full)
        data_key = self.keys.current_cached(scope) or await self.keys.current(scope)
        version = await create(key, data_key.seal_records(full, records, 0), session_id=session_id, ttl=ttl)
        if version is not None:
            self._positions.put(full, (version, len(records)))
        return version

    @property
    def read_many(self) -> ReadMany:
        """:meth:`read` of many whole logs at once, where the driver underneath has ``read_many``.

        What the driver underneath returns for each log (``None``: read it alone) is opened as
        :meth:`read` opens a whole log: positions from 0 in order, each record bound to its log.

        Raises:
            AttributeError: The driver underneath has no ``read_many``.
        """
        offered(read_many_of(self.driver), "read_many")
        return self._read_many

    async def _read_many(self, keys: Sequence[str]) -> list[list[bytes] | None]:
        found = await offered(read_many_of(self.driver), "read_many")(keys)
        return [
            None if payloads is None else await self._open_log(key, payloads, whole=True)
            for key, payloads in zip(keys, found, strict=True)
        ]

    async def _length_at(self, key: str, full: str, expected_version: LogVersion) -> int:
        """The log's length while it is at ``expected_version`` (a log at another version refuses the append anyway)."""
        if expected_version is None:
            return 0
        known = self._positions.peek(full)  # not marked used: the append puts it back as the newest
        if known is not None and known[0] == expected_version:
            return known[1]
        tail = await self.driver.tail(key, 0)
        self._positions.put(full, (tail.version, tail.length))
        return tail.length

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        """The payloads, unsealed, after checking their positions follow each other.

        A record this driver opened before (the same sealed bytes of the same log) is not
        decrypted again: what it opened to is remembered (see ``opened_bytes``), while its data
        key is still looked up, so a forgotten scope's records stay unreadable.
        """
        payloads = await self.driver.read(key, last=last)
        return await self._open_log(key, payloads, whole=last is None or len(payloads) < last)

    async def _open_log(self, key: str, payloads: list[bytes], *, whole: bool) -> list[bytes]:
        """The payloads of the log ``key``, unsealed; ``whole``: they start at position 0."""
        if not payloads:
            return payloads
        full = self.root + key
        scope, where = log_scope_of(full), f"log {full!r}"
        record_where = f"a record of {where}"
        offset: int | None = 0 if whole else None
        plain: list[bytes] = []
        append = plain.append
        opened: dict[str, DataKey] = {}  # a log's records share one or two data keys: look each up once
        remembered, recall = self._opened, self._opened.peek
        suffix = key_suffix(full)
        latest: DataKey | None = None  # the data key of the last record opened: most records share it
        for index, payload in enumerate(payloads):
            hit: _Opened | None = recall(payload)
            if hit is not None and hit[0] == full:
                _, kid, data, position = hit
                if kid not in opened:  # the key must still be held (not destroyed by forget)
                    opened[kid] = await self.keys.get(scope, kid, where=record_where)
            elif latest is not None and payload.startswith(latest.log_prefix):
                data, position = latest.open_record(suffix, payload, where=record_where)
                remembered.put(payload, (full, latest.kid, data, position))
            elif not is_sealed(payload):
                if not self.plaintext_reads:
                    raise CorruptRecordError(f"record {index} of {where} is not sealed")
                append(payload)
                continue
            else:
                split = split_header(payload, where=record_where)
                kid = split[1]
                latest = opened.get(kid)
                if latest is None:
                    latest = opened[kid] = await self.keys.get(scope, kid, where=record_where)
                data, found = latest.open_split(full, payload, split, where=record_where)
                if found is None:
                    raise CorruptRecordError(f"{record_where} holds a sealed object, not a log record")
                position = found
                remembered.put(payload, (full, kid, data, position))
            if offset is None:
                offset = position - index
            elif position - index != offset:
                raise CorruptRecordError(
                    f"{record_where} was sealed at position {position} but read at {index + offset}: "
                    "records were removed, swapped or copied"
                )
            append(data)
        return plain

    async def length(self, key: str) -> int:
        """The number of records."""
        return await self.driver.length(key)

    async def delete(self, key: str) -> bool:
        """Remove the whole log."""
        self._positions.pop(self.root + key)
        return await self.driver.delete(key)

    @property
    def deletes_conditionally(self) -> bool:
        """Whether :meth:`delete_if_version` works: the driver underneath offers it."""
        return deletes_conditionally(self.driver)

    async def delete_if_version(self, key: str, version: LogVersion) -> bool:
        """Remove the whole log only while it is at ``version`` (sealing changes no version).

        Raises:
            StoreConflictError: The log is absent or at another version; nothing was removed.
            NotImplementedError: The driver underneath cannot delete conditionally.
        """
        self._positions.pop(self.root + key)
        return await conditional_delete(self.driver).delete_if_version(key, version)

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        """List as the driver underneath does."""
        return await self.driver.list_logs(prefix, after=after, limit=limit)

    async def purge_expired(self) -> int:
        """Remove every expired log."""
        return await self.driver.purge_expired()

    async def aclose(self) -> None:
        """Nothing to release: the driver underneath is borrowed."""
        return None

    def __repr__(self) -> str:
        return f"SealedLogDriver({self.driver!r}, root={self.root!r})"
