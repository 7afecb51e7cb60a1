"""Faults under the core's ``ObjectLogDriver``: interrupted deletes, lost answers, refused checkpoints, busy logs, gaps.

:class:`FaultyObjects` wraps a real :class:`~agent_stores.core.ObjectDriver` and injects one
kind of fault at a chosen request; :class:`ObjectLogFaults` is a set of clauses a backend runs
on its real object driver (provide an ``objects_factory`` fixture returning a callable that
opens a new driver over the backing store)::

    class TestMyObjectLogFaults(ObjectLogFaults):
        @pytest.fixture
        def objects_factory(self, tmp_path):
            return lambda: MyObjectDriver(tmp_path)

Every clause is a few dozen requests; none depends on timing.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from agent_stores.core import (
    CorruptRecordError,
    Listing,
    ObjectDriver,
    StoreConflictError,
    StoredObject,
    StoreUnavailableError,
)
from agent_stores.core.drivers import LogRecord
from agent_stores.core.objectlog import ObjectLogDriver

__all__ = ["FaultyObjects", "ObjectLogFaults"]

#: Decides whether a ``put(key, data, if_absent=...)`` is the one to fail.
PutFilter = Callable[[str, bytes, bool], bool]


class FaultyObjects:
    """An ``ObjectDriver`` passing every call to ``objects``, with faults armed on ``put``.

    - :meth:`fail_puts`: the next ``count`` matching puts raise ``StoreUnavailableError``
      before reaching the store (an interrupted process, a refused permission, a 503).
    - :meth:`lose_answers`: the next ``count`` matching puts are stored, then raise
      ``StoreConflictError``, as a retried request meeting its own object would.
    - ``before_put``: an awaitable hook run before each matching put (to race another writer).
    """

    def __init__(self, objects: ObjectDriver) -> None:
        self.objects = objects
        self._fail: tuple[PutFilter, int] | None = None
        self._lose: tuple[PutFilter, int] | None = None
        self.before_put: tuple[PutFilter, Callable[[str], Awaitable[None]]] | None = None
        self.injected = 0

    def fail_puts(self, when: PutFilter, *, count: int = 1, skip: int = 0) -> None:
        """Fail the matching puts after ``skip`` of them went through, ``count`` times."""
        state = {"seen": 0}

        def matching(key: str, data: bytes, if_absent: bool) -> bool:
            if not when(key, data, if_absent):
                return False
            state["seen"] += 1
            return state["seen"] > skip

        self._fail = (matching, count)

    def lose_answers(self, when: PutFilter, *, count: int = 1) -> None:
        """Store the next ``count`` matching puts, then answer them with a conflict."""
        self._lose = (when, count)

    def disarm(self) -> None:
        """Stop injecting faults."""
        self._fail = self._lose = self.before_put = None

    async def get(self, key: str) -> StoredObject | None:
        """Pass through."""
        return await self.objects.get(key)

    async def head(self, key: str) -> str | None:
        """Pass through."""
        return await self.objects.head(key)

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        """Pass through, with the armed faults."""
        if self.before_put is not None and self.before_put[0](key, data, if_absent):
            await self.before_put[1](key)
        if self._fail is not None and self._fail[1] > 0 and self._fail[0](key, data, if_absent):
            self._fail = (self._fail[0], self._fail[1] - 1)
            self.injected += 1
            raise StoreUnavailableError(f"injected fault: the put of {key!r} did not happen")
        lose = self._lose is not None and self._lose[1] > 0 and self._lose[0](key, data, if_absent)
        version = await self.objects.put(key, data, if_absent=if_absent, if_version=if_version)
        if lose and self._lose is not None:
            self._lose = (self._lose[0], self._lose[1] - 1)
            self.injected += 1
            raise StoreConflictError(f"injected fault: the put of {key!r} was stored, its answer lost")
        return version

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        """Pass through."""
        return await self.objects.delete(key, if_version=if_version)

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        """Pass through."""
        return await self.objects.list(prefix, delimiter=delimiter, after=after, limit=limit)

    async def aclose(self) -> None:
        """Close the wrapped driver."""
        await self.objects.aclose()


def _blanking(key: str, data: bytes, if_absent: bool) -> bool:
    """A put that erases a segment in place."""
    return not data and not if_absent and key.rpartition("/")[2].startswith("s")


def _claim(key: str, data: bytes, if_absent: bool) -> bool:
    """A put that claims a segment."""
    return if_absent and key.rpartition("/")[2].startswith("s")


class _Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


class ObjectLogFaults:
    """Clauses: an object log survives interrupted erasures, lost answers, refused checkpoints and busy writers.

    It also reports segments removed behind it as a gap, which a rewrite repairs.
    """

    secret = b"SECRET-PAYLOAD"

    async def _open(
        self, objects_factory: Callable[[], Any], **options: Any
    ) -> tuple[ObjectLogDriver, FaultyObjects, _Clock]:
        made = objects_factory()
        objects: ObjectDriver = await made if asyncio.iscoroutine(made) else made
        faulty = FaultyObjects(objects)
        clock = _Clock()
        prefix = f"faults-{uuid.uuid4().hex[:12]}/"
        return ObjectLogDriver(faulty, prefix=prefix, owns_objects=True, clock=clock, **options), faulty, clock

    async def _fill(self, log: ObjectLogDriver, key: str, segments: int, *, ttl: float | None = None) -> Any:
        version = None
        for i in range(segments):
            record = LogRecord(f"d{i}-{uuid.uuid4().hex[:6]}", self.secret + b"-%d" % i)
            version = await log.append(key, [record], expected_version=version, session_id="s", ttl=ttl)
        return version

    async def _holding_secret(self, log: ObjectLogDriver, key: str) -> list[str]:
        """Names of objects of the log that still hold record bytes."""
        listing = await log.objects.list(f"{log.prefix}{key}/", delimiter=None)
        found: list[str] = []
        for name in listing.keys:
            stored = await log.objects.get(name)
            if stored is not None and self.secret in stored.data:
                found.append(name)
        return found

    # -- defect: an interrupted delete or restart must be finished later -------------------

    @pytest.mark.asyncio
    @pytest.mark.parametrize("finisher", ["delete", "purge_expired", "append"])
    async def test_an_interrupted_delete_is_finished_by_the_next_call(
        self, objects_factory: Callable[[], Any], finisher: str
    ) -> None:
        """A delete stopped after its reset segment and one blank leaves nothing readable after the next call."""
        log, faulty, _ = await self._open(objects_factory)
        try:
            await self._fill(log, "k", 6)
            faulty.fail_puts(_blanking, skip=1, count=10**6)  # the process dies while blanking
            with pytest.raises(StoreUnavailableError):
                await log.delete("k")
            faulty.disarm()
            assert await self._holding_secret(log, "k"), "the fault did not interrupt the erasure"
            assert await log.read("k") == []
            if finisher == "delete":
                assert await log.delete("k") is False, "the log was already deleted (absent)"
            elif finisher == "purge_expired":
                await log.purge_expired()
            else:
                await log.append("k", [LogRecord("new", b"new life")], expected_version=None, session_id="s")
                assert await log.read("k") == [b"new life"]
            assert await self._holding_secret(log, "k") == []
            assert await log.delete("k") is (finisher == "append")
            assert await self._holding_secret(log, "k") == []
        finally:
            await log.aclose()

    @pytest.mark.asyncio
    async def test_tails_are_erased_with_their_log_even_when_the_delete_is_interrupted(
        self, objects_factory: Callable[[], Any]
    ) -> None:
        """Tail objects (copies of the newest records) hold nothing once an interrupted delete is finished."""
        log, faulty, _ = await self._open(objects_factory, tail_after=0)
        try:
            await self._fill(log, "k", 6)
            assert len(await log.read("k", last=3)) == 3  # writes a tail
            tails = await log.objects.list(f"{log.prefix}k/t", delimiter=None)
            assert tails.keys, "no tail was written"
            faulty.fail_puts(_blanking, skip=1, count=10**6)
            with pytest.raises(StoreUnavailableError):
                await log.delete("k")
            faulty.disarm()
            assert await log.read("k", last=3) == []
            assert await log.delete("k") is False
            assert await self._holding_secret(log, "k") == []
            version = await log.append("k", [LogRecord("n", b"new")], expected_version=None, session_id="s")
            assert version is not None
            assert await log.read("k", last=3) == [b"new"]
        finally:
            await log.aclose()

    @pytest.mark.asyncio
    @pytest.mark.parametrize("finisher", ["append", "purge_expired", "delete"])
    async def test_an_interrupted_restart_of_an_expired_log_is_finished(
        self, objects_factory: Callable[[], Any], finisher: str
    ) -> None:
        """A save restarting an expired log, stopped before it erased the old life, is finished by the next call."""
        log, faulty, clock = await self._open(objects_factory)
        try:
            await self._fill(log, "k", 5, ttl=60)
            clock.now += 120
            faulty.fail_puts(_blanking, count=10**6)
            with pytest.raises(StoreUnavailableError):
                await log.append("k", [LogRecord("n1", b"one")], expected_version=None, session_id="s")
            faulty.disarm()
            assert await self._holding_secret(log, "k"), "the fault did not interrupt the erasure"
            tail = await log.tail("k", 1)
            assert tail.length == 1
            if finisher == "append":
                await log.append("k", [LogRecord("n2", b"two")], expected_version=tail.version, session_id="s")
                assert await log.read("k") == [b"one", b"two"]
            elif finisher == "purge_expired":
                assert await log.purge_expired() == 0
                assert await log.read("k") == [b"one"]
            else:
                assert await log.delete("k") is True
            assert await self._holding_secret(log, "k") == []
        finally:
            await log.aclose()

    # -- defect: a lost answer must not double a batch nor misreport a delete --------------

    @pytest.mark.asyncio
    async def test_a_lost_answer_neither_doubles_an_append_nor_misreports_a_delete(
        self, objects_factory: Callable[[], Any]
    ) -> None:
        """A claim the store made but whose answer was lost (a retry met it) counts as made, once."""
        log, faulty, _ = await self._open(objects_factory)
        try:
            faulty.lose_answers(_claim)
            version = await log.append("k", [LogRecord("a", b"a")], expected_version=None, session_id="s")
            faulty.lose_answers(_claim)
            await log.append("k", [LogRecord("b", b"b")], expected_version=version, session_id="s")
            assert faulty.injected == 2
            assert await log.read("k") == [b"a", b"b"]
            faulty.lose_answers(_claim)
            assert await log.delete("k") is True, "the delete's own reset segment was taken for another writer's"
            assert faulty.injected == 3
            assert await log.read("k") == []
        finally:
            await log.aclose()

    # -- defect: a checkpoint that cannot be written never fails a read --------------------

    @pytest.mark.asyncio
    async def test_a_full_read_survives_a_checkpoint_it_may_not_write(self, objects_factory: Callable[[], Any]) -> None:
        """A refused checkpoint (read-only principal, 503) leaves the read's answer intact."""
        log, faulty, _ = await self._open(objects_factory, compact_after=2)
        try:
            await self._fill(log, "k", 5)
            faulty.fail_puts(lambda key, data, if_absent: key.rpartition("/")[2].startswith("c"), count=10**6)
            payloads = await log.read("k")
            assert faulty.injected >= 1, "no checkpoint was attempted"
            assert payloads == [self.secret + b"-%d" % i for i in range(5)]
        finally:
            await log.aclose()

    # -- defect: a delete wins against appends that keep coming -----------------------------

    @pytest.mark.asyncio
    async def test_a_delete_wins_against_an_append_before_each_of_its_attempts(
        self, objects_factory: Callable[[], Any]
    ) -> None:
        """Another writer appends just before every claim the delete makes (40 times): the delete still wins."""
        log, faulty, _ = await self._open(objects_factory)
        rival = ObjectLogDriver(faulty.objects, prefix=log.prefix)
        appended: list[int] = []
        try:
            await self._fill(log, "k", 1)

            async def rival_appends(_: str) -> None:
                if len(appended) >= 40:
                    return
                tail = await rival.tail("k", 0)
                if tail.version is None:
                    return
                appended.append(tail.length)
                await rival.append(
                    "k", [LogRecord(f"r{len(appended)}", b"rival")], expected_version=tail.version, session_id="s"
                )

            faulty.before_put = (_claim, rival_appends)
            assert await log.delete("k") is True
            faulty.disarm()
            assert appended, "the rival never appended"
            assert await log.read("k") == []
            assert await self._holding_secret(log, "k") == []
        finally:
            await log.aclose()

    # -- defect: segments removed behind the log must be reported, not retried forever ------

    @pytest.mark.asyncio
    async def test_removed_segments_are_a_gap_named_by_reads_and_a_rewrite_repairs_it(
        self, objects_factory: Callable[[], Any]
    ) -> None:
        """The oldest segments removed (as a lifecycle rule expiring objects by age does) are a gap.

        A read needing them is a ``CorruptRecordError`` naming the segments and records, a window
        after them reads, and a rewrite of what is readable leaves the log readable and writable
        by every driver.
        """
        log, faulty, _ = await self._open(objects_factory)
        try:
            await self._fill(log, "k", 8)
            assert len(await log.read("k", last=2)) == 2  # this driver remembers the end
            names = (await log.objects.list(f"{log.prefix}k/s", delimiter=None)).keys  # newest first
            assert len(names) == 8
            for name in names[-3:]:
                assert await faulty.objects.delete(name)
            reader = ObjectLogDriver(faulty.objects, prefix=log.prefix)
            for needs_the_gap in (lambda: reader.read("k"), lambda: reader.tail("k", 6), lambda: log.read("k")):
                with pytest.raises(CorruptRecordError) as caught:
                    await needs_the_gap()
                message = str(caught.value)
                assert "'k'" in message and "segments 1 to 3 (records 0 to 2)" in message, message
            kept = [self.secret + b"-%d" % i for i in range(3, 8)]
            assert await reader.read("k", last=5) == kept
            salvage = await reader.salvage("k")
            assert salvage is not None and salvage.lost == [(0, 3)]
            records = [r for r in salvage.records[salvage.after_gap :] if r is not None]
            version = await reader.rewrite("k", records, expected_version=salvage.version, session_id="s")
            assert await log.read("k") == kept, "a driver that remembered the old end reads the rewritten log"
            assert len(await self._holding_secret(log, "k")) == 1, "the old segments are erased"
            await log.append("k", [LogRecord("n", b"next")], expected_version=version, session_id="s")
            assert await reader.read("k") == [*kept, b"next"]
        finally:
            await log.aclose()
