"""Object-driver conformance suite: an :class:`~agent_stores.core.ObjectDriver` keeps every promise of ``drivers.py``.

A backend's file store and session store are the core's ``ObjectAgentFileStore`` and
``ObjectSessionStore`` over the backend's object driver, so the driver's promises (exact bytes,
atomic conditional writes, ordered and paged listings) are what the harness's files and the
session snapshots rely on. Subclass :class:`ObjectDriverConformance`, declare an
:class:`ObjectDriverCapabilities`, and provide an ``object_driver_factory`` fixture::

    import pytest
    from agent_stores.testing import ObjectDriverCapabilities, ObjectDriverConformance

    class TestMyObjectDriver(ObjectDriverConformance):
        capabilities = ObjectDriverCapabilities(
            atomic_create_across_instances=True, atomic_if_version_across_instances=True
        )

        @pytest.fixture
        def object_driver_factory(self, my_server_url):
            return lambda: MyObjectDriver.from_url(my_server_url)  # or an awaitable of one

Every call of the factory must return a driver over the **same** backing data. Drivers are
closed with ``aclose()`` at the end of each clause. Every clause works under keys with its own
unique prefix, so the suite can run against a live store that holds data.

Versions are opaque: the suite only relies on what ``drivers.py`` promises — a conditional
write matches the current version only, and different content gets a different version. It
does not require that rewriting identical bytes changes the version (S3 ETags are content hashes).
"""

from __future__ import annotations

import asyncio
import inspect
import random
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agent_stores.core import (
    Listing,
    ObjectDriver,
    OrderedPut,
    StoreConflictError,
    StoreUnavailableError,
    put_in_order,
)

from ._base import (
    ConformanceBase,
    brief,
    collect_pages,
    incompressible,
    race_start,
    raises,
    relies_on,
    requires,
    unique_id,
)
from .adversarial import ADVERSARIAL_FRAGMENTS, pattern_like

__all__ = ["ObjectDriverCapabilities", "ObjectDriverConformance", "expected_listing"]

OpenDriver = Callable[[], Awaitable[ObjectDriver]]

#: Concurrent conditional writes in one race; every racer is warmed up and released at a barrier.
_RACERS = 8

#: Rounds of each race clause, each on a new key.
_RACE_ROUNDS = 4

#: Key fragments that mean something to a glob, a regex, SQL ``LIKE`` or a path, plus unicode.
_LITERAL_FRAGMENTS = tuple(f for f in ADVERSARIAL_FRAGMENTS if pattern_like(f))

#: Names whose code-point order differs from naive orders: ``-`` < ``/`` < ``0`` (a delimiter
#: sorting among other characters), upper before lower case, U+FB01 before U+1F600 (which
#: UTF-16 order reverses), a NUL-free control character, NFC before NFD spellings.
_ORDER_NAMES = ("a", "a-", "a/x", "a0", "A", "B", "_", "~", "é", "e\u0301", "\ufb01", "😀", "\x7f", " ", "z/y/x")


@dataclass(frozen=True)
class ObjectDriverCapabilities:
    """What an object driver declares beyond the minimal contract (every default is "no").

    Attributes:
        atomic_create_across_instances: ``put(..., if_absent=True)`` is decided atomically
            between driver instances from the factory (two connections or clients): of N racing
            creates of one key, exactly one wins (S3 ``If-None-Match: *``, a unique index,
            ``O_EXCL``). Atomicity among concurrent calls on one instance is always required.
        atomic_if_version_across_instances: ``put(..., if_version=)`` and
            ``delete(..., if_version=)`` are decided atomically between instances: of N racing
            conditional writes on one version, exactly one wins (S3 ``If-Match``, a conditional
            update). Atomicity on one instance is always required.
        max_key_bytes: The longest key, in UTF-8 bytes, the driver stores (1,024 by default:
            S3's limit, and what a file store over the driver needs for paths of about 1 KB).
            Keys of exactly this length, of random characters in segments of 100, are checked
            to round-trip; a longer key may be refused with ``ValueError``, never cut. A driver
            that adds its own prefix to every key declares what is left of its backend's limit.

    """

    atomic_create_across_instances: bool = False
    atomic_if_version_across_instances: bool = False
    max_key_bytes: int = 1024


#: What clauses rely on, besides their own subject (see ``relies_on``).
_EXCLUSIVE_CREATE = (
    "put(if_absent=True) of an existing key raises StoreConflictError (test_if_absent_creates_only_a_missing_key)"
)
_COMPARE_AND_SET = (
    "put(if_version=) at another version raises StoreConflictError (test_if_version_replaces_only_the_current_version)"
)
_DELETE_UNLISTS = "a deleted key is absent from listings too (test_put_get_head_and_delete_agree)"
_AFTER_EXCLUSIVE = (
    "list(after=) keeps only entries strictly after it (test_list_after_is_exclusive_over_keys_and_prefixes)"
)


def expected_listing(
    keys: Iterable[str], prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
) -> Listing:
    """The listing ``drivers.py`` specifies for ``keys``: the suite's reference model of ``ObjectDriver.list``."""
    entries: dict[str, bool] = {}  # name -> is a common prefix
    for key in keys:
        if not key.startswith(prefix):
            continue
        rest = key[len(prefix) :]
        cut = rest.find(delimiter) if delimiter else -1
        if cut >= 0:
            entries[prefix + rest[: cut + len(delimiter or "")]] = True
        else:
            entries[key] = False
    names = sorted(name for name in entries if after is None or name > after)
    if limit is not None:
        names = names[:limit]
    return Listing([n for n in names if not entries[n]], [n for n in names if entries[n]])


def _entries(listing: Listing) -> list[str]:
    """Keys and common prefixes of one listing, merged in code-point order."""
    return sorted([*listing.keys, *listing.prefixes])


class ObjectDriverConformance(ConformanceBase):
    """Clauses every object driver must pass; optional ones are selected by ``capabilities``.

    Provide an ``object_driver_factory`` fixture (see the module docstring), declare an
    :class:`ObjectDriverCapabilities`, and list known deviations in ``divergences`` with a reason.
    """

    capabilities: ClassVar[ObjectDriverCapabilities] = ObjectDriverCapabilities()
    factory_fixture: ClassVar[str] = "object_driver_factory"

    @pytest.fixture
    def open_driver(self, open_store: Callable[..., Awaitable[Any]]) -> OpenDriver:
        """Return a callable opening one more driver over the backing data (closed after the clause)."""

        async def open_one() -> ObjectDriver:
            return cast(ObjectDriver, await open_store())

        return open_one

    @pytest.fixture
    def prefix(self) -> str:
        """This clause's own key prefix; the clause touches no key outside it."""
        return unique_id("object-driver") + "/"

    @staticmethod
    async def _assert_absent(driver: ObjectDriver, key: str, *, why: str) -> None:
        assert await driver.get(key) is None, f"{why}: get returned an object"
        assert await driver.head(key) is None, f"{why}: head returned a version"
        listed = await driver.list(key, delimiter=None)
        assert key not in listed.keys, f"{why}: list still lists the key"

    @staticmethod
    async def _assert_stored(driver: ObjectDriver, key: str, data: bytes, version: str, *, why: str) -> None:
        stored = await driver.get(key)
        assert stored is not None, f"{why}: get returned None"
        assert stored.data == data, f"{why}: get returned {len(stored.data)} other bytes for {len(data)} stored"
        assert stored.version == version, f"{why}: get reports version {stored.version!r}, put returned {version!r}"
        assert await driver.head(key) == version, f"{why}: head and put disagree on the version"

    # -- basics -------------------------------------------------------------------------------

    async def test_driver_implements_the_protocol(self, open_driver: OpenDriver) -> None:
        """The factory's driver is an ``ObjectDriver``: every method exists and is a coroutine function.

        Failure means a method is missing or synchronous (a blocking call on the event loop, or
        a result the core cannot ``await``).
        """
        driver = await open_driver()
        assert isinstance(driver, ObjectDriver), f"{type(driver).__name__} lacks methods of ObjectDriver"
        names = ("get", "head", "put", "delete", "list", "aclose")
        synchronous = [name for name in names if not inspect.iscoroutinefunction(getattr(driver, name))]
        assert not synchronous, f"not coroutine functions: {synchronous}"

    async def test_missing_key_is_absent_for_every_method(self, open_driver: OpenDriver, prefix: str) -> None:
        """A key never written: ``get`` and ``head`` return ``None``, ``delete`` returns ``False``, listings omit it.

        Failure means the driver raises for a missing key (``NoSuchKey``, ``KeyError``) instead
        of answering, or reports a placeholder.
        """
        driver = await open_driver()
        key = prefix + "missing"
        await self._assert_absent(driver, key, why="a key never written")
        assert await driver.delete(key) is False, "delete of a missing key returned True"
        assert await driver.list(prefix) == ([], []), "list(prefix) of a prefix holding nothing returned entries"
        assert await driver.list(prefix, delimiter=None) == ([], []), (
            "list(prefix, delimiter=None) of a prefix holding nothing returned entries"
        )

    async def test_put_get_head_and_delete_agree(self, open_driver: OpenDriver, prefix: str) -> None:
        """``put`` returns the version that ``get`` and ``head`` then report; after ``delete`` both say absent.

        Failure means ``head`` reads another source than ``get`` (a stale cache, metadata kept
        apart from the data), ``put`` returns a version the store does not report, or
        ``delete`` leaves the object (or its version) behind.
        """
        driver = await open_driver()
        key = prefix + "object"
        version = await driver.put(key, b"first")
        assert isinstance(version, str) and version, f"put returned {version!r}, not a non-empty str"  # pyright: ignore[reportUnnecessaryIsInstance]
        await self._assert_stored(driver, key, b"first", version, why="after put")
        assert await driver.delete(key) is True, "delete of an existing object returned False"
        await self._assert_absent(driver, key, why="after delete")
        assert await driver.delete(key) is False, "a second delete returned True"

    async def test_get_many_equals_get_of_each_key(self, open_driver: OpenDriver, prefix: str) -> None:
        """``get_many`` (optional: listings read many records through it) returns ``get`` of each key, in order.

        Skipped for a driver without it (the core then calls ``get`` per key). Failure means
        the batch lost the order, dropped a repeated key, or answered a missing key with
        something else than ``None``.
        """
        driver = await open_driver()
        get_many = getattr(driver, "get_many", None)
        if get_many is None:
            pytest.skip("get_many is optional and this driver has none: listings fall back to one get per key")
        keys = [f"{prefix}b", f"{prefix}a", f"{prefix}c"]
        for index, key in enumerate(keys[:2]):
            await driver.put(key, f"value {index}".encode())
        asked = [keys[2], keys[0], keys[1], keys[0]]
        assert list(await get_many(asked)) == [await driver.get(k) for k in asked]
        assert list(await get_many([])) == []

    async def test_put_in_order_writes_in_order_and_stops_at_the_first_refusal(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """``put_in_order`` stores its items as ``put`` would and, refused, leaves only those before the refusal.

        Runs through the core's ``put_in_order``: the driver's own (one round trip) where it
        has one, else one ``put`` after the other. The versions returned are what ``get``
        reports; an unconditional item replaces an existing object; an ``if_absent`` item over
        an existing key raises ``StoreConflictError`` with the items before it stored and it
        and every later one not (the refused object keeps its bytes); two items with one key
        are a ``ValueError`` with nothing written. Failure means the driver writes out of
        order (a later item stored without an earlier one: after a stop, a checkpoint's index
        entry without its record), goes on past a refusal, or reports other versions.
        """
        driver = await open_driver()
        old = await driver.put(f"{prefix}existing", b"old")
        items = [
            OrderedPut(f"{prefix}b-created", b"created", if_absent=True),
            OrderedPut(f"{prefix}existing", b"replaced"),
            OrderedPut(f"{prefix}a-plain", b"plain"),
        ]
        versions = await put_in_order(driver, items)
        assert len(versions) == len(items), f"put_in_order returned {len(versions)} versions for {len(items)} items"
        for item, version in zip(items, versions, strict=True):
            await self._assert_stored(driver, item.key, item.data, version, why=f"after put_in_order of {item.key}")
        assert versions[1] != old, "an item replacing an object kept its old version"
        assert await put_in_order(driver, []) == [], "put_in_order of no items returned versions"

        now = await driver.head(f"{prefix}existing")
        assert now is not None
        for at in range(3):  # the refused item first, in the middle, last
            fresh = [
                OrderedPut(f"{prefix}refusal{at}-{n}", f"value {n}".encode(), if_absent=n % 2 == 0) for n in range(3)
            ]
            batch = [*fresh[:at], OrderedPut(f"{prefix}existing", b"refused", if_absent=True), *fresh[at:]]
            with raises(StoreConflictError, f"put_in_order with an if_absent item over an existing key (item {at})"):
                await put_in_order(driver, batch)
            await self._assert_stored(driver, f"{prefix}existing", b"replaced", now, why="a refused if_absent item")
            for item in fresh[:at]:
                stored = await driver.get(item.key)
                assert stored is not None and stored.data == item.data, (
                    f"item {item.key} before the refused item {at} was not stored"
                )
            for item in fresh[at:]:
                await self._assert_absent(driver, item.key, why=f"an item after the refused item {at}")

        with raises(ValueError, "put_in_order with two items of one key"):
            await put_in_order(driver, [OrderedPut(f"{prefix}twice", b"1"), OrderedPut(f"{prefix}twice", b"2")])
        await self._assert_absent(driver, f"{prefix}twice", why="a refused put_in_order of one key twice")

    async def test_overwrite_with_different_content_gets_a_new_version(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """An unconditional ``put`` replaces the whole object; different content gets a different version.

        Rewriting identical bytes may keep the version (S3 ETags are content hashes). Failure
        means the old bytes survive (an append, a partial overwrite), or two different contents
        share a version, so a compare-and-set holding the older one succeeds.
        """
        driver = await open_driver()
        key = prefix + "object"
        versions: list[str] = []
        for data in (b"one", b"two", b"a much longer third content", b""):
            version = await driver.put(key, data)
            assert version not in versions, f"content {data!r} got the version {version!r} of earlier content"
            versions.append(version)
            await self._assert_stored(driver, key, data, version, why=f"after overwriting with {data!r}")

    async def test_instances_share_the_backing_data(self, open_driver: OpenDriver, prefix: str) -> None:
        """A driver opened later sees what another wrote, at the same version, and its deletes are seen back.

        Failure means the factory does not return drivers over the same backing data (the
        suite cannot check races then), or the driver caches objects that are never re-read.
        """
        first = await open_driver()
        key = prefix + "object"
        version = await first.put(key, b"shared")
        second = await open_driver()
        await self._assert_stored(second, key, b"shared", version, why="read by a second instance")
        assert await second.delete(key, if_version=version) is True, (
            "a conditional delete at the current version returned False"
        )
        await self._assert_absent(first, key, why="deleted by another instance")

    async def test_payloads_round_trip_byte_exact(self, open_driver: OpenDriver, prefix: str) -> None:
        """Every byte value, empty data, NUL and invalid UTF-8 come back exactly, as ``bytes``.

        Failure means the driver decodes data as text, strips NUL or trailing whitespace, or
        returns another type (``str``, ``bytearray``, ``memoryview``). Store opaque binary.
        """
        driver = await open_driver()
        payloads = {
            "all-bytes": bytes(range(256)),
            "reversed": bytes(range(255, -1, -1)),
            "empty": b"",
            "nul": b"\x00",
            "bad-utf-8": b"\xff\xfe\x80 \xc3\x28 \xed\xa0\x80",
            "whitespace": b" \n\r\n\t ",
        }
        for name, data in payloads.items():
            version = await driver.put(prefix + name, data)
            stored = await driver.get(prefix + name)
            assert stored is not None and type(stored.data) is bytes, f"{name}: get returned {stored!r:.80}"
            await self._assert_stored(driver, prefix + name, data, version, why=name)

    async def test_large_payloads_round_trip(self, open_driver: OpenDriver, prefix: str) -> None:
        """A 4 MB object is stored and read back exactly, and can be replaced by a 3 MB one.

        Failure means the driver truncates large values, or a size limit of the backend
        (a document cap, a single-request limit) surfaces as silent loss instead of an error.
        """
        driver = await open_driver()
        key = prefix + "large"
        big = random.Random(11).randbytes(4 << 20)
        version = await driver.put(key, big)
        await self._assert_stored(driver, key, big, version, why="a 4 MB object")
        smaller = big[: 3 << 20][::-1]
        version = await driver.put(key, smaller, if_version=version)
        await self._assert_stored(driver, key, smaller, version, why="a 3 MB object replacing it")

    async def test_keys_are_exact(self, open_driver: OpenDriver, prefix: str) -> None:
        """Keys differing in case, Unicode form, whitespace or a trailing separator, or holding patterns, are distinct.

        Failure means the driver normalises keys (case folding, NFC, stripping, collapsing ``//``), treats characters of
        a key as a pattern, or cuts long keys. Use each key verbatim.
        """
        driver = await open_driver()
        names = [
            "a",
            "A",
            "a/",
            "a//b",
            "a/b",
            " a",
            "a ",
            unicodedata.normalize("NFC", "é"),
            unicodedata.normalize("NFD", "é"),
            *(f"k{fragment}" for fragment in _LITERAL_FRAGMENTS),
            "kx",
        ]
        versions = {name: await driver.put(prefix + name, name.encode()) for name in names}
        for name in names:
            await self._assert_stored(driver, prefix + name, name.encode(), versions[name], why=f"key {brief(name)}")

    async def test_keys_up_to_the_declared_length_are_stored_exactly(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """Keys of ``capabilities.max_key_bytes`` UTF-8 bytes round-trip and list; a longer key is stored or refused.

        The keys are random characters (ASCII, and a mix with two- and four-byte characters) in
        segments of 100 (under 255 bytes, as file systems need), so a database that compresses
        indexed values cannot shrink them below their real size; two keys differ only in their
        last character. Failure means the
        driver cuts or cannot index keys as long as it declared, or a longer key failed with
        something other than ``ValueError`` (a raw driver error), or was stored under another key.
        """
        driver = await open_driver()
        limit = self.capabilities.max_key_bytes
        ascii_key = _long_key(prefix, limit, "ascii")
        wide_key = _long_key(prefix, limit, "wide")
        keys = [ascii_key[:-1] + "a", ascii_key[:-1] + "b", wide_key]
        for key in keys:
            assert len(key.encode()) == limit, f"the suite built a key of {len(key.encode())} bytes"  # pragma: no cover
            try:
                version = await driver.put(key, key.encode()[-64:])
            except ValueError as err:
                pytest.fail(
                    f"the driver refused a key of {limit} bytes (ValueError: {err}), the max_key_bytes it declared; "
                    "declare the longest key it holds (1,024 by default)",
                    pytrace=False,
                )
            await self._assert_stored(driver, key, key.encode()[-64:], version, why=f"a key of {limit} bytes")
        listed = await driver.list(prefix, delimiter=None)
        assert listed == (sorted(keys), []), "keys of the declared length are not listed as written"
        longer = ascii_key + "x"
        try:
            version = await driver.put(longer, b"longer")
        except ValueError:
            return  # refusing a key past the declared length is allowed
        except Exception as err:
            pytest.fail(
                f"a key of {limit + 1} bytes raised {type(err).__name__}: {err}; refuse keys the driver cannot hold "
                "with ValueError (drivers.py)",
                pytrace=False,
            )
        await self._assert_stored(driver, longer, b"longer", version, why=f"a key of {limit + 1} bytes")
        neighbour = await driver.get(keys[0])
        assert neighbour is not None and neighbour.data == keys[0].encode()[-64:], "a longer key overwrote another"

    @relies_on(_DELETE_UNLISTS)
    async def test_nul_in_keys_is_refused_with_value_error_or_kept(self, open_driver: OpenDriver, prefix: str) -> None:
        r"""A key, prefix or ``after`` holding NUL is either handled exactly or refused with ``ValueError``.

        ``drivers.py`` lets a driver refuse NUL (a SQL ``text`` column cannot hold it); what it
        may not do is fail with a raw client error or ``StoreUnavailableError``, or cut the key
        at the NUL (``a\x00b`` stored as ``a``). Refuse before writing anything.
        """
        driver = await open_driver()
        plain, nul = prefix + "a", prefix + "a\x00b"
        version = await driver.put(plain, b"plain")
        if await _refused(lambda: driver.put(nul, b"nul")):
            await self._assert_stored(driver, plain, b"plain", version, why="a refused key holding NUL")
        else:
            stored = await driver.get(nul)
            assert stored is not None and stored.data == b"nul", "a key holding NUL was not kept"
            await self._assert_stored(driver, plain, b"plain", version, why="beside a key holding NUL")
            assert await driver.delete(nul) is True, "delete of a stored key holding NUL returned False"
        listed: list[Listing] = []

        async def list_after() -> None:
            listed[:] = [await driver.list(prefix, after=prefix + "\x00")]

        if not await _refused(list_after):
            assert listed == [([plain], [])], f"list(after=prefix + NUL) returned {brief(listed[0], prefix)}"

        async def list_under() -> None:
            listed[:] = [await driver.list(prefix + "\x00", delimiter=None)]

        if not await _refused(list_under):
            assert listed == [([], [])], f"list(prefix + NUL) returned {brief(listed[0], prefix)}"

    # -- conditional writes -------------------------------------------------------------------

    async def test_if_absent_creates_only_a_missing_key(self, open_driver: OpenDriver, prefix: str) -> None:
        """``put(if_absent=True)`` creates a missing key and raises ``StoreConflictError`` for an existing one.

        The existing object keeps its bytes and version; after a delete the key can be created
        again. Failure means an exclusive create overwrote (a harness file or a quarantined
        session snapshot lost) or a deleted key is still reported as existing.
        """
        driver = await open_driver()
        key = prefix + "object"
        version = await driver.put(key, b"first", if_absent=True)
        await self._assert_stored(driver, key, b"first", version, why="created with if_absent")
        with raises(StoreConflictError, "put(if_absent=True) of a key that exists"):
            await driver.put(key, b"second", if_absent=True)
        await self._assert_stored(driver, key, b"first", version, why="after a conflicting if_absent put")
        assert await driver.delete(key) is True, "delete of an existing object returned False"
        again = await driver.put(key, b"third", if_absent=True)
        await self._assert_stored(driver, key, b"third", again, why="re-created after delete")

    async def test_if_version_replaces_only_the_current_version(self, open_driver: OpenDriver, prefix: str) -> None:
        """``put(if_version=v)`` writes only while the object is at ``v``; else ``StoreConflictError``, nothing written.

        Checked with an older version, a version that was never issued, and on a missing or
        deleted key (which has no version). Failure means a lost update: a compare-and-set
        that compares nothing, or an ``If-Match`` that a missing object satisfies.
        """
        driver = await open_driver()
        key = prefix + "object"
        old = await driver.put(key, b"v1")
        current = await driver.put(key, b"v2", if_version=old)
        await self._assert_stored(driver, key, b"v2", current, why="after put(if_version=current)")
        assert current != old, f"different content kept the version {old!r}"
        for wrong in (old, "not-a-version", "0"):
            if wrong == current:
                continue  # a made-up version this driver happens to issue
            with raises(StoreConflictError, f"put(if_version={wrong!r}) of an object at version {current!r}"):
                await driver.put(key, b"lost", if_version=wrong)
        await self._assert_stored(driver, key, b"v2", current, why="after conflicting if_version puts")
        missing = prefix + "missing"
        with raises(StoreConflictError, "put(if_version=...) of a key that does not exist"):
            await driver.put(missing, b"lost", if_version=current)
        await self._assert_absent(driver, missing, why="a missing key after a conflicting if_version put")
        assert await driver.delete(key) is True, "delete of an existing object returned False"
        with raises(StoreConflictError, "put(if_version=...) at the version of an object deleted since"):
            await driver.put(key, b"lost", if_version=current)
        await self._assert_absent(driver, key, why="a deleted key after a conflicting if_version put")

    async def test_delete_if_version_removes_only_the_current_version(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """``delete(if_version=v)`` removes the object only at ``v``; otherwise ``StoreConflictError`` and it stays.

        A missing key has no version, so a conditional delete of it conflicts too. Failure means
        the session store's quarantine (read, copy aside, delete the version it read) can
        delete a snapshot another writer just replaced.
        """
        driver = await open_driver()
        key = prefix + "object"
        old = await driver.put(key, b"v1")
        current = await driver.put(key, b"v2")
        for wrong in (old, "not-a-version"):
            with raises(StoreConflictError, f"delete(if_version={wrong!r}) of an object at another version"):
                await driver.delete(key, if_version=wrong)
        await self._assert_stored(driver, key, b"v2", current, why="after conflicting conditional deletes")
        assert await driver.delete(key, if_version=current) is True, (
            "a conditional delete at the current version returned False"
        )
        await self._assert_absent(driver, key, why="after delete(if_version=current)")
        with raises(StoreConflictError, "delete(if_version=...) of an object deleted already"):
            await driver.delete(key, if_version=current)

    async def _race_creates(self, drivers: Sequence[ObjectDriver], key: str) -> None:
        barrier = asyncio.Barrier(_RACERS)

        async def attempt(i: int) -> str:
            driver = drivers[i % len(drivers)]
            await race_start(barrier, driver.head(key))  # a lazily opened connection is open before the start
            return await driver.put(key, f"writer {i}".encode(), if_absent=True)

        outcomes = await asyncio.gather(*(attempt(i) for i in range(_RACERS)), return_exceptions=True)
        winner = _one_winner(outcomes, "exclusive creates")
        for driver in drivers:
            await self._assert_stored(
                driver, key, f"writer {winner}".encode(), cast(str, outcomes[winner]), why="after the race"
            )

    async def _race_conditional_writes(self, drivers: Sequence[ObjectDriver], key: str) -> None:
        """Race puts and one delete, all with ``if_version`` of the current object; exactly one may win."""
        base = await drivers[0].put(key, b"base")
        barrier = asyncio.Barrier(_RACERS)

        async def attempt(i: int) -> str | bool:
            driver = drivers[i % len(drivers)]
            await race_start(barrier, driver.head(key))  # a lazily opened connection is open before the start
            if i == _RACERS - 1:
                return await driver.delete(key, if_version=base)
            return await driver.put(key, f"writer {i}".encode(), if_version=base)

        outcomes = await asyncio.gather(*(attempt(i) for i in range(_RACERS)), return_exceptions=True)
        winner = _one_winner(outcomes, "conditional writes on one version")
        for driver in drivers:
            if winner == _RACERS - 1:
                await self._assert_absent(driver, key, why="the conditional delete won")
            else:
                version = cast(str, outcomes[winner])
                await self._assert_stored(driver, key, f"writer {winner}".encode(), version, why="after the race")

    @relies_on(_EXCLUSIVE_CREATE)
    async def test_concurrent_exclusive_creates_on_one_instance_exactly_one_wins(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """Eight ``put(if_absent=True)`` of one key racing through one driver: exactly one wins, its bytes are stored.

        Failure means the driver checks existence and writes in two steps (``head`` then
        ``put``). Use the backend's atomic exclusive create.
        """
        driver = await open_driver()
        for round_ in range(_RACE_ROUNDS):
            await self._race_creates([driver], f"{prefix}object-{round_}")

    @relies_on(_EXCLUSIVE_CREATE)
    @requires("atomic_create_across_instances")
    async def test_concurrent_exclusive_creates_across_instances_exactly_one_wins(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """Eight ``put(if_absent=True)`` of one key racing through four drivers: exactly one wins.

        Failure means exclusive create is only atomic per instance (a lock in the driver), so
        two processes both create the same file or quarantine the same snapshot.
        """
        drivers = [await open_driver() for _ in range(4)]
        for round_ in range(_RACE_ROUNDS):
            await self._race_creates(drivers, f"{prefix}object-{round_}")

    @relies_on(_COMPARE_AND_SET)
    async def test_concurrent_conditional_writes_on_one_instance_exactly_one_wins(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """Seven ``put(if_version=v)`` and one ``delete(if_version=v)`` racing through one driver: exactly one wins.

        Failure means compare and write are two steps, so several writers each believe they
        replaced version ``v``. Use one conditional write.
        """
        driver = await open_driver()
        for round_ in range(_RACE_ROUNDS):
            await self._race_conditional_writes([driver], f"{prefix}object-{round_}")

    @relies_on(_COMPARE_AND_SET)
    @requires("atomic_if_version_across_instances")
    async def test_concurrent_conditional_writes_across_instances_exactly_one_wins(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """Seven ``put(if_version=v)`` and one ``delete(if_version=v)`` racing through four drivers: exactly one wins.

        Failure means the compare-and-set is only atomic per instance.
        """
        drivers = [await open_driver() for _ in range(4)]
        for round_ in range(_RACE_ROUNDS):
            await self._race_conditional_writes(drivers, f"{prefix}object-{round_}")

    # -- listing ------------------------------------------------------------------------------

    async def test_list_without_delimiter_returns_every_key_under_the_prefix(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """``list(prefix, delimiter=None)`` returns every key starting with ``prefix``, at any depth, in order.

        Keys that share only part of the prefix are not listed; a key equal to the prefix is.
        Failure means the driver lists one level only, matches the prefix as a pattern, or
        misses the key equal to the prefix.
        """
        driver = await open_driver()
        base = prefix + "dir"
        keys = [base, base + "/a", base + "/b/c", base + "/b/d/e", base + "x", base + "/"]
        for key in [*keys, prefix + "di", prefix + "other/dir/a"]:
            await driver.put(key, b"x")
        listing = await driver.list(base, delimiter=None)
        assert listing == (sorted(keys), []), (
            f"list({brief(base, prefix)}, delimiter=None) returned {brief(listing, prefix)}"
        )
        listing = await driver.list(base + "/", delimiter=None)
        assert listing == (sorted(k for k in keys if k.startswith(base + "/")), []), (
            "list(delimiter=None) did not return exactly the keys under the prefix, in code-point order"
        )

    async def test_list_with_delimiter_folds_deeper_keys_into_common_prefixes(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """With ``delimiter="/"`` deeper keys fold into full common prefixes ending with ``/``, each listed once.

        A prefix not ending with the delimiter folds at the first delimiter after it; a key
        ending with the delimiter folds into itself. Failure means short names instead of full
        keys, repeated prefixes, nested levels listed, or prefixes missing their delimiter.
        """
        driver = await open_driver()
        keys = [
            prefix + "top.txt",
            prefix + "dir/a.txt",
            prefix + "dir/b.txt",
            prefix + "dir/sub/c.txt",
            prefix + "empty/",
            prefix + "dirt.txt",
            prefix + "deep/er/est/x",
        ]
        for key in keys:
            await driver.put(key, b"x")
        listing = await driver.list(prefix)
        assert listing == (
            [prefix + "dirt.txt", prefix + "top.txt"],
            [prefix + n for n in ("deep/", "dir/", "empty/")],
        ), "list with the / delimiter did not return the direct keys and common prefixes, in code-point order"
        assert await driver.list(prefix + "dir/") == (
            [prefix + "dir/a.txt", prefix + "dir/b.txt"],
            [prefix + "dir/sub/"],
        ), "list of a folder prefix did not return its direct keys and common prefixes"
        assert await driver.list(prefix + "dir") == ([prefix + "dirt.txt"], [prefix + "dir/"]), (
            "list of a prefix that is no folder did not match keys and common prefixes by plain string prefix"
        )
        assert await driver.list(prefix + "empty/") == ([prefix + "empty/"], []), "a key equal to the prefix"
        assert await driver.list(prefix + "nothing/") == ([], []), "list of a prefix holding nothing returned entries"

    async def test_list_orders_by_code_point(self, open_driver: OpenDriver, prefix: str) -> None:
        """Keys and common prefixes come back in code-point order (UTF-8 byte order), as S3 lists them.

        The names mix ``-``, ``/`` and ``0`` (a delimiter sorts among other characters), case,
        combining characters, and characters outside the Basic Multilingual Plane (which
        UTF-16 order puts before U+E000..U+FFFF). Failure means a locale collation, a
        case-insensitive order, UTF-16 order, or prefixes sorted apart from keys.
        """
        driver = await open_driver()
        keys = [prefix + name for name in _ORDER_NAMES]
        for key in keys:
            await driver.put(key, b"x")
        for delimiter in ("/", None):
            listing = await driver.list(prefix, delimiter=delimiter)
            expected = expected_listing(keys, prefix, delimiter=delimiter)
            assert listing == expected, (
                f"delimiter={delimiter!r}: listed {brief(listing, prefix)}, expected {brief(expected, prefix)}"
            )

    async def test_list_prefix_is_literal(self, open_driver: OpenDriver, prefix: str) -> None:
        r"""Prefixes holding glob, regex, ``LIKE`` characters (``* ? [ ] % _ \ . ^ $ { } +``) and unicode are literal.

        Each prefix has siblings that match it only when it is read as a pattern (or after
        Unicode normalisation). Failure means the prefix reaches a ``LIKE``, ``$regex``, glob
        or ``SCAN MATCH`` unescaped.
        """
        driver = await open_driver()
        lookalikes = [prefix + n for n in ("x/f", "a/f", "b/f", "kxx/f", "u\u0308/f", "Ü/f", "/f", "k/f", "kab/f")]
        keys = [*lookalikes, *(f"{prefix}k{fragment}/f" for fragment in _LITERAL_FRAGMENTS)]
        keys += [f"{prefix}{fragment}/f" for fragment in _LITERAL_FRAGMENTS]
        for key in keys:
            await driver.put(key, b"x")
        for fragment in _LITERAL_FRAGMENTS:
            for scope in (prefix + fragment, f"{prefix}k{fragment}", f"{prefix}k{fragment}/"):
                for delimiter in ("/", None):
                    listing = await driver.list(scope, delimiter=delimiter)
                    expected = expected_listing(keys, scope, delimiter=delimiter)
                    assert listing == expected, (
                        f"list({brief(scope, prefix)}, delimiter={delimiter!r}) returned {brief(listing, prefix)}, "
                        f"expected {brief(expected, prefix)}"
                    )

    async def test_list_after_is_exclusive_over_keys_and_prefixes(self, open_driver: OpenDriver, prefix: str) -> None:
        """``after`` drops every entry (key or common prefix) not strictly greater than it, whether or not it is one.

        An ``after`` inside a folded prefix (``dir/b`` with ``dir/`` folded) drops that prefix,
        since ``dir/`` sorts before ``dir/b`` — unlike S3's ``StartAfter``, which would list it
        again. Failure means an inclusive ``after``, an ``after`` applied to keys only, or a
        prefix repeated on the next page.
        """
        driver = await open_driver()
        keys = [prefix + n for n in ("a", "dir/a", "dir/b", "dir/c/d", "e", "f/g")]
        for key in keys:
            await driver.put(key, b"x")
        afters = [prefix + n for n in ("a", "dir/", "dir/b", "dir/a", "d", "e", "f/", "f/g", "z", "")]
        for after in afters:
            for delimiter in ("/", None):
                listing = await driver.list(prefix, delimiter=delimiter, after=after)
                expected = expected_listing(keys, prefix, delimiter=delimiter, after=after)
                assert listing == expected, (
                    f"list(after={brief(after, prefix)}, delimiter={delimiter!r}) returned {brief(listing, prefix)}, "
                    f"expected {brief(expected, prefix)}"
                )

    async def test_list_limit_counts_keys_and_prefixes_together(self, open_driver: OpenDriver, prefix: str) -> None:
        """``limit`` keeps the ``limit`` smallest entries, keys and common prefixes counted together.

        Failure means the limit applies to keys only (a page of 1 holding a key and three
        prefixes), to the keys scanned before folding (a page of ``dir/`` alone when
        ``limit=2``), or keeps the wrong entries.
        """
        driver = await open_driver()
        keys = [prefix + n for n in ("a", "b/1", "b/2", "b/3", "c", "d/1", "e")]
        for key in keys:
            await driver.put(key, b"x")
        for limit in (1, 2, 3, 4, 5, 6):
            for delimiter in ("/", None):
                listing = await driver.list(prefix, delimiter=delimiter, limit=limit)
                expected = expected_listing(keys, prefix, delimiter=delimiter, limit=limit)
                assert listing == expected, (
                    f"list(limit={limit}, delimiter={delimiter!r}) returned {brief(listing, prefix)}, "
                    f"expected {brief(expected, prefix)}"
                )

    async def test_list_folds_on_any_delimiter(self, open_driver: OpenDriver, prefix: str) -> None:
        """The delimiter is a parameter: ``"-"`` and the two-character ``"::"`` fold like ``"/"``.

        The core lists with ``"/"`` only, but ``drivers.py`` promises any delimiter, as S3 has
        it. Failure means ``"/"`` is hard-coded (declare a divergence if your backend cannot
        do better), or a multi-character delimiter is cut short.
        """
        driver = await open_driver()
        keys = [prefix + n for n in ("a-b", "a-c-d", "a::b", "a::c::d", "a/b-c", "ab", "a:b")]
        for key in keys:
            await driver.put(key, b"x")
        for scope in (prefix, prefix + "a", prefix + "a-", prefix + "a::"):
            for delimiter in ("-", "::"):
                listing = await driver.list(scope, delimiter=delimiter)
                expected = expected_listing(keys, scope, delimiter=delimiter)
                assert listing == expected, (
                    f"list({brief(scope, prefix)}, delimiter={delimiter!r}) returned {brief(listing, prefix)}, "
                    f"expected {brief(expected, prefix)}"
                )

    @relies_on(_AFTER_EXCLUSIVE)
    async def test_paged_listing_equals_the_unpaged_listing(self, open_driver: OpenDriver, prefix: str) -> None:
        """Walking pages (``after`` = the largest entry of the previous page) lists exactly what one unpaged call lists.

        Each entry comes once, in order, and the walk ends at the first page shorter than
        ``limit``. The walk is bounded: a driver that ignores ``after`` fails here instead of
        hanging.
        """
        driver = await open_driver()
        keys = [prefix + n for n in ("a", "b/1", "b/2", "b/3/x", "c", "c/", "d-", "d/e", "d0", "é", "😀/x")]
        for key in keys:
            await driver.put(key, b"x")
        for delimiter in ("/", None):
            full = _entries(await driver.list(prefix, delimiter=delimiter))
            assert full == _entries(expected_listing(keys, prefix, delimiter=delimiter)), (
                "the pages together differ from the unpaged listing the specification gives"
            )
            for limit in (1, 2, 3, len(full), len(full) + 1):

                async def page(after: str | None, limit: int = limit, delimiter: str | None = delimiter) -> list[str]:
                    return _entries(await driver.list(prefix, delimiter=delimiter, after=after, limit=limit))

                walked = await collect_pages(
                    f"list(delimiter={delimiter!r}, limit={limit})",
                    page,
                    name=str,
                    page_size=limit,
                    most=len(full) + 2,
                )
                assert walked == full, (
                    f"paging with limit={limit}, delimiter={delimiter!r} listed {brief(walked, prefix)}, "
                    f"expected {brief(full, prefix)}"
                )

    # Each example writes under its own unique prefix, so the clause's drivers are safely shared
    # across examples; every subclass (one per driver) runs the same method ("differing executors").
    @relies_on(_AFTER_EXCLUSIVE)
    @settings(
        max_examples=15,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors],
    )
    @given(
        names=st.lists(st.text(alphabet="ab/-0é😀", min_size=1, max_size=5), min_size=1, max_size=8, unique=True),
        sub=st.text(alphabet="ab/", max_size=2),
        after=st.one_of(st.none(), st.text(alphabet="ab/-0é😀", max_size=4)),
        limit=st.one_of(st.none(), st.integers(min_value=1, max_value=4)),
        delimiter=st.sampled_from(["/", None]),
    )
    # Every rule in at least one example, whatever the random ones draw: ``after`` with and
    # without a delimiter (over keys and over folded prefixes), ``limit`` after ``after``.
    @example(names=["a", "b", "c/x"], sub="", after="a", limit=None, delimiter=None)
    @example(names=["a/x", "b/y", "c"], sub="", after="a/", limit=None, delimiter="/")
    @example(names=["a", "b", "bb", "c"], sub="b", after="b", limit=1, delimiter="/")
    async def test_list_matches_the_specification(
        self,
        open_driver: OpenDriver,
        names: list[str],
        sub: str,
        after: str | None,
        limit: int | None,
        delimiter: str | None,
    ) -> None:
        """Any keys, prefix, delimiter, ``after`` and ``limit``: ``list`` returns exactly what ``drivers.py`` specifies.

        The reference is :func:`expected_listing`; hypothesis prints the smallest case that
        differs. Failure means one of the rules above breaks in a combination.
        """
        driver = await open_driver()
        root = unique_id("object-driver") + "/"
        keys = [root + name for name in names]
        for key in keys:
            await driver.put(key, b"x")
        scope = root + sub
        bound = None if after is None else root + after
        listing = await driver.list(scope, delimiter=delimiter, after=bound, limit=limit)
        expected = expected_listing(keys, scope, delimiter=delimiter, after=bound, limit=limit)
        assert listing == expected, (
            f"list({brief(scope, root)}, delimiter={delimiter!r}, after={brief(bound, root)}, limit={limit}) of "
            f"{brief(keys, root)} returned {brief(listing, root)}, expected {brief(expected, root)}"
        )


async def _refused(call: Callable[[], Awaitable[object]]) -> bool:
    """Run ``call``; return whether it raised ``ValueError``. Any other error fails the clause."""
    try:
        await call()
    except ValueError:
        return True
    except StoreUnavailableError as err:
        pytest.fail(f"refused input raised StoreUnavailableError ({err}); raise ValueError (drivers.py)", pytrace=False)
    except Exception as err:
        pytest.fail(f"refused input raised {type(err).__name__}: {err}; raise ValueError (drivers.py)", pytrace=False)
    return False


def _long_key(prefix: str, size: int, kind: str) -> str:
    """A key of exactly ``size`` UTF-8 bytes under ``prefix``: random segments of 100 characters.

    With ``kind="wide"`` every fourth character takes two or four bytes.
    """
    chars = iter(incompressible(size + 8, f"object key {kind}"))
    key, segment, i = prefix, 0, 0
    while (room := size - len(key.encode())) > 0:
        if segment == 100 and room > 1:
            key, segment = key + "/", 0
            continue
        char = next(chars)
        if kind == "wide" and i % 4 == 3:
            char = "\u00e9" if i % 8 == 3 else "\U0001f600"
        i += 1
        key += char if len(char.encode()) <= room else next(chars)
        segment += 1
    return key


def _one_winner(outcomes: Sequence[object], what: str) -> int:
    """Assert exactly one outcome succeeded and every other one is a ``StoreConflictError``; return the winner."""
    unexpected = [o for o in outcomes if isinstance(o, BaseException) and not isinstance(o, StoreConflictError)]
    assert not unexpected, f"racing {what} raised something other than StoreConflictError: {unexpected!r}"
    winners = [i for i, o in enumerate(outcomes) if not isinstance(o, BaseException)]
    assert len(winners) == 1, f"{len(winners)} of {len(outcomes)} racing {what} succeeded"
    return winners[0]
