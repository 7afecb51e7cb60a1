"""The log-driver conformance suite: a :class:`~agent_stores.core.LogDriver` keeps every promise of ``drivers.py``.

A backend's history provider is the core's ``LogHistoryProvider`` over the backend's log
driver, so the driver's promises (conditional append, versions never reused, expiry, paging)
are what keeps chat history from being lost or duplicated. Subclass
:class:`LogDriverConformance`, declare a :class:`LogDriverCapabilities`, and provide a
``log_driver_factory`` fixture::

    import pytest
    from agent_stores.testing import LogDriverCapabilities, LogDriverConformance

    class TestMyLogDriver(LogDriverConformance):
        capabilities = LogDriverCapabilities(ttl=True, concurrent_instances=True)
        fake_clock = True  # the drivers read the clause's clock: expiry is checked without waiting

        @pytest.fixture
        def log_driver_factory(self, my_server_url, clock):
            return lambda: MyLogDriver.from_url(my_server_url, clock=clock)  # or an awaitable of one

Every call of the factory must return a driver over the **same** backing data (a new
connection to the same server, or the same in-process instance): that is how the suite checks
two writers. Drivers are closed with ``aclose()`` at the end of each clause. Every clause works
under keys with its own unique prefix, so the suite can run against a live store that holds data.
"""

from __future__ import annotations

import asyncio
import inspect
import random
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, cast

import pytest

from agent_stores.core import LogDriver, LogInfo, LogRecord, LogVersion, StoreConflictError, StoreUnavailableError
from agent_stores.core.drivers import conditional_delete

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
from .clock import FakeClock

__all__ = ["OBJECT_LOG_DIVERGENCES", "LogDriverCapabilities", "LogDriverConformance"]

OpenDriver = Callable[[], Awaitable[LogDriver]]

_FOLDER_ORDER = (
    "ObjectLogDriver keeps each log in the folder 'key/' so buckets stay browsable: it lists logs in the "
    "order of key + '/' (a key followed by a character below '/', such as '-' or '.', lists before it) and "
    "keys must not nest ('a' and 'a/x'). KeySpace keys never nest, and paging in its own order returns "
    "every log once (tests/test_objectlog.py)."
)

#: The declared divergences of the core's ``ObjectLogDriver`` (over any object driver).
OBJECT_LOG_DIVERGENCES: dict[str, str] = {
    "test_list_logs_lists_live_logs_under_the_prefix_in_key_order": _FOLDER_ORDER,
    "test_list_logs_pages_return_each_log_once_in_order": _FOLDER_ORDER,
    "test_list_logs_after_is_exclusive_and_need_not_be_a_key": _FOLDER_ORDER,
}

#: Concurrent conditional appends in one race.
_RACERS = 8

#: Rounds of each race clause, each on a new log: a check-then-act store loses every round it
#: races in, and the rounds keep the clause fast (a few milliseconds each on a local server).
_RACE_ROUNDS = 4

#: Prefix fragments that mean something to a glob, a regex, SQL ``LIKE`` or a path; each prefix
#: built from them has siblings that a pattern-matching implementation would wrongly list.
_LITERAL_FRAGMENTS = tuple(f for f in ADVERSARIAL_FRAGMENTS if pattern_like(f))


@dataclass(frozen=True)
class LogDriverCapabilities:
    """What a log driver declares beyond the minimal contract (every default is "no").

    Attributes:
        ttl: ``append(..., ttl=)`` is honoured: the log expires ``ttl`` seconds after that
            append, and is then absent for every method. The expiry clauses run on the suite's
            fake clock (``fake_clock = True`` on the class, the factory's drivers built with the
            ``clock`` fixture), never waiting.
        native_expiry: With ``ttl``: the backend also removes expired logs by itself, on the
            server's own clock (Redis ``PEXPIRE``, a MongoDB TTL index). Informational: the
            expiry clauses' fake clock starts now and their ttl is long, so the server's own
            expiry never acts within a clause.
        concurrent_instances: Two driver instances from the factory (two connections, two
            clients) decide conditional appends atomically between them: of N appends racing
            on one expected version, exactly one wins. Atomicity among concurrent calls on one
            instance is always required.
        conditional_delete: The driver offers ``delete_if_version``
            (:class:`~agent_stores.core.drivers.ConditionalLogDelete`): it removes a log only
            while it is at a version, in one atomic step, and an append racing it on that
            version loses or wins whole. What retention sweeps and opt-in retention rely on to
            never delete a message written while they ran.

    """

    ttl: bool = False
    native_expiry: bool = False
    concurrent_instances: bool = False
    conditional_delete: bool = False


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


def _records(label: str, count: int, *, start: int = 0) -> list[LogRecord]:
    """``count`` records whose digests and payloads name ``label`` and their position."""
    return [LogRecord(f"{label}-{i}", f"{label} record {i}".encode()) for i in range(start, start + count)]


def _payloads(records: Sequence[LogRecord]) -> list[bytes]:
    return [r.payload for r in records]


def _digests(records: Sequence[LogRecord]) -> list[str]:
    return [r.digest for r in records]


#: What clauses rely on, besides their own subject (see ``relies_on``).
_CONDITIONAL_APPEND = (
    "an append at a version the log is not at raises StoreConflictError and stores nothing "
    "(test_append_at_a_wrong_version_conflicts_and_stores_nothing)"
)
_FRESH_VERSIONS = (
    "a version is never reused, not even by a log deleted and written again "
    "(test_versions_never_repeat_after_delete_and_rewrite)"
)
_READ_LAST = "read(last=n) returns the newest n records (test_read_last_returns_the_newest_records_oldest_first)"
_ONE_INSTANCE = (
    "racing appends on one instance: exactly one wins (test_concurrent_appends_on_one_instance_exactly_one_wins)"
)


class LogDriverConformance(ConformanceBase):
    """Clauses every log driver must pass; optional ones are selected by ``capabilities``.

    Provide a ``log_driver_factory`` fixture (see the module docstring), declare a
    :class:`LogDriverCapabilities`, and list known deviations in ``divergences`` with a reason.
    """

    capabilities: ClassVar[LogDriverCapabilities] = LogDriverCapabilities()
    factory_fixture: ClassVar[str] = "log_driver_factory"

    #: The ttl the expiry clauses append with, in seconds of the fake clock: long, so a server's
    #: own expiry by its real clock (a MongoDB TTL index) never acts within a clause.
    ttl_seconds: ClassVar[float] = 600.0

    @pytest.fixture
    def open_driver(self, open_store: Callable[..., Awaitable[Any]]) -> OpenDriver:
        """Return a callable opening one more driver over the backing data (closed after the clause)."""

        async def open_one() -> LogDriver:
            return cast(LogDriver, await open_store())

        return open_one

    @pytest.fixture
    def prefix(self) -> str:
        """This clause's own key prefix; the clause touches no key outside it."""
        return unique_id("log-driver") + "/"

    @staticmethod
    async def _assert_absent(driver: LogDriver, key: str, prefix: str, *, why: str) -> None:
        """Assert ``key`` is absent for every read method (``delete`` is checked by the callers)."""
        tail = await driver.tail(key, 10)
        assert tail == (0, [], None), f"{why}: tail returned {tail!r}, expected (0, [], None)"
        assert await driver.read(key) == [], f"{why}: read returned records"
        assert await driver.read(key, last=3) == [], f"{why}: read(last=3) returned records"
        assert await driver.length(key) == 0, f"{why}: length is not 0"
        listed = [log.key for log in await driver.list_logs(prefix, limit=1000)]
        assert key not in listed, f"{why}: list_logs still lists it"

    # -- basics -------------------------------------------------------------------------------

    async def test_driver_implements_the_protocol(self, open_driver: OpenDriver) -> None:
        """The factory's driver is a ``LogDriver``: every method exists and is a coroutine function.

        Failure means a method is missing or synchronous (a blocking call on the event loop, or
        a result the core cannot ``await``).
        """
        driver = await open_driver()
        assert isinstance(driver, LogDriver), f"{type(driver).__name__} lacks methods of LogDriver"
        names = ("tail", "append", "read", "length", "delete", "list_logs", "purge_expired", "aclose")
        synchronous = [name for name in names if not inspect.iscoroutinefunction(getattr(driver, name))]
        assert not synchronous, f"not coroutine functions: {synchronous}"

    async def test_absent_log_is_empty_for_every_method(self, open_driver: OpenDriver, prefix: str) -> None:
        """A key never written reads as an empty log at version ``None``, and ``delete`` returns ``False``.

        Failure means the driver raises for a missing key, invents a version (0, "", a length)
        for an absent log, or lists keys nobody wrote. The core appends to a new log with
        ``expected_version=None``, so an absent log must report exactly ``None``.
        """
        driver = await open_driver()
        key = prefix + "never-written"
        await self._assert_absent(driver, key, prefix, why="a key never written")
        assert await driver.delete(key) is False, "delete of a key never written returned True"

    async def test_append_creates_the_log_at_the_version_it_returns(self, open_driver: OpenDriver, prefix: str) -> None:
        """The first append (``expected_version=None``) creates the log; ``tail`` reports the version it returned.

        Failure means the new version is ``None``, ``tail`` reports a different version than
        ``append`` returned (the core remembers the returned one and conditions its next append
        on it), or the length and digests are wrong. Return the version the log is now at.
        """
        driver = await open_driver()
        key = prefix + "log"
        records = _records("a", 3)
        version = await driver.append(key, records, expected_version=None, session_id="s")
        assert version is not None, "append returned version None for a log that now exists"
        tail = await driver.tail(key, 10)
        assert tail == (3, _digests(records), version), f"tail after the first append: {tail!r}"
        assert await driver.length(key) == 3, "length after appending 3 records to a new log is not 3"

    async def test_records_read_back_in_append_order(self, open_driver: OpenDriver, prefix: str) -> None:
        """``read`` returns every payload in append order, within one append and across appends.

        Failure means the driver orders records by something else (payload, digest, a hash, a
        timestamp with ties) or reverses a batch. Keep an explicit per-log sequence.
        """
        driver = await open_driver()
        key = prefix + "log"
        batches = [_records("z", 3), _records("a", 1), _records("m", 4)]
        version: LogVersion = None
        for batch in batches:
            version = await driver.append(key, batch, expected_version=version, session_id="s")
        everything = [r for batch in batches for r in batch]
        assert await driver.read(key) == _payloads(everything), "read did not return every record in append order"
        tail = await driver.tail(key, 100)
        assert tail.digests == _digests(everything), "tail digests are not in append order"
        assert tail.length == len(everything) == await driver.length(key), (
            "tail.length, the records appended and length() disagree"
        )

    async def test_tail_returns_the_newest_digests_oldest_first(self, open_driver: OpenDriver, prefix: str) -> None:
        """``tail(key, n)`` returns the full length, the version and the last ``min(length, n)`` digests, oldest first.

        Failure means the driver returns the oldest digests, reverses them, returns more than
        asked, or reports the number of digests instead of the log's length. The core
        de-duplicates against exactly these digests.
        """
        driver = await open_driver()
        key = prefix + "log"
        records = _records("d", 6)
        version = await driver.append(key, records[:2], expected_version=None, session_id="s")
        version = await driver.append(key, records[2:], expected_version=version, session_id="s")
        for count in (0, 1, 4, 6, 50):
            expected = _digests(records)[len(records) - min(count, len(records)) :]
            tail = await driver.tail(key, count)
            assert tail == (6, expected, version), f"tail(key, {count}) returned {tail!r}"

    async def test_read_last_returns_the_newest_records_oldest_first(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """``read(key, last=n)`` returns the newest ``n`` payloads in append order (all of them when fewer).

        Failure means the window is the oldest records, is reversed, ignores ``last``, or
        ``last=0`` returns everything. The provider's ``max_messages`` window is this call.
        """
        driver = await open_driver()
        key = prefix + "log"
        records = _records("w", 5)
        version = await driver.append(key, records[:3], expected_version=None, session_id="s")
        await driver.append(key, records[3:], expected_version=version, session_id="s")
        for last in (0, 1, 2, 5, 9):
            expected = _payloads(records)[len(records) - min(last, len(records)) :]
            assert await driver.read(key, last=last) == expected, (
                f"read(last={last}) did not return the newest {last} records, oldest first"
            )
        assert await driver.read(key, last=None) == _payloads(records), "read(last=None) did not return the whole log"

    async def test_delete_removes_the_whole_log_and_reports_whether_it_existed(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """``delete`` returns ``True`` once, then ``False``; the log is then absent and can be started anew.

        Failure means records survive the delete (they reappear in the next log under that
        key), the flag is wrong, or a new log cannot be created with ``expected_version=None``.
        """
        driver = await open_driver()
        key = prefix + "log"
        await driver.append(key, _records("old", 3), expected_version=None, session_id="s")
        assert await driver.delete(key) is True, "delete of an existing log returned False"
        await self._assert_absent(driver, key, prefix, why="a deleted log")
        assert await driver.delete(key) is False, "a second delete returned True"
        fresh = _records("new", 2)
        version = await driver.append(key, fresh, expected_version=None, session_id="s")
        assert await driver.tail(key, 10) == (2, _digests(fresh), version), (
            "the log written after the delete is not exactly its new records"
        )
        assert await driver.read(key) == _payloads(fresh), "records of the deleted log came back"

    async def test_logs_with_related_keys_are_independent(self, open_driver: OpenDriver, prefix: str) -> None:
        """Keys that prefix each other, differ in case, or end in a separator are separate logs; keys may be long.

        The core's keys are up to about 550 ASCII characters; the long key here is 600 random
        characters (a repeated character would compress to nothing in a database that compresses
        indexed values, and hide its real limit), and a sibling differing only in its last
        character. Failure means the driver matches keys by prefix or pattern (a delete or read
        reaching a neighbour), folds case, strips characters, cuts long keys, or cannot index
        them. Address each log by its exact key.
        """
        driver = await open_driver()
        base = prefix + "log"
        long = base + "/" + incompressible(600 - len(base) - 2, "log key")
        keys = [base, base + "/", base + "/x", base + "x", base.upper(), base + "*", base + " ", base + "\t"]
        keys += [base + "\x7f", base + "\U0001f600", long + "a", long + "b"]
        for i, key in enumerate(keys):
            await driver.append(key, _records(f"k{i}", i + 1), expected_version=None, session_id=f"s{i}")
        for i, key in enumerate(keys):
            assert await driver.read(key) == _payloads(_records(f"k{i}", i + 1)), (
                f"log {brief(key, prefix)} holds other records"
            )
        assert await driver.delete(keys[0]) is True, "delete of an existing log returned False"
        for i, key in enumerate(keys[1:], start=1):
            assert await driver.length(key) == i + 1, f"deleting {brief(keys[0], prefix)} changed {brief(key, prefix)}"

    async def test_instances_share_the_backing_data(self, open_driver: OpenDriver, prefix: str) -> None:
        """A driver opened later sees what another instance appended, and can append after it.

        Failure means the factory does not return drivers over the same backing data (the
        suite cannot check concurrency then), or the driver caches state that is never re-read.
        """
        first = await open_driver()
        key = prefix + "log"
        version = await first.append(key, _records("a", 2), expected_version=None, session_id="s")
        second = await open_driver()
        assert await second.tail(key, 5) == (2, ["a-0", "a-1"], version), (
            "the second driver does not see the log the first wrote"
        )
        version = await second.append(key, _records("b", 1), expected_version=version, session_id="s")
        assert await first.tail(key, 5) == (3, ["a-0", "a-1", "b-0"], version), (
            "the first driver does not see the append the second made"
        )

    @relies_on(_READ_LAST)
    async def test_payloads_round_trip_byte_exact(self, open_driver: OpenDriver, prefix: str) -> None:
        """Payloads of every byte value, empty, invalid UTF-8 and of 2 MB come back exactly, as ``bytes``.

        Failure means the driver decodes payloads as text, strips NUL or trailing bytes,
        truncates large values, or returns another type (``str``, ``memoryview``). Store
        payloads as opaque binary values.
        """
        driver = await open_driver()
        key = prefix + "log"
        payloads = [
            bytes(range(256)),
            b"",
            b"\x00",
            b"\xff\xfe\x80 not utf-8 \xc3\x28",
            b"trailing space and newline \n ",
            random.Random(7).randbytes(2 << 20),
        ]
        records = [LogRecord(f"p-{i}", p) for i, p in enumerate(payloads)]
        await driver.append(key, records, expected_version=None, session_id="s")
        got = await driver.read(key)
        assert [type(p) for p in got] == [bytes] * len(payloads), f"payload types: {[type(p) for p in got]}"
        for i, (stored, expected) in enumerate(zip(got, payloads, strict=True)):
            assert stored == expected, f"payload {i} ({len(expected)} bytes) came back as {len(stored)} other bytes"
        assert await driver.read(key, last=2) == payloads[-2:], "read(last=2) did not return the last two payloads"

    @relies_on(_CONDITIONAL_APPEND)
    async def test_large_batches_append_atomically(self, open_driver: OpenDriver, prefix: str) -> None:
        """A batch of 1,000 records appends as one; a conflicting batch of 1,000 stores none of its records.

        Failure means a large batch is split into several writes that are not one atomic
        unit (a conflict detected half-way leaves records behind), or a batch is cut short.
        Split large batches only inside one transaction or script.
        """
        driver = await open_driver()
        key = prefix + "log"
        batch = _records("big", 1000)
        version = await driver.append(key, batch, expected_version=None, session_id="s")
        with raises(
            StoreConflictError, "a batch of 1,000 records appended with expected_version=None to an existing log"
        ):
            await driver.append(key, _records("lost", 1000), expected_version=None, session_id="s")
        assert await driver.tail(key, 3) == (1000, ["big-997", "big-998", "big-999"], version), (
            "the log is not exactly the first batch after a conflicting batch"
        )
        assert await driver.read(key) == _payloads(batch), "a conflicting batch left records behind"

    async def test_empty_append_is_refused_with_value_error(self, open_driver: OpenDriver, prefix: str) -> None:
        """``append`` of no records raises ``ValueError`` and changes nothing, whatever the expected version.

        ``drivers.py`` specifies it: an empty batch is a mistake of the caller (the core never
        sends one). Failure means the driver created an empty log (listed, with a version),
        moved the version of an existing one, or answered with another error or a version.
        """
        driver = await open_driver()
        key, absent = prefix + "log", prefix + "absent"
        version = await driver.append(key, _records("a", 2), expected_version=None, session_id="s")
        for target, expected in ((absent, None), (key, version), (key, None)):
            with raises(ValueError, f"an append of no records (expected_version={expected!r})"):
                await driver.append(target, [], expected_version=expected, session_id="s")
        assert await driver.tail(key, 5) == (2, ["a-0", "a-1"], version), "an empty append changed the log"
        await self._assert_absent(driver, absent, prefix, why="an empty append to an absent log")

    async def test_nul_in_keys_is_refused_with_value_error_or_kept(self, open_driver: OpenDriver, prefix: str) -> None:
        r"""A key, prefix or ``after`` holding NUL is either handled exactly or refused with ``ValueError``.

        ``drivers.py`` lets a driver refuse NUL (a SQL ``text`` column cannot hold it); what it
        may not do is fail with a raw client error or ``StoreUnavailableError``, or cut the key
        at the NUL (``a\x00b`` read as ``a``). Refuse before writing anything.
        """
        driver = await open_driver()
        plain = prefix + "a"
        await driver.append(plain, _records("plain", 1), expected_version=None, session_id="s")
        nul = prefix + "a\x00b"
        if await _refused(lambda: driver.append(nul, _records("nul", 1), expected_version=None, session_id="s")):
            assert await driver.read(plain) == _payloads(_records("plain", 1)), "a refused key reached another log"
        else:
            assert await driver.read(nul) == _payloads(_records("nul", 1)), "a key holding NUL was not kept"
            assert await driver.read(plain) == _payloads(_records("plain", 1)), "a key holding NUL was cut at NUL"
            await driver.delete(nul)
        listed: list[LogInfo] = []

        async def list_after() -> None:
            listed[:] = await driver.list_logs(prefix, after=prefix + "\x00")

        if not await _refused(list_after):
            assert [log.key for log in listed] == [plain], (
                f"list_logs(after=prefix + NUL) listed {brief(listed, prefix)}"
            )

        async def list_under() -> None:
            listed[:] = await driver.list_logs(prefix + "\x00")

        if not await _refused(list_under):
            assert listed == [], f"list_logs(prefix + NUL) listed {brief(listed, prefix)}"

    # -- conditional append and versions ------------------------------------------------------

    async def test_append_at_a_wrong_version_conflicts_and_stores_nothing(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """An append whose ``expected_version`` is not the log's current version raises ``StoreConflictError``.

        Checked: ``None`` for a log that exists, an older version of the log, the version of
        another log, and a version for a log that does not exist. Failure means an append
        succeeded against a state the writer never saw (a lost de-duplication decision), or a
        conflicting append stored some records. Compare and append in one atomic step.
        """
        driver = await open_driver()
        key, other = prefix + "log", prefix + "other"
        old = await driver.append(key, _records("a", 1), expected_version=None, session_id="s")
        current = await driver.append(key, _records("a", 1, start=1), expected_version=old, session_id="s")
        elsewhere = await driver.append(other, _records("o", 1), expected_version=None, session_id="s")
        assert current != old, f"an append kept the version {old!r}"
        for wrong in (None, old, elsewhere):
            if wrong == current:
                continue  # versions are per log: another log's may equal this one's
            with raises(StoreConflictError, f"an append at version {wrong!r} to a log at version {current!r}"):
                await driver.append(key, _records("lost", 2), expected_version=wrong, session_id="s")
        assert await driver.tail(key, 10) == (2, ["a-0", "a-1"], current), "a conflicting append changed the log"
        absent = prefix + "absent"
        for wrong in (current, elsewhere):
            with raises(StoreConflictError, f"an append at version {wrong!r} to a log that does not exist"):
                await driver.append(absent, _records("lost", 1), expected_version=wrong, session_id="s")
        await self._assert_absent(driver, absent, prefix, why="a conditional append to an absent log that conflicted")

    async def test_every_append_moves_the_log_to_a_new_version(self, open_driver: OpenDriver, prefix: str) -> None:
        """Each append returns a version the log never had before, including appends of identical records.

        Failure means two states of the log share a version, so a writer holding the older one
        appends without conflict after records it never saw. Derive versions from a counter or
        random token, never from the content or the length alone.
        """
        driver = await open_driver()
        key = prefix + "log"
        seen: list[LogVersion] = []
        version: LogVersion = None
        for _ in range(6):
            version = await driver.append(key, _records("same", 1), expected_version=version, session_id="s")
            assert version not in seen, f"version {version!r} repeated after {len(seen)} appends"
            seen.append(version)

    @relies_on(_CONDITIONAL_APPEND)
    async def test_versions_never_repeat_after_delete_and_rewrite(self, open_driver: OpenDriver, prefix: str) -> None:
        """A log deleted and written again, with the same records, never returns to a version it had.

        Failure means a version derived from the length (or a counter kept in the log itself):
        a provider that remembered the old log's end then appends to the new log without a
        conflict, after records it never read, and messages are lost or duplicated.
        """
        driver = await open_driver()
        key = prefix + "log"
        before: list[LogVersion] = []
        for round_ in range(2):
            version: LogVersion = None
            for i in range(3):
                version = await driver.append(key, _records("r", 1, start=i), expected_version=version, session_id="s")
                assert version not in before, f"round {round_}: version {version!r} of the earlier log came back"
                before.append(version)
            assert await driver.delete(key) is True, f"round {round_}: delete of an existing log returned False"
        for stale in before:
            with raises(StoreConflictError, f"an append at version {stale!r} of the deleted log, to the rewritten one"):
                await driver.append(key, _records("lost", 1), expected_version=stale, session_id="s")

    @relies_on(_CONDITIONAL_APPEND, _FRESH_VERSIONS)
    async def test_stale_writer_conflicts_after_another_deleted_and_rewrote_the_log(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """Instance A reads the end; instance B deletes and rewrites the log to the same length; A's append conflicts.

        This is the history provider's remembered log end. Failure means A's append lands on
        B's log as if nothing happened, so A's de-duplication decision was taken against
        records that no longer exist. Never reuse a version across delete.
        """
        first, second = await open_driver(), await open_driver()
        key = prefix + "log"
        await first.append(key, _records("a", 2), expected_version=None, session_id="s")
        remembered = await first.tail(key, 2)
        assert await second.delete(key) is True, "delete of an existing log returned False"
        rewritten = await second.append(key, _records("b", 2), expected_version=None, session_id="s")
        with raises(
            StoreConflictError, "an append at the version a writer read before another deleted and rewrote the log"
        ):
            await first.append(key, _records("a", 1, start=2), expected_version=remembered.version, session_id="s")
        assert await first.tail(key, 5) == (2, ["b-0", "b-1"], rewritten), (
            "a stale writer's refused append changed the rewritten log"
        )

    @relies_on(_CONDITIONAL_APPEND)
    async def test_interleaved_conditional_appends_exactly_one_wins(self, open_driver: OpenDriver, prefix: str) -> None:
        """Two drivers read the end, then both append on it: the first wins, the second conflicts, stores nothing.

        Checked for a new log (both expect ``None``) and for an existing one. Failure means
        both appends landed (the condition is not checked at write time, or the second writer
        overwrote the first), or the losing append left records. This is how concurrent saves
        of one session are kept apart.
        """
        first, second = await open_driver(), await open_driver()
        key = prefix + "log"
        expected: LogVersion = None
        stored: list[LogRecord] = []
        for round_ in range(3):
            seen_first, seen_second = await first.tail(key, 5), await second.tail(key, 5)
            assert seen_first == seen_second, f"round {round_}: the two drivers disagree on the log's end"
            assert seen_first.version == expected, (
                f"round {round_}: the log is not at the version the winning append returned"
            )
            won = _records(f"first{round_}", 2)
            expected = await first.append(key, won, expected_version=seen_first.version, session_id="s")
            stored.extend(won)
            with raises(StoreConflictError, f"round {round_}: the second writer's append at the version both read"):
                await second.append(
                    key, _records(f"second{round_}", 1), expected_version=seen_second.version, session_id="s"
                )
            assert await second.read(key) == _payloads(stored), f"round {round_}: the losing append stored records"
            assert await second.tail(key, 0) == (len(stored), [], expected), (
                "tail(key, 0) is not the log's length and version with no digests"
            )

    async def _race(self, drivers: Sequence[LogDriver], key: str, expected: LogVersion) -> list[LogRecord]:
        """Race ``_RACERS`` appends on ``expected`` over ``drivers``; assert one winner; return the winner's records.

        Every racer first makes a call of its own (so a lazily opened connection or pool is
        open), then all start together at a barrier: a driver that checks and then writes
        cannot slip through because the racers happened to arrive one after another.
        """
        batches = [_records(f"racer{i}", 2) for i in range(_RACERS)]
        barrier = asyncio.Barrier(_RACERS)

        async def attempt(i: int) -> LogVersion:
            driver = drivers[i % len(drivers)]
            await race_start(barrier, driver.tail(key, 0))
            return await driver.append(key, batches[i], expected_version=expected, session_id="s")

        outcomes = await asyncio.gather(*(attempt(i) for i in range(_RACERS)), return_exceptions=True)
        unexpected = [o for o in outcomes if isinstance(o, BaseException) and not isinstance(o, StoreConflictError)]
        assert not unexpected, f"racing appends raised something other than StoreConflictError: {unexpected!r}"
        winners = [i for i, o in enumerate(outcomes) if not isinstance(o, BaseException)]
        what = "create the log" if expected is None else "extend the log"
        assert len(winners) == 1, f"{len(winners)} of {_RACERS} appends racing to {what} on one version succeeded"
        tail = await drivers[0].tail(key, 0)
        assert tail.version == outcomes[winners[0]], "the log is not at the version the winning append returned"
        return batches[winners[0]]

    async def _check_races(self, drivers: Sequence[LogDriver], prefix: str) -> None:
        """``_RACE_ROUNDS`` rounds, each on a new log: one race to create it, one to extend it."""
        for round_ in range(_RACE_ROUNDS):
            key = f"{prefix}log-{round_}"
            stored = await self._race(drivers, key, None)
            stored = stored + await self._race(drivers, key, (await drivers[0].tail(key, 0)).version)
            assert await drivers[-1].read(key) == _payloads(stored), "losing appends left records, or the log lost some"

    @relies_on(_CONDITIONAL_APPEND)
    async def test_concurrent_appends_on_one_instance_exactly_one_wins(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """Eight appends racing on one expected version through one driver: exactly one wins, the rest conflict.

        Checked when creating a log and when extending it, in four rounds, every racer warmed up
        and released at a barrier. Failure means the driver checks the
        version and appends in two steps with an await in between. Use one atomic operation (a
        conditional write, a transaction, a server-side script).
        """
        await self._check_races([await open_driver()], prefix)

    @relies_on(_CONDITIONAL_APPEND, _ONE_INSTANCE)
    @requires("concurrent_instances")
    async def test_concurrent_appends_across_instances_exactly_one_wins(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """Eight appends racing on one expected version through four drivers: exactly one wins, the rest conflict.

        Failure means atomicity is only per instance (an ``asyncio.Lock`` in the driver), so
        two processes saving one session lose or duplicate messages. Let the server decide.
        """
        await self._check_races([await open_driver() for _ in range(4)], prefix)

    # -- conditional delete -------------------------------------------------------------------

    @relies_on(_FRESH_VERSIONS)
    @requires("conditional_delete")
    async def test_delete_if_version_removes_only_at_the_current_version(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """``delete_if_version`` removes a log at its current version; a stale version or an absent log conflicts.

        A refused delete removes nothing: the log keeps every record. Failure means the driver
        ignores the version (a retention sweep would then delete a message written after it
        looked), or reports success for a log that is not there. Check the version and delete
        in one atomic step (a conditional statement, a script, a conditional write).
        """
        driver = await open_driver()
        deleter = conditional_delete(driver)
        key, absent = prefix + "log", prefix + "absent"
        first, second = _records("a", 2), _records("b", 1)
        stale = await driver.append(key, first, expected_version=None, session_id="s")
        current = await driver.append(key, second, expected_version=stale, session_id="s")
        with raises(StoreConflictError, "delete_if_version at a version the log has left"):
            await deleter.delete_if_version(key, stale)
        assert await driver.read(key) == _payloads(first + second), "a refused delete_if_version removed records"
        assert (await driver.tail(key, 0)).version == current, "a refused delete_if_version moved the version"
        with raises(StoreConflictError, "delete_if_version of a log never written"):
            await deleter.delete_if_version(absent, current)
        await self._assert_absent(driver, absent, prefix, why="a refused delete_if_version of an absent log")
        assert await deleter.delete_if_version(key, current) is True, "delete_if_version did not return True"
        await self._assert_absent(driver, key, prefix, why="after delete_if_version at the current version")
        with raises(StoreConflictError, "delete_if_version of a log already deleted, at its last version"):
            await deleter.delete_if_version(key, current)

    @relies_on(_CONDITIONAL_APPEND)
    @requires("conditional_delete")
    async def test_delete_if_version_racing_an_append_exactly_one_wins(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """An append and a ``delete_if_version`` racing on one version: exactly one wins, and nothing else is lost.

        In four rounds, each on a new log, both start together at a barrier (through two drivers
        when the driver declares ``concurrent_instances``). When the append wins, the log holds
        every record and the delete conflicted; when the delete wins, the log is gone and the
        append conflicted. Failure means the delete checks the version and then deletes in two
        steps, so a message appended in between is deleted with the log.
        """
        drivers = [await open_driver() for _ in range(2 if self.capabilities.concurrent_instances else 1)]
        for round_ in range(_RACE_ROUNDS):
            key = f"{prefix}log-{round_}"
            first, more = _records("first", 2), _records("more", 1)
            version = await drivers[0].append(key, first, expected_version=None, session_id="s")
            appended, deleted = await self._race_delete(drivers[-1], drivers[0], key, version, more)
            assert appended != deleted, (
                "both the append and delete_if_version on one version succeeded: the appended record was deleted"
                if appended
                else "neither the append nor delete_if_version on one version succeeded"
            )
            if appended:
                assert await drivers[0].read(key) == _payloads(first + more), "the log lost records"
            else:
                await self._assert_absent(drivers[0], key, prefix, why="after delete_if_version won the race")

    @staticmethod
    async def _race_delete(
        appender: LogDriver, deleter: LogDriver, key: str, version: LogVersion, records: list[LogRecord]
    ) -> tuple[bool, bool]:
        """Start an append and a ``delete_if_version`` on ``version`` together; return which succeeded."""
        barrier = asyncio.Barrier(2)

        async def append() -> object:
            await race_start(barrier, appender.tail(key, 0))
            return await appender.append(key, records, expected_version=version, session_id="s")

        async def delete() -> object:
            await race_start(barrier, deleter.tail(key, 0))
            return await conditional_delete(deleter).delete_if_version(key, version)

        outcomes = await asyncio.gather(append(), delete(), return_exceptions=True)
        unexpected = [o for o in outcomes if isinstance(o, BaseException) and not isinstance(o, StoreConflictError)]
        assert not unexpected, f"raised something other than StoreConflictError: {unexpected!r}"
        return not isinstance(outcomes[0], BaseException), not isinstance(outcomes[1], BaseException)

    # -- listing ------------------------------------------------------------------------------

    async def test_list_logs_lists_live_logs_under_the_prefix_in_key_order(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """``list_logs(prefix)`` returns every live log whose key starts with ``prefix``, by key, with its session id.

        Keys sharing only part of the prefix, and deleted logs, are not listed; a key equal to
        the prefix is. Failure means the wrong keys, a wrong order (not code-point order), or
        session ids that are not the ones given when each log was created.
        """
        driver = await open_driver()
        keys = [prefix, prefix + "b", prefix + "a", prefix + "a/x", prefix + "B", prefix + "é", prefix + "😀"]
        for i, key in enumerate(keys):
            await driver.append(key, _records("r", 1), expected_version=None, session_id=f"session {i} ü")
        outside = [prefix[:-1], prefix[:-1] + "0", prefix[:-1] + ".", prefix[:-2]]
        for key in outside:
            await driver.append(key, _records("r", 1), expected_version=None, session_id="outside")
        await driver.append(prefix + "gone", _records("r", 1), expected_version=None, session_id="gone")
        await driver.delete(prefix + "gone")
        listed = await driver.list_logs(prefix, limit=1000)
        expected = sorted((LogInfo(k, f"session {i} ü") for i, k in enumerate(keys)), key=lambda log: log.key)
        assert listed == expected, (
            "list_logs did not list every log under the prefix, in key order, with its session id"
        )
        for key in outside:
            await driver.delete(key)

    async def test_list_logs_keeps_the_session_id_of_the_log_now_stored(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """A log deleted and created again is listed with the session id given when it was created again.

        Failure means the driver keeps metadata of a deleted log (the session id, or the log
        itself) after ``delete``; ``list_sessions`` would then report a stale id.
        """
        driver = await open_driver()
        key = prefix + "log"
        await driver.append(key, _records("r", 1), expected_version=None, session_id="before")
        await driver.delete(key)
        await driver.append(key, _records("r", 1), expected_version=None, session_id="after")
        assert await driver.list_logs(prefix) == [LogInfo(key, "after")], (
            "list_logs does not show the session id of the log now stored"
        )

    async def test_list_logs_pages_return_each_log_once_in_order(self, open_driver: OpenDriver, prefix: str) -> None:
        """Paging with ``after`` = the last key of a page, any ``limit``, returns each live log exactly once, in order.

        A page holds the ``limit`` smallest keys after ``after``, so only the last page is short
        (the core's ``iter_sessions`` stops at a short page). Failure means ``after`` is
        inclusive (the boundary key repeats, and a walk never ends), ignored, or pages skip
        keys. The walk is bounded: a driver that pages forever fails here instead of hanging.
        """
        driver = await open_driver()
        keys = sorted(prefix + name for name in ("a", "b", "b/1", "c", "C", "d-", "d/", "é", "~"))
        for key in keys:
            await driver.append(key, _records("r", 1), expected_version=None, session_id=key)
        full = await driver.list_logs(prefix, limit=1000)
        assert [log.key for log in full] == keys, "list_logs did not list every log under the prefix in key order"
        for limit in (1, 2, 4, len(keys), len(keys) + 1):

            async def page(after: str | None, limit: int = limit) -> list[LogInfo]:
                return await driver.list_logs(prefix, after=after, limit=limit)

            walked = await collect_pages(
                f"list_logs(limit={limit})", page, name=lambda log: log.key, page_size=limit, most=len(keys) + 2
            )
            assert walked == full, f"paging with limit={limit} listed {[log.key for log in walked]}"

    async def test_list_logs_after_is_exclusive_and_need_not_be_a_key(
        self, open_driver: OpenDriver, prefix: str
    ) -> None:
        """``after`` keeps only keys strictly greater than it, whether or not it is a key itself.

        Failure means ``after`` is inclusive, compared in another order than code points, or
        only works when it names an existing key (a session deleted between two pages).
        """
        driver = await open_driver()
        keys = [prefix + name for name in ("a", "b", "d")]
        for key in keys:
            await driver.append(key, _records("r", 1), expected_version=None, session_id=key)
        cases = {
            prefix + "a": keys[1:],
            prefix + "c": keys[2:],
            prefix + "a\x01": keys[1:],
            prefix[:-1]: keys,
            prefix + "d": [],
            prefix + "\U0010ffff": [],
        }
        for after, expected in cases.items():
            listed = [log.key for log in await driver.list_logs(prefix, after=after, limit=10)]
            assert listed == expected, (
                f"list_logs(after={brief(after, prefix)}) listed {brief(listed, prefix)}, "
                f"expected {brief(expected, prefix)}"
            )

    async def test_list_logs_prefix_is_literal(self, open_driver: OpenDriver, prefix: str) -> None:
        r"""Prefixes holding glob, regex and SQL ``LIKE`` characters (``* ? [ ] % _ \ .``) and unicode are literal.

        Each prefix has siblings that match it only when it is read as a pattern. Failure
        means the prefix reaches a ``SCAN MATCH``, ``LIKE``, ``$regex`` or glob unescaped.
        """
        driver = await open_driver()
        lookalikes = [prefix + name for name in ("x/log", "a/log", "b/log", "xx/log", "u\u0308/log", "Ü/log", "/log")]
        keys = [*lookalikes, *(f"{prefix}{fragment}/log" for fragment in _LITERAL_FRAGMENTS)]
        for key in keys:
            await driver.append(key, _records("r", 1), expected_version=None, session_id="s")
        for fragment in _LITERAL_FRAGMENTS:
            scope = prefix + fragment
            listed = [log.key for log in await driver.list_logs(scope, limit=1000)]
            expected = sorted(k for k in keys if k.startswith(scope))
            assert listed == expected, (
                f"list_logs({brief(scope, prefix)}) listed {brief(listed, prefix)}, expected {brief(expected, prefix)}"
            )

    # -- expiry -------------------------------------------------------------------------------

    @requires("ttl", fake_clock=True)
    async def test_expired_log_is_absent_for_every_method(
        self, open_driver: OpenDriver, prefix: str, clock: FakeClock
    ) -> None:
        """After its ttl, a log reads as empty at version ``None``, is not listed, and ``delete`` returns ``False``.

        A log appended to with ``ttl=None`` after an append with a ttl no longer expires, and
        the expired key is then written afresh. Failure means some method still sees the
        expired records (``length`` counting them, ``list_logs`` listing the log, ``delete``
        reporting it existed), so sessions come back or are counted after they expired, or
        an append without ttl kept the old expiry. Filter expired logs in every read.
        """
        driver = await open_driver()
        ttl = self.ttl_seconds
        key, live = prefix + "expiring", prefix + "live"
        await driver.append(key, _records("r", 3), expected_version=None, session_id="s", ttl=ttl)
        permanent = await driver.append(live, _records("r", 1), expected_version=None, session_id="s", ttl=ttl)
        await driver.append(live, _records("r", 1, start=1), expected_version=permanent, session_id="s", ttl=None)
        clock.advance(ttl - 1)
        assert await driver.length(key) == 3, "the log expired before its ttl"
        clock.advance(2)
        assert await driver.length(live) == 2, "an append with ttl=None did not remove the log's expiry"
        await self._assert_absent(driver, key, prefix, why="an expired log")
        assert await driver.delete(key) is False, "delete of an expired log returned True"
        assert [log.key for log in await driver.list_logs(prefix)] == [live], (
            "list_logs lists an expired log, or not the live one beside it"
        )
        await self._write_afresh(driver, key, prefix, session_id="again", why="an expired log")

    @relies_on(_CONDITIONAL_APPEND, _FRESH_VERSIONS)
    @requires("ttl", fake_clock=True)
    async def test_append_after_expiry_starts_a_new_log_at_a_new_version(
        self, open_driver: OpenDriver, prefix: str, clock: FakeClock
    ) -> None:
        """After expiry, ``expected_version=None`` starts a new log of only the new records, at a never-seen version.

        An append with the expired log's version conflicts. Failure means the expired records
        reappear once the log is written again, the old version still matches (a version
        derived from the length), or a new log cannot be started. Remove the expired records
        atomically with the first append after expiry.
        """
        driver = await open_driver()
        key = prefix + "log"
        old = await driver.append(key, _records("old", 2), expected_version=None, session_id="s", ttl=self.ttl_seconds)
        clock.advance(self.ttl_seconds + 1)
        with raises(StoreConflictError, "an append at the version of a log that has expired since"):
            await driver.append(key, _records("lost", 1), expected_version=old, session_id="s")
        fresh = _records("new", 2)
        version = await driver.append(key, fresh, expected_version=None, session_id="s", ttl=self.ttl_seconds)
        assert version is not None and version != old, f"the new log reuses the expired log's version {old!r}"
        assert await driver.tail(key, 10) == (2, _digests(fresh), version), (
            "the log written after expiry is not exactly its new records, at the version returned"
        )
        assert await driver.read(key) == _payloads(fresh), "records of the expired log came back"

    @requires("ttl", fake_clock=True)
    async def test_append_with_ttl_refreshes_the_expiry(
        self, open_driver: OpenDriver, prefix: str, clock: FakeClock
    ) -> None:
        """Each append with ``ttl`` moves the whole log's expiry to ``ttl`` after that append.

        On the fake clock: the log is appended to, appended to again half a ttl later, read
        when a ttl has passed since the first append but not since the second (still whole),
        then read a ttl after the second (gone). Failure means the expiry is set only when the
        log is created, or only on the new records.
        """
        driver = await open_driver()
        ttl = self.ttl_seconds
        key = prefix + "log"
        version = await driver.append(key, _records("a", 1), expected_version=None, session_id="s", ttl=ttl)
        clock.advance(ttl / 2)
        await driver.append(key, _records("b", 1), expected_version=version, session_id="s", ttl=ttl)
        clock.advance(ttl / 2 + 1)  # a ttl after the first append, half a ttl after the second
        payloads = await driver.read(key)
        assert payloads == _payloads(_records("a", 1) + _records("b", 1)), "the append did not refresh the expiry"
        clock.advance(ttl / 2)  # past a ttl after the second append
        assert await driver.length(key) == 0, "the log did not expire ttl after its last append"

    @requires("ttl", fake_clock=True)
    async def test_purge_expired_removes_only_expired_logs(
        self, open_driver: OpenDriver, prefix: str, clock: FakeClock
    ) -> None:
        """``purge_expired`` removes expired logs, spares logs without ttl and logs whose ttl has not passed.

        Its count includes at least the expired logs of this clause (other data in the store
        may add to it). Every purged key is then written afresh and reads back only its new
        records. Failure means live logs were purged (a purge by prefix, or a comparison the
        wrong way round), the count is wrong, or the purge left part of a log behind (its
        records without its header): the next log under that key then fails to write (a
        duplicate key) or shows the purged records, and storage leaks.
        """
        driver = await open_driver()
        ttl = self.ttl_seconds
        expiring = [prefix + f"expiring-{i}" for i in range(3)]
        for key in expiring:
            await driver.append(key, _records("x", 2), expected_version=None, session_id="s", ttl=ttl)
        forever, later = prefix + "no-ttl", prefix + "long-ttl"
        await driver.append(forever, _records("f", 2), expected_version=None, session_id="s")
        await driver.append(later, _records("l", 2), expected_version=None, session_id="s", ttl=ttl * 10)
        clock.advance(ttl + 1)
        purged = await driver.purge_expired()
        assert isinstance(purged, int), f"purge_expired returned {purged!r}, not an int"  # pyright: ignore[reportUnnecessaryIsInstance]
        assert purged >= len(expiring), f"purge_expired reported {purged} for {len(expiring)} expired logs"
        for key, label in ((forever, "f"), (later, "l")):
            assert await driver.read(key) == _payloads(_records(label, 2)), (
                f"purge_expired removed the live log {brief(key, prefix)}"
            )
        assert [log.key for log in await driver.list_logs(prefix)] == sorted([forever, later]), (
            "list_logs after purge_expired does not list exactly the live logs"
        )
        for key in expiring:
            assert await driver.length(key) == 0, "an expired log has records after purge_expired"
        await driver.purge_expired()  # a second purge must not trip over what the first removed
        for i, key in enumerate(expiring):
            await self._write_afresh(driver, key, prefix, session_id=f"again-{i}", why="a purged log")

    async def _write_afresh(self, driver: LogDriver, key: str, prefix: str, *, session_id: str, why: str) -> None:
        """Start a new log under ``key`` (absent now) and check it holds only its own records."""
        fresh = _records(f"fresh-{session_id}", 2)
        try:
            version = await driver.append(key, fresh, expected_version=None, session_id=session_id)
        except StoreConflictError:
            pytest.fail(f"{why} could not be written again: append(expected_version=None) conflicted", pytrace=False)
        except Exception as err:
            pytest.fail(
                f"{why} could not be written again: append raised {type(err).__name__}: {err} "
                "(did removing it leave records or metadata behind?)",
                pytrace=False,
            )
        assert await driver.tail(key, 10) == (2, _digests(fresh), version), f"{why}, written again: tail"
        assert await driver.read(key) == _payloads(fresh), f"{why}, written again: records of the old log came back"
        listed = [log for log in await driver.list_logs(prefix, limit=1000) if log.key == key]
        assert listed == [LogInfo(key, session_id)], f"{why}, written again: listed as {listed!r}"
        assert await driver.delete(key) is True, f"{why}, written again: delete did not find it"
