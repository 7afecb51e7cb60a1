"""``ObjectLogDriver``: a :class:`~agent_stores.core.drivers.LogDriver` over any object driver with exclusive create.

How it reads, writes and erases is described in ``docs/core.md`` (the object-store log).
"""

from __future__ import annotations

import asyncio
import logging
import random
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from typing import Any, Final, NamedTuple, TypeVar, cast

import msgspec

from ..cache import BoundedCache
from ..codec import DEFAULT_CACHE_IDLE
from ..drivers import Listing, LogInfo, LogRecord, LogTail, LogVersion, ObjectDriver, StoredObject
from ..errors import CorruptRecordError, StoreConflictError, StoreError
from ..urls import parse_bool, parse_count, parse_optional_count, parse_seconds
from ._ends import RememberedEnds
from ._format import (
    CHECKPOINT,
    FLOOR,
    LOG_OBJECT,
    PAST_LOG,
    SEGMENT,
    SNAPSHOT_OBJECT,
    TAIL,
    Checkpoint,
    Head,
    LogNames,
    Segment,
    Tail,
    decode_checkpoint,
    decode_segment,
    decode_tail,
    encode,
    key_tag,
    new_token,
    parse_version,
    seq_of,
    try_decode,
)
from ._gaps import Gap, LogGapError, Salvage, absent_runs, salvage_of

__all__ = ["CACHE_BYTES", "FAIR_CLAIMS", "LOG_OPTIONS", "ObjectLogDriver", "log_options", "read_fair_claims"]

_T = TypeVar("_T")
_log = logging.getLogger("agent_stores.objectlog")

#: The option, in code and in a store URL, that turns fair claims off (``fair_claims=false``).
FAIR_CLAIMS = "fair_claims"


def read_fair_claims(value: object) -> bool:
    """The ``fair_claims`` option read strictly (:func:`~agent_stores.core.urls.parse_bool`).

    Raises:
        ValueError: Not one of the boolean spellings, naming the option and the accepted values.
    """
    return parse_bool(value, option=FAIR_CLAIMS)


#: The object log's options a store URL (and ``open_stores``) may give, each with its strict
#: reader: the same one the constructor applies, so a URL and code follow one rule.
LOG_OPTIONS: Final[Mapping[str, Callable[[Any], Any]]] = {
    FAIR_CLAIMS: read_fair_claims,
    "concurrency": partial(parse_count, option="concurrency"),
    "compact_after": partial(parse_count, option="compact_after"),
    "tail_after": partial(parse_optional_count, option="tail_after"),
    "tail_records": partial(parse_count, option="tail_records"),
}


def log_options(given: Mapping[str, Any]) -> dict[str, Any]:
    """The object log's options among ``given`` (a backend's store defaults), for an ``ObjectLogDriver``."""
    return {name: value for name, value in given.items() if name in LOG_OPTIONS}


#: Payload bytes the remembered windows of all logs hold at most, by default.
CACHE_BYTES = 16 * 2**20
_LISTING_PAGE = 200
# Objects per listing request of read_many (S3 answers at most 1,000).
_MANY_PAGE = 1000
_READ_ATTEMPTS = 8
# A delete (or expiry) racing appends backs off with full jitter, then claims a slot further
# ahead each time, so it wins after a bounded number of appends however fast they come.
_RESET_BACKOFF_BASE_S = 0.002
_RESET_BACKOFF_CAP_S = 0.25
_RESET_PLAIN_ATTEMPTS = 4
_RESET_MAX_GAP = 1024
# The window of a whole-log read.
_WHOLE = sys.maxsize
# Most segments written by others that a remembered end is brought up to date with.
_END_CATCH_UP = 16
# Fair claims: for how long after meeting another writer on a log a writer that just won its
# segment looks whether the next slot is free before claiming it.
_CONTENDED_S = 1.0
# On a contended log, a writer waits up to this many claim round trips for its turn, less the
# longer it has been losing claims: one losing for this many round trips goes at once.
_TURN_ROUND_TRIPS = 0.5
_SENIOR_ROUND_TRIPS = 4.0
# Logs a driver remembers having seen written (a segment object found) while they read as empty.
_WRITTEN_LOGS = 4096
# Weight of the newest claim in the driver's running claim round trip.
_RTT_WEIGHT = 0.2


class _Prefetch(NamedTuple):
    """What a windowed read fetched together with the newest segment: the newest tail and segments after it."""

    tail: Tail | None
    segments: dict[int, Segment]


class _Caught(NamedTuple):
    """A log's end brought up to date from what a driver remembered: the head and the newest records known."""

    head: Head
    digests: list[str]
    payloads: list[bytes] | None


class _Restart(Exception):
    """A concurrent delete or compaction changed what a read was reading: read again."""


class _Missing(Exception):
    """A segment a read needs is absent or blank: a concurrent delete, or a gap if the log did not move on."""

    def __init__(self, hole: int, above: Segment) -> None:
        super().__init__(hole)
        self.hole = hole  # the missing segment's sequence number
        self.above = above  # the readable segment just above it


class ObjectLogDriver:
    """A :class:`~agent_stores.core.drivers.LogDriver` of immutable segment objects (``docs/core.md`` tells how).

    Every save writes one segment object holding the whole batch, claimed with
    ``put(..., if_absent=True)`` on the next sequence number, so of two writers that read the
    same end exactly one creates the segment and the other conflicts. Logs are listed in the
    order of ``key + "/"`` (a declared divergence, see :meth:`list_logs`).

    Claims are fair (``docs/core.md``, "Fair claims"): a lost claim reads the slots after the
    one it lost in the same round as that slot, and hands the end it found to the retry
    (``StoreConflictError.log_end``); on a log where this driver met another writer in the
    last second, a claim right after its own segment first reads the slot it wants (the
    round trip its losers spend), and each claim there waits up to half a claim round trip,
    less the longer this writer has been losing, so the writer waiting longest claims first.

    Costs: ``append`` on a known version is one conditional ``put`` (no listing, no read); on a
    contended log a claim after this driver's own segment adds one ``get`` and a wait of at most
    half a round trip, and a lost claim one parallel round of ``get`` (the lost slot and the few
    after it); ``length`` is one ``list(limit=1)`` and one ``get``; ``tail`` and
    ``read(last=N)`` are at most two ``list(limit=1)`` in parallel, then one parallel round of
    ``get`` (the newest segment, the newest tail object and at most ``2 * tail_after`` segments
    written after it), whatever the number of segments, and one round (one listing with the
    ``get`` of remembered objects) when this driver read, wrote or lost a claim on the log
    before and little happened since; a full ``read`` is bounded by compaction. A window no
    larger than the last one read of a log is served from the records this driver remembers of
    it, when the ``get`` of the remembered newest segment proves them current: one listing and
    one ``get`` (plus the segments others wrote since), whatever the window's size.

    Args:
        objects: The object driver; it must make ``put(..., if_absent=True)`` atomic across
            every writer of the log and list in code-point order. Borrowed unless ``owns_objects``.
        prefix: Key prefix of every object of this driver (``""`` or ending with ``/``).
        owns_objects: Close ``objects`` on :meth:`aclose`.
        concurrency: Most object requests one operation keeps in flight.
        compact_after: A full read that fetched more segments than this writes a checkpoint.
        tail_after: A read that fetched more segments than this below the newest writes a tail
            object holding the records it read; ``None`` writes and reads no tails (the layout
            of earlier releases).
        tail_records: Most records a tail object holds (a window larger than this is read
            from segments and checkpoints).
        cache_bytes: Most bytes kept of the newest records of the logs this driver read
            windows of (payloads and about 128 bytes per record), least recently used dropped
            first; 0 keeps none, every window is fetched.
        cache_idle: Seconds the records of a log no read used are kept (default 300, as the
            decode cache's ``cache_idle``; ``None``: until evicted), counted by ``clock``.
        clock: Seconds since the epoch, for expiry.
        fair_claims: Claim fairly among writers of one log (above); ``False`` claims as
            earlier releases did (a lost claim's retry reads the log's end).

    ``fair_claims``, ``concurrency``, ``compact_after``, ``tail_after`` and ``tail_records`` are
    read by the readers of :data:`LOG_OPTIONS` (the text of a URL's query is accepted too).

    Raises:
        ValueError: ``prefix`` neither is empty nor ends with ``/``, or an option is out of range
            or of the wrong kind (a ``bool`` for a number), naming it.
    """

    def __init__(
        self,
        objects: ObjectDriver,
        *,
        prefix: str = "history/",
        owns_objects: bool = False,
        concurrency: int = 32,
        compact_after: int = 64,
        tail_after: int | None = 8,
        tail_records: int = 1000,
        cache_bytes: int = CACHE_BYTES,
        cache_idle: float | None = DEFAULT_CACHE_IDLE,
        clock: Callable[[], float] = time.time,
        fair_claims: bool = True,
    ) -> None:
        if prefix and not prefix.endswith("/"):
            raise ValueError(f"prefix must be empty or end with '/', got {prefix!r}")
        self.concurrency = parse_count(concurrency, option="concurrency")
        self.compact_after = parse_count(compact_after, option="compact_after")
        self.tail_after = parse_optional_count(tail_after, option="tail_after")
        self.tail_records = parse_count(tail_records, option="tail_records")
        self.fair_claims = read_fair_claims(fair_claims)
        idle = None if cache_idle is None else parse_seconds(cache_idle, option="cache_idle")
        self._ends = RememberedEnds(cache_bytes, max_idle=idle, clock=clock)
        self.objects = objects
        self.prefix = prefix
        self._names = LogNames(prefix)
        self.owns_objects = owns_objects
        self._clock = clock
        #: Logs a read found empty but written before (deleted or expired): :meth:`create` knows
        #: their first slot is taken without asking.
        self._written: BoundedCache[str, bool] = BoundedCache(max_entries=_WRITTEN_LOGS)
        self._claim_rtt = 0.0  # running round trip of a conditional put (seconds; 0: none timed yet)

    @property
    def cache_bytes(self) -> int:
        """Most bytes kept of the newest records of the logs this driver read windows of."""
        return self._ends.cache_bytes

    @property
    def cache_idle(self) -> float | None:
        """Seconds the records of a log no read used are kept (``None``: until evicted)."""
        return self._ends.cache_idle

    # -- reading ---------------------------------------------------------------------------

    def _decode(self, name: str, data: bytes) -> Segment:
        try:
            return decode_segment(data)
        except (msgspec.DecodeError, msgspec.ValidationError) as err:
            raise CorruptRecordError(f"history segment {name!r} cannot be decoded") from err

    async def _gather(self, calls: Sequence[Callable[[], Awaitable[_T]]]) -> list[_T]:
        """Run ``calls`` concurrently, at most ``concurrency`` at a time (per call, so nesting cannot starve)."""
        limit = asyncio.Semaphore(self.concurrency)

        async def limited(call: Callable[[], Awaitable[_T]]) -> _T:
            async with limit:
                return await call()

        if len(calls) == 1:
            return [await calls[0]()]
        return list(await asyncio.gather(*(limited(c) for c in calls)))

    async def _newest(self, key: str, kind: str = SEGMENT) -> str | None:
        listing = await self.objects.list(self._names.folder(key) + kind, delimiter=None, limit=1)
        return listing.keys[0] if listing.keys else None

    def _head_of(self, key: str, segment: Segment) -> Head:
        expired = segment.expires_at is not None and segment.expires_at <= self._clock()
        return Head(key, segment, live=bool(segment.digests or segment.start) and not expired)

    def _window_names(self, key: str, top_seq: int, tail_seq: int | None) -> list[str]:
        """The objects a windowed read wants for a newest segment and a newest tail: them, and the segments between."""
        names = [self._names.of(key, SEGMENT, top_seq)]
        if tail_seq is not None and tail_seq <= top_seq:
            names.append(self._names.of(key, TAIL, tail_seq))
            if top_seq - tail_seq - 1 <= 2 * (self.tail_after or 0):
                names.extend(self._names.of(key, SEGMENT, seq) for seq in range(tail_seq + 1, top_seq))
        return names

    async def _catch_up(self, key: str) -> _Caught | None:
        """The remembered end of ``key`` brought up to date, in one parallel round when nobody else wrote.

        The newest segment is listed together with a ``get`` of the remembered one (its token
        proves it is still the very object remembered) and, after a lost claim, of as many
        segments after it as others wrote during the previous catch-up (they most likely exist:
        one round instead of two). Segments written since (a few,
        by other writers) must continue the remembered one exactly (same life, contiguous
        records). ``None`` when the remembered end cannot answer (too far behind, another
        life, anything unusual): the caller reads the log as usual.
        """
        end = self._ends.end(key)
        if end is None:
            return None
        have = end.segment.seq
        probes = list(range(have, have + 1 + min(end.pace, _END_CATCH_UP)))
        results: list[object] = list(
            await asyncio.gather(
                self._newest(key), *(self.objects.get(self._names.of(key, SEGMENT, seq)) for seq in probes)
            )
        )
        newest = cast("str | None", results[0])
        probed = cast("list[StoredObject | None]", results[1:])
        if newest is None:
            return None
        top_seq = seq_of(newest)
        if top_seq < have or top_seq - have > _END_CATCH_UP:
            return None
        ready: dict[int, StoredObject | None] = dict(zip(probes, probed, strict=True))
        missing = [seq for seq in range(have + 1, top_seq + 1) if ready.get(seq) is None]
        if missing:
            fetched = await self._gather([_getter(self.objects, self._names.of(key, SEGMENT, n)) for n in missing])
            ready.update(zip(missing, fetched, strict=True))
        stored = ready[have]
        same = None if stored is None else try_decode(stored.data)
        if same is None or same.token != end.segment.token:
            return None  # not the object remembered (the log's objects were replaced)
        top, length, digests, payloads = end.segment, end.length, end.digests, end.payloads
        for seq in range(have + 1, top_seq + 1):
            stored = ready.get(seq)
            segment = None if stored is None else try_decode(stored.data)
            if segment is None or segment.base != top.base or segment.start != length or segment.seq != seq:
                return None  # blank, torn, reset or not contiguous: left to the full read
            top, length, digests = segment, length + len(segment.digests), [*digests, *segment.digests]
            if payloads is not None:
                payloads = [*payloads, *segment.payloads]
        head = self._head_of(key, top)
        if not head.live:
            return None
        if top.seq != have:
            self._ends.contend(key, time.monotonic())  # another writer wrote since
            self._ends.learn(key, top, digests, payloads, pace=top.seq - have if end.pace else 0)
        return _Caught(head, digests, payloads)

    async def _tail_from_end(self, key: str, count: int) -> LogTail | None:
        """The tail from the remembered end of ``key`` (see :meth:`_catch_up`), or ``None``."""
        caught = await self._catch_up(key)
        if caught is None:
            return None
        head, digests = caught.head, caught.digests
        wanted = min(head.length, max(count, 0))
        if len(digests) < wanted:
            return None
        return LogTail(head.length, digests[len(digests) - wanted :], head.version)

    async def _window_from_end(self, key: str, last: int) -> list[bytes] | None:
        """The newest ``last`` payloads from the remembered end of ``key`` (see :meth:`_catch_up`), or ``None``.

        Only for a log whose remembered payloads can hold the window (``_WHOLE``: every
        record of its life): nothing is fetched to learn that they cannot.
        """
        end = self._ends.end(key)
        if end is None or end.payloads is None or end.window < last:
            return None
        caught = await self._catch_up(key)
        if caught is None or caught.payloads is None:
            return None
        wanted = min(caught.head.length, last)
        if len(caught.payloads) < wanted:
            return None
        return caught.payloads[len(caught.payloads) - wanted :]

    async def _head_and_tail(self, key: str) -> tuple[Head | None, _Prefetch | None]:
        """The head (as :meth:`_head`) and the newest tail with the segments after it, in one parallel round.

        The listing of the newest segment goes out together with the ``get`` of the objects
        the previous read or append of this driver saw newest (immutable, so a guess is only
        ever wasted, never wrong): one round trip when the guess holds, two when the log
        moved on. A guessed tail that still exists is used without listing the tails (a
        newer tail removes the older ones once written, and any tail is checked against the
        segments after it before use); with no tail guessed, or the guessed one gone, the
        tails are listed. Anything unusual (a blank or torn newest segment) is left to
        :meth:`_head`.
        """
        guess = self._ends.seen(key)
        guessed = [] if guess is None else self._window_names(key, *guess)
        list_tails = guess is None or guess[1] is None
        calls: list[Callable[[], Awaitable[object]]] = [_lister(self, key, SEGMENT)]
        if list_tails:
            calls.append(_lister(self, key, TAIL))
        calls.extend(_getter(self.objects, n) for n in guessed)
        if len(calls) <= self.concurrency:
            # Within the concurrency limit: one flat gather, no semaphore needed.
            results: list[object] = list(await asyncio.gather(*(call() for call in calls)))
        else:
            results = await self._gather(calls)
        newest = cast("str | None", results[0])
        if newest is None:
            return None, None
        early = cast("list[StoredObject | None]", results[2 if list_tails else 1 :])
        ready: dict[str, StoredObject | None] = {
            n: stored for n, stored in zip(guessed, early, strict=True) if stored is not None
        }
        if list_tails:
            tail_name = cast("str | None", results[1])
        else:
            assert guess is not None and guess[1] is not None
            tail_name = self._names.of(key, TAIL, guess[1])
            if tail_name not in ready:
                tail_name = await self._newest(key, TAIL)  # removed since: a newer one may exist
        top_seq = seq_of(newest)
        tail_seq = None if tail_name is None else seq_of(tail_name)
        names = self._window_names(key, top_seq, tail_seq)
        missing = [n for n in names if n not in ready]
        if missing:
            ready.update(zip(missing, await self._gather([_getter(self.objects, n) for n in missing]), strict=True))
        stored = [ready.get(n) for n in names]
        top = None if stored[0] is None else try_decode(stored[0].data)
        if top is None:
            return await self._head(key), None
        tail: Tail | None = None
        if len(names) > 1 and stored[1] is not None:
            tail = await self._decode_tail(key, names[1], stored[1].data)
        segments: dict[int, Segment] = {}
        for name, found in zip(names[2:], stored[2:], strict=True):
            segment = None if found is None else try_decode(found.data)
            if segment is not None:
                segments[seq_of(name)] = segment
        self._ends.see(key, top_seq, None if tail is None else tail_seq)
        return self._head_of(key, top), _Prefetch(tail, segments)

    async def _decode_tail(self, key: str, name: str, data: bytes) -> Tail | None:
        try:
            return decode_tail(data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            # A tail only saves reading segments: a torn one is dropped, the segments read.
            _log.warning("history log %r: tail %r cannot be decoded; removed, segments read instead", key, name)
            await self._drop(name)
            return None

    async def _drop(self, name: str) -> None:
        """Remove a cache object (tail) best-effort: a reader that may not delete still reads."""
        try:
            await self.objects.delete(name)
        except StoreError as err:
            _log.warning("history object %r not removed (%s)", name, err)

    async def _head(self, key: str) -> Head | None:
        """The newest segment of ``key`` (``None`` when the log never had one)."""
        for _ in range(_READ_ATTEMPTS):
            name = await self._newest(key)
            if name is None:
                return None
            stored = await self.objects.get(name)
            if stored is None:
                continue  # removed between the listing and the read
            segment = try_decode(stored.data)
            if segment is None:
                # Blanked by a delete that claimed a newer segment meanwhile, or torn: a write
                # that never fully reached the disk (a power loss without fsync).
                if await self._newest(key) != name:
                    continue
                segment = await self._recover(key, name, stored.data)
            return self._head_of(key, segment)
        raise StoreConflictError(f"log {key!r} kept changing while its end was read")

    async def _recover(self, key: str, name: str, data: bytes) -> Segment:
        """Replace a torn newest segment (and torn ones just below it) so the log goes on.

        The torn appends never became durable; their slots are rewritten as empty segments
        continuing the newest intact segment below (or as a reset when none is left), and
        each is reported in the log ``agent_stores.objectlog``.
        """
        top = seq_of(name)
        torn = [(top, len(data))]
        below: Segment | None = None
        seq = top - 1
        while seq >= 1:
            stored = await self.objects.get(self._names.of(key, SEGMENT, seq))
            below = None if stored is None else try_decode(stored.data)
            if below is not None:
                break
            if stored is not None and stored.data:
                torn.append((seq, len(stored.data)))  # not a blank: torn as well
            seq -= 1
        for slot, size in torn:
            _log.warning(
                "history log %r: segment %d is torn (%d bytes that cannot be decoded: a write lost "
                "before it reached the disk); replaced by an empty segment",
                key,
                slot,
                size,
            )
        if below is None:
            # Nothing intact below: the log reads as absent; the next delete or append erases
            # whatever the torn slots hold (floor 0: nothing known erased).
            replacement = Segment(top, top, 0, "", None, [], [], 0, new_token())
            await self.objects.put(name, encode(replacement))
            return replacement
        length = below.start + len(below.digests)
        replacement = below
        for slot in range(seq + 1, top + 1):
            replacement = Segment(
                slot, below.base, length, below.session_id, below.expires_at, [], [], below.floor, new_token()
            )
            await self.objects.put(self._names.of(key, SEGMENT, slot), encode(replacement))
        return replacement

    async def _segments(self, key: str, seqs: Sequence[int]) -> list[Segment | None]:
        """Fetch the segments ``seqs`` in parallel, in that order; ``None`` for an absent or blank one."""
        names = [self._names.of(key, SEGMENT, seq) for seq in seqs]

        def fetch(name: str) -> Callable[[], Awaitable[Segment | None]]:
            async def call() -> Segment | None:
                stored = await self.objects.get(name)
                if stored is None or not stored.data:
                    return None
                return self._decode(name, stored.data)

            return call

        return await self._gather([fetch(n) for n in names])

    async def _window(self, key: str, last: int | None) -> tuple[Head | None, list[str], list[bytes]]:
        """The head and the records of its life, the newest ``last`` of them (all when ``None``)."""
        for attempt in range(_READ_ATTEMPTS):
            prefetch: _Prefetch | None = None
            if attempt == 0 and self.tail_after is not None and last != 0:
                head, prefetch = await self._head_and_tail(key)
            else:
                head = await self._head(key)
            if head is None or not head.live:
                return head, [], []
            try:
                digests, payloads = await self._records(key, head, last, prefetch)
            except _Restart:
                continue
            except _Missing as missing:
                gap = await self._gap_error(key, head, missing)
                if gap is None:
                    continue
                raise gap from None
            return head, digests, payloads
        raise StoreConflictError(f"log {key!r} kept changing while it was read")

    async def _gap_error(self, key: str, head: Head, missing: _Missing) -> LogGapError | None:
        """The gap a read met below ``missing.above``, or ``None`` when the log moved on (read again).

        Segments are only ever blanked below a newer segment, so a segment of the newest
        segment's life that is absent or blank while that segment is still the newest is a gap.
        Costs one listing of the newest segment and, for a gap, a listing of the log's segments
        and one ``get`` of the segment below it.
        """
        if await self._newest(key) != self._names.of(key, SEGMENT, head.segment.seq):
            return None
        top = head.segment
        listing = await self.objects.list(self._names.folder(key) + SEGMENT, delimiter=None)
        present = [seq_of(name) for name in listing.keys if LOG_OBJECT.fullmatch(name.rpartition("/")[2])]
        runs = absent_runs(present, top.base, top.seq, also=[missing.hole])
        gaps: list[Gap] = []
        for first, last in runs:
            if not first <= missing.hole <= last:
                gaps.append(Gap(first, last, None, None))
                continue
            first_record: int | None = 0
            if first > top.base:
                below = await self._segments(key, [first - 1])
                first_record = None if below[0] is None or below[0].base != top.base else below[0].end
            gaps.append(Gap(first, last, first_record, missing.above.start))
        return LogGapError(key, head.length, gaps)

    def _estimate(self, top: Segment, missing: int) -> int:
        """How many segments below ``top`` hold ``missing`` records, at the log's average per segment."""
        per_segment = max(1.0, top.start / max(1, top.seq - top.base))
        return int(missing / per_segment * 1.25) + 1

    async def _records(
        self, key: str, head: Head, last: int | None, prefetch: _Prefetch | None = None
    ) -> tuple[list[str], list[bytes]]:
        top = head.segment
        length = head.length
        wanted_from = 0 if last is None else max(0, length - last)
        if prefetch is not None and prefetch.tail is not None and top.start > wanted_from:
            found = await self._from_tail(key, top, wanted_from, prefetch)
            if found is not None:
                return found
        checkpoint: Checkpoint | None = None
        if wanted_from == 0 and top.start > 0:
            checkpoint = await self._checkpoint(key, top)
        floor = checkpoint.seq if checkpoint is not None else top.base - 1  # newest segment not to fetch
        chunks: list[Segment] = [top] if top.seq > floor else []
        lowest = top
        while lowest.start > wanted_from and lowest.seq - 1 > floor:
            # Ask for as many older segments as the records still missing need, at the
            # log's average records per segment, in one parallel round.
            count = min(lowest.seq - 1 - floor, self._estimate(top, lowest.start - wanted_from))
            older = await self._segments(key, range(lowest.seq - 1, lowest.seq - 1 - count, -1))
            for segment in older:
                if segment is None:
                    if lowest.start > wanted_from:
                        raise _Missing(lowest.seq - 1, lowest)
                    break  # below what the window needs
                if segment.base != top.base:
                    raise _Restart  # a segment of another life: the log was reset under us
                chunks.append(segment)
                lowest = segment
        chunks.reverse()
        digests: list[str] = list(checkpoint.digests) if checkpoint is not None else []
        payloads: list[bytes] = list(checkpoint.payloads) if checkpoint is not None else []
        for segment in chunks:
            digests.extend(segment.digests)
            payloads.extend(segment.payloads)
        first = 0 if checkpoint is not None or not chunks else chunks[0].start
        if len(digests) != length - first:
            raise _Restart  # segments and checkpoint disagree: read again
        if wanted_from == 0 and (len(chunks) > self.compact_after):
            try:
                await self._compact(key, top, digests, payloads)
            except StoreError as err:
                # A checkpoint only makes the next full read cheaper: a reader that may not
                # write (a read-only principal) or a failed write never fails the read.
                _log.warning("history log %r: checkpoint not written (%s); the read goes on", key, err)
        await self._maybe_write_tail(key, top, len(chunks) - 1, length - wanted_from, 0, digests, payloads)
        skip = (length - first) - (length - wanted_from)
        return digests[skip:], payloads[skip:]

    async def _from_tail(
        self, key: str, top: Segment, wanted_from: int, prefetch: _Prefetch
    ) -> tuple[list[str], list[bytes]] | None:
        """The newest records from ``wanted_from`` on, read from the tail and the segments after it.

        ``None`` when the tail cannot serve this read (another life, too short, or more
        segments after it than a plain read of the window would fetch).
        """
        tail = prefetch.tail
        if tail is None or tail.base != top.base or tail.seq > top.seq:
            return None
        if tail.seq == top.seq:
            joins: int | None = top.start + len(top.digests)
        else:
            following = top if tail.seq + 1 == top.seq else prefetch.segments.get(tail.seq + 1)
            joins = None if following is None else following.start
        if joins is not None and joins != tail.end:
            return await self._stale_tail(key, tail)
        if tail.start > wanted_from or top.seq - tail.seq - 1 > self._estimate(top, top.start - wanted_from):
            return None  # a stale tail: the window's own segments are fewer
        seqs = range(tail.seq + 1, top.seq)
        missing = [seq for seq in seqs if seq not in prefetch.segments]
        fetched = dict(zip(missing, await self._segments(key, missing), strict=True)) if missing else {}
        chunks: list[Segment] = []
        for seq in seqs:
            segment = prefetch.segments.get(seq) or fetched[seq]
            if segment is None:
                return None  # a segment is missing: the plain read tells a delete from a gap
            chunks.append(segment)
        if top.seq > tail.seq:
            chunks.append(top)
        if any(segment.base != top.base for segment in chunks):
            raise _Restart  # a segment of another life: the log was reset under us
        if tail.end != (chunks[0].start if chunks else top.start + len(top.digests)):
            return await self._stale_tail(key, tail)
        digests = list(tail.digests)
        payloads = list(tail.payloads)
        for segment in chunks:
            digests.extend(segment.digests)
            payloads.extend(segment.payloads)
        length = top.start + len(top.digests)
        if tail.start + len(digests) != length:
            raise _Restart
        wanted = length - wanted_from
        await self._maybe_write_tail(key, top, len(chunks) - 1, wanted, len(tail.digests), digests, payloads)
        skip = len(digests) - wanted
        return digests[skip:], payloads[skip:]

    async def _stale_tail(self, key: str, tail: Tail) -> None:
        """Drop a tail holding records the segments no longer hold (a torn segment replaced since)."""
        _log.warning("history log %r: tail %d does not join the segments after it; removed", key, tail.seq)
        await self._drop(self._names.of(key, TAIL, tail.seq))

    async def _maybe_write_tail(
        self, key: str, top: Segment, fetched: int, wanted: int, held: int, digests: list[str], payloads: list[bytes]
    ) -> None:
        """Write a tail after a read that fetched ``fetched`` segments below the newest, if worth it.

        It holds the newest ``max(wanted, held)`` records read (``held``: what the tail read
        from held), at most ``tail_records``; a tail that could not serve this very read is
        not written.
        """
        if self.tail_after is None or fetched <= self.tail_after or wanted <= 0:
            return
        keep = min(len(digests), max(wanted, held), self.tail_records)
        if keep < wanted:
            return
        length = top.start + len(top.digests)
        tail = Tail(top.seq, top.base, length - keep, digests[-keep:], payloads[-keep:])
        try:
            await self._snapshot(key, TAIL, top, encode(tail))
            self._ends.see(key, top.seq, top.seq)
        except StoreError as err:
            _log.warning("history log %r: tail not written (%s); the read goes on", key, err)

    async def _checkpoint(self, key: str, top: Segment) -> Checkpoint | None:
        listing = await self.objects.list(self._names.folder(key) + CHECKPOINT, delimiter=None, limit=1)
        if not listing.keys:
            return None
        name = listing.keys[0]
        seq = seq_of(name)
        if seq > top.seq:
            return None
        stored = await self.objects.get(name)
        if stored is None:
            raise _Restart
        try:
            checkpoint = decode_checkpoint(stored.data)
        except (msgspec.DecodeError, msgspec.ValidationError):
            # A checkpoint only saves reading segments: a torn one is dropped, the segments read.
            _log.warning("history log %r: checkpoint %r cannot be decoded; removed, segments read instead", key, name)
            await self.objects.delete(name)
            return None
        return checkpoint if checkpoint.base == top.base else None

    async def _compact(self, key: str, top: Segment, digests: list[str], payloads: list[bytes]) -> None:
        """Write a checkpoint of everything up to ``top``; remove older checkpoints. Idempotent."""
        await self._snapshot(key, CHECKPOINT, top, encode(Checkpoint(top.seq, top.base, digests, payloads)))

    async def _snapshot(self, key: str, kind: str, top: Segment, data: bytes) -> None:
        """Create the checkpoint or tail ``data`` of ``kind`` at ``top``; remove older ones of that kind. Idempotent."""
        name = self._names.of(key, kind, top.seq)
        try:
            await self.objects.put(name, data, if_absent=True)
        except StoreConflictError:
            return  # another reader wrote one at the same segment
        head = await self._head(key)
        if head is None or head.segment.base != top.base:
            await self.objects.delete(name)  # the log was reset meanwhile: keep none of its records
            return
        older = await self.objects.list(self._names.folder(key) + kind, delimiter=None, after=name)
        await self._gather([_deleter(self.objects, k) for k in older.keys])

    async def tail(self, key: str, count: int) -> LogTail:
        """Return the log's length, version and the digests of its last ``min(length, count)`` records.

        Raises:
            LogGapError: Segments holding some of those records are missing from the store.
        """
        found = await self._tail_from_end(key, count)
        if found is not None:
            return found
        head, digests, payloads = await self._window(key, max(count, 0))
        if head is None or not head.live:
            self._ends.forget(key)
            if head is not None:
                self._written.put(key, True)
            return LogTail(0, [], None)
        self._ends.learn(key, head.segment, digests, payloads)
        return LogTail(head.length, digests, head.version)

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        """Return the payloads in append order; with ``last``, only the newest ``last`` of them.

        Raises:
            LogGapError: Segments holding some of those records are missing from the store (a
                window wholly after them still reads).
            CorruptRecordError: A segment cannot be decoded.
        """
        if last is not None and last <= 0:
            return []
        window = _WHOLE if last is None else last
        found = await self._window_from_end(key, window)
        if found is not None:
            return found
        head, digests, payloads = await self._window(key, last)
        if head is not None and head.live:
            self._ends.learn(key, head.segment, digests, payloads, window=window)
        else:
            self._ends.forget(key)
            if head is not None:
                self._written.put(key, True)
        return payloads

    async def read_many(self, keys: Sequence[str]) -> list[list[bytes] | None]:
        """Return what :meth:`read` returns for each of ``keys``, in order; ``None`` where it must be read alone.

        The objects of all the logs are listed together, once: the range of their common folder
        from the first log's objects to the last one's (one request per 1,000 objects in it,
        whatever the number of logs), so keys that sort together (a page of
        :meth:`list_logs`) cost a listing of theirs, not of their whole folder. A log the
        listing shows as a single segment and nothing else is then one ``get`` of that segment
        (the newest, as :meth:`read` finds it with its own listing). ``None`` for a log the
        listing shows otherwise (absent, several segments, a tail or checkpoint, a floor
        marker) or whose segment is blank, torn or gone since: :meth:`read` of it answers.
        Nothing is remembered.
        """
        if not keys:
            return []
        folder_of = {self._names.folder(k): i for i, k in enumerate(keys)}
        first, last = min(folder_of), max(folder_of)  # the common prefix of all is theirs
        shared = next((n for n, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), len(first))
        prefix = first[: first.rfind("/", 0, shared) + 1]
        # Every object of the first log sorts after its folder without the "/"; the listing
        # stops at the first object past the last log's folder.
        after: str | None = first[:-1] if first[:-1] > prefix else None
        leaves: dict[int, list[str]] = {}
        while True:
            listing = await self.objects.list(prefix, delimiter=None, after=after, limit=_MANY_PAGE)
            for name in listing.keys:
                folder, _, leaf = name.rpartition("/")
                at = folder_of.get(folder + "/")
                if at is not None:
                    leaves.setdefault(at, []).append(leaf)
            if len(listing.keys) < _MANY_PAGE or _past(listing.keys[-1], last):
                break
            after = listing.keys[-1]
        found: list[list[bytes] | None] = [None] * len(keys)
        single = [
            (i, self._names.folder(keys[i]) + held[0])
            for i, held in leaves.items()
            if len(held) == 1 and LOG_OBJECT.fullmatch(held[0]) and held[0].startswith(SEGMENT)
        ]
        stored = await self._gather([_getter(self.objects, name) for _, name in single])
        for (i, name), got in zip(single, stored, strict=True):
            segment = None if got is None else try_decode(got.data)
            if segment is None or segment.start or seq_of(name) != segment.seq:
                continue  # vanished, blank, torn, or not a whole life: read alone
            found[i] = list(segment.payloads) if self._head_of(keys[i], segment).live else []
        return found

    async def length(self, key: str) -> int:
        """Return the number of records under ``key`` (0 when absent or expired)."""
        head = await self._head(key)
        return 0 if head is None else head.length

    # -- writing ---------------------------------------------------------------------------

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        """Claim the next segment with the batch, only if the log is still at ``expected_version``.

        A log whose previous life was deleted or expired but not yet erased (an interrupted
        delete or restart) is erased first, by this append.

        Raises:
            StoreConflictError: The log moved on, was deleted, or expired; nothing was written.
            ValueError: ``records`` is empty, or ``expected_version`` is not a version this
                driver handed out.
        """
        if not records:
            raise ValueError("append needs at least one record")
        now = self._clock()
        expires_at = None if ttl is None else now + ttl
        digests = [r.digest for r in records]
        payloads = [bytes(r.payload) for r in records]
        if expected_version is None:
            head = await self._head(key)
            if head is not None and head.live:
                raise StoreConflictError(f"log {key!r} exists, expected it absent")
            if head is None:
                seq = known = 1
            else:
                top = head.segment
                seq = top.seq + 1
                known = await self._known_clean(key, top)
                if top.is_reset and known >= top.seq:
                    known = seq  # the reset holds no records
            segment = Segment(seq, seq, 0, session_id, expires_at, digests, payloads, known, new_token())
            await self._claim(key, segment)
            if known < seq:
                await self._erase(key, known, seq)
        else:
            seq, base, length, expiry, tag, known = parse_version(expected_version)
            if tag != key_tag(key):
                raise StoreConflictError(f"version {expected_version!r} is not a version of log {key!r}")
            if expiry is not None and expiry <= now:
                raise StoreConflictError(f"log {key!r} expired after version {expected_version!r}")
            if base > 1 and known < base:
                await self._finish_erasing(key, base, known)  # a restart interrupted before it erased
            segment = Segment(seq + 1, base, length, session_id, expires_at, digests, payloads, base, new_token())
            if await self._take_turn(key):
                await self._look_before_claiming(key, segment)
            await self._claim(key, segment)
            self._ends.won(key)
        self._ends.learn(key, segment, digests, payloads, own=True)
        if self.tail_after is not None:
            seen = self._ends.seen(key)
            same_life = seen is not None and segment.base != segment.seq
            self._ends.see(key, segment.seq, seen[1] if seen is not None and same_life else None)
        # The version names what the segment proves (a tail read hands out the same one): after a
        # restart, the first append looks up the erasure record once.
        return Head(key, segment, live=True).version

    async def create(
        self, key: str, records: Sequence[LogRecord], *, session_id: str, ttl: float | None = None
    ) -> LogVersion | None:
        """Start the log with ``records`` if it never held a segment: one conditional ``put``, no listing.

        Segments are blanked, never removed, so the first slot of a log is free only while
        nothing was ever written to it (no life, no delete, no retention of it). ``None`` when
        the slot is taken: nothing was written, and :meth:`append` is the way on. A log this
        driver saw written (its end remembered, or a read that found it deleted or expired) is
        ``None`` at once, without a request: a save to a session deleted and written again
        costs nothing more for trying.

        Raises:
            ValueError: ``records`` is empty.
        """
        if not records:
            raise ValueError("create needs at least one record")
        if key in self._written or self._ends.end(key) is not None:
            return None
        expires_at = None if ttl is None else self._clock() + ttl
        digests = [r.digest for r in records]
        payloads = [bytes(r.payload) for r in records]
        segment = Segment(1, 1, 0, session_id, expires_at, digests, payloads, 1, new_token())
        try:
            await self.objects.put(self._names.of(key, SEGMENT, 1), encode(segment), if_absent=True)
        except StoreConflictError:
            self._written.put(key, True)
            return None
        self._ends.learn(key, segment, digests, payloads, own=True)
        if self.tail_after is not None:
            self._ends.see(key, 1, None)
        return Head(key, segment, live=True).version

    async def _claim(self, key: str, segment: Segment) -> None:
        """Create ``segment`` if its slot is free; a slot holding this very write (a retried request) counts."""
        name = self._names.of(key, SEGMENT, segment.seq)
        data = encode(segment)
        began = time.monotonic()
        try:
            await self.objects.put(name, data, if_absent=True)
        except StoreConflictError as err:
            self._time_claim(began)
            stored, later = await self._taken(key, segment.seq)
            if stored is None or stored.data != data:
                await self._lost_to(key, segment, stored, later, err)
                raise
            _log.info(
                "history log %r: segment %d was already written by this append (a retried request)", key, segment.seq
            )
            return
        self._time_claim(began)

    async def _taken(self, key: str, seq: int) -> tuple[StoredObject | None, list[StoredObject | None] | None]:
        """What slot ``seq`` holds and, with fair claims, the slots after it, read in one parallel round.

        The slots after it are as many as others wrote during the previous lost claim and one
        more (the first one found absent shows where the log ended).
        """
        name = self._names.of(key, SEGMENT, seq)
        if not self.fair_claims:
            return await self.objects.get(name), None
        known = self._ends.end(key)
        after = range(seq + 1, seq + 2 + min(known.pace if known else 0, _END_CATCH_UP))
        found = await self._gather(
            [_getter(self.objects, n) for n in [name, *map(partial(self._names.of, key, SEGMENT), after)]]
        )
        return found[0], found[1:]

    async def _lost_to(
        self,
        key: str,
        segment: Segment,
        stored: StoredObject | None,
        later: list[StoredObject | None] | None,
        err: StoreConflictError,
    ) -> None:
        """Note that the slot ``segment`` wanted holds ``stored``: the log is contended, and its winner is learned.

        A winner continuing the same life at the same length is the log's next state, so the
        retry's tail read need only look for what came after it. With fair claims ``later``
        holds the slots after the winner's, read with it: the contiguous segments there up to
        the first absent slot are learned too, and the end they reach (the log's end a moment
        ago, with the digests known up to it) is handed to the retry on ``err.log_end``.
        """
        self._ends.contend(key, time.monotonic(), lost=True)
        winner = None if stored is None else try_decode(stored.data)
        if winner is None or winner.base != segment.base or winner.start != segment.start:
            return
        known = self._ends.end(key)
        run = [winner]
        complete = False
        for offset, found in enumerate(later or [], start=1):
            if found is None:
                complete = True  # the first free slot: the run reaches the log's end
                break
            after = try_decode(found.data)
            if (
                after is None
                or after.seq != winner.seq + offset
                or after.base != winner.base
                or after.start != run[-1].end
            ):
                break  # blank, torn, reset or not contiguous: the retry reads the log as usual
            run.append(after)
        pace = max(1, len(run) - 1, known.pace if known and not complete else 1)
        for taken in run:
            self._ends.learn(key, taken, taken.digests, taken.payloads, pace=pace)
        end = self._ends.end(key)
        if complete and end is not None and end.segment is run[-1]:
            head = self._head_of(key, end.segment)
            if head.live:
                err.log_end = LogTail(head.length, end.digests, head.version)

    def _time_claim(self, began: float) -> None:
        """Fold the round trip of a claim that started at ``began`` into the driver's running figure."""
        took = time.monotonic() - began
        self._claim_rtt = took if not self._claim_rtt else self._claim_rtt + _RTT_WEIGHT * (took - self._claim_rtt)

    async def _take_turn(self, key: str) -> bool:
        """On a contended log, wait for this writer's turn to claim; return whether the log is contended.

        A writer that has been losing claims on the log for a while goes at once; one that has
        just started (a new save, or one that just won) waits up to half a claim round trip, less
        the longer it has waited. Writers racing for the next slot learned the log's end at
        about the same time, so the one waiting longest tends to reach the slot first: a writer
        that keeps losing soon goes ahead of the newcomers. A log on which this driver
        met no other writer in the last second is claimed at once.
        """
        if not self.fair_claims:
            return False
        state = self._ends.contended(key)
        now = time.monotonic()
        if state is None or now - state[0] > _CONTENDED_S:
            return False
        waited = 0.0 if state[1] is None else now - state[1]
        rtt = self._claim_rtt
        delay = _TURN_ROUND_TRIPS * rtt * max(0.0, 1.0 - waited / (_SENIOR_ROUND_TRIPS * rtt or 1.0))
        if delay > 0:
            await asyncio.sleep(delay)
        return True

    async def _look_before_claiming(self, key: str, segment: Segment) -> None:
        """Before claiming ``segment`` just after this driver's own segment of a contended log, look if it is free.

        A writer that just won a segment knows the log's end at once; the writers it beat
        learn it only with the ``get`` after their failed ``put``, a round trip later, so a
        writer saving back to back would win every next slot. On a log where this driver met
        another writer in the last second, the winner first reads the slot it wants, the same
        round trip, so each slot is an even race; a slot found taken is a lost claim (its winner
        learned as :meth:`_claim` learns one). A log nobody else writes costs nothing.

        Raises:
            StoreConflictError: Another writer took the slot.
        """
        if not self.fair_claims:
            return
        end = self._ends.end(key)
        if end is None or not end.own or end.segment.seq != segment.seq - 1:
            return  # not a claim right after this driver's own segment
        stored, later = await self._taken(key, segment.seq)
        if stored is not None:
            err = StoreConflictError(f"log {key!r}: segment {segment.seq} was claimed by another writer")
            await self._lost_to(key, segment, stored, later, err)
            raise err

    async def _floor_marker(self, key: str) -> int:
        """The newest erasure record: no segment below it holds records (0 when none)."""
        listing = await self.objects.list(self._names.folder(key) + FLOOR, delimiter=None, limit=1)
        return seq_of(listing.keys[0]) if listing.keys else 0

    async def _known_clean(self, key: str, top: Segment) -> int:
        """Below which sequence number no records are left, for a log whose newest segment is ``top``."""
        known = top.clean_below
        if known < top.base:
            known = max(known, min(await self._floor_marker(key), top.base))
        return known

    async def _finish_erasing(self, key: str, below: int, known: int) -> None:
        """Erase what an interrupted delete or restart left below ``below`` (idempotent)."""
        known = max(known, min(await self._floor_marker(key), below))
        if known < below:
            _log.info("history log %r: finishing an interrupted erasure of segments %d to %d", key, known, below - 1)
            await self._erase(key, known, below)

    async def _erase(self, key: str, start: int, upto: int) -> None:
        """Blank segments ``start`` … ``upto - 1``, drop checkpoints and tails below ``upto``, then record it.

        Blanking overwrites in place (plain writes, so a slot nobody wrote is created empty and
        no append can claim it later). Safe to repeat: an interrupted erasure is finished by
        the next delete, purge or append that finds it unrecorded.
        """
        start = max(start, 1)
        names = [self._names.of(key, SEGMENT, seq) for seq in range(start, upto)]
        await self._gather([_overwriter(self.objects, n, b"") for n in names])
        listings = await self._gather(
            [_full_lister(self.objects, self._names.folder(key) + kind) for kind in (CHECKPOINT, TAIL)]
        )
        stale = [k for listing in listings for k in listing.keys if seq_of(k) < upto]
        await self._gather([_deleter(self.objects, k) for k in stale])
        await self.objects.put(self._names.of(key, FLOOR, upto), b"")

    async def _reset(self, key: str, *, only_expired: bool) -> bool | None:
        """End the log's current life with a reset segment and erase it.

        Returns whether the log was live before, or ``None`` when there was nothing to reset.
        An erasure an earlier delete or restart left unfinished is finished here. Against
        concurrent appends it retries with jittered exponential backoff, and from the fifth
        attempt claims a slot further ahead each time (2, 4, … up to 1,024 past the end), so it
        wins after a bounded number of appends: appends that land in the skipped slots overlap
        the delete and are erased by it.
        """
        attempt = 0
        while True:
            head = await self._head(key)
            if head is None:
                return None
            top = head.segment
            if top.is_reset:
                await self._finish_erasing(key, top.seq, top.clean_below)
                return None
            if only_expired and head.live:
                if top.clean_below < top.base:
                    await self._finish_erasing(key, top.base, top.clean_below)
                return None
            known = top.clean_below
            gap = (
                1
                if attempt < _RESET_PLAIN_ATTEMPTS
                else min(2 ** (attempt - _RESET_PLAIN_ATTEMPTS + 1), _RESET_MAX_GAP)
            )
            seq = top.seq + gap
            reset = Segment(seq, seq, 0, top.session_id, None, [], [], known, new_token())
            try:
                await self._claim(key, reset)
            except StoreConflictError:
                attempt += 1
                delay = min(_RESET_BACKOFF_CAP_S, _RESET_BACKOFF_BASE_S * 2**attempt)
                await asyncio.sleep(random.uniform(0, delay))
                continue
            self._ends.forget(key)
            await self._erase(key, known, seq)
            return head.live

    async def delete(self, key: str) -> bool:
        """Remove the log's records; return whether it was live (an expired log was not).

        Finishes an earlier interrupted delete or restart of the same log; never gives up
        against concurrent appends (see :meth:`_reset`).
        """
        return bool(await self._reset(key, only_expired=False))

    async def delete_if_version(self, key: str, version: LogVersion) -> bool:
        """Remove the log only while it is at ``version``: :meth:`rewrite` with no records; return ``True``.

        One conditional ``put`` decides (an append at ``version`` and this delete claim the same
        segment, and one of them wins); the old objects are then erased as :meth:`delete` does.

        Raises:
            StoreConflictError: The log moved on, was deleted, or expired; nothing was removed.
        """
        await self.rewrite(key, [], expected_version=version, session_id="")
        return True

    # -- repairing -------------------------------------------------------------------------

    async def salvage(self, key: str) -> Salvage | None:
        """Everything readable of the log and what is lost, without writing; ``None`` when it is absent or expired.

        Fetches every segment of the log's current life and its checkpoints and tails (one
        ``get`` each: the cost of a repair tool, not of a read). A segment that is absent,
        blank or cannot be decoded is part of a gap; a checkpoint or tail holding records of
        a gap fills them.

        Raises:
            StoreConflictError: The log kept changing while it was read.
        """
        for _ in range(_READ_ATTEMPTS):
            head = await self._head(key)
            if head is None or not head.live:
                return None
            top = head.segment
            listing = await self.objects.list(self._names.folder(key), delimiter=None)
            snapshots = [
                name
                for name in listing.keys
                if SNAPSHOT_OBJECT.fullmatch(name.rpartition("/")[2]) and top.base <= seq_of(name) <= top.seq
            ]
            seqs = range(top.base, top.seq)
            names = [*(self._names.of(key, SEGMENT, seq) for seq in seqs), *snapshots]
            found = await self._gather([_getter(self.objects, n) for n in names])
            segments: dict[int, Segment | None] = {top.seq: top}
            for seq, stored in zip(seqs, found, strict=False):
                segments[seq] = None if stored is None else try_decode(stored.data)
            held: list[Checkpoint | Tail] = []
            for name, stored in zip(snapshots, found[len(seqs) :], strict=True):
                if stored is not None:
                    snapshot = _try_snapshot(name, stored.data)
                    if snapshot is not None:
                        held.append(snapshot)
            if await self._newest(key) != self._names.of(key, SEGMENT, top.seq):
                continue  # written or deleted meanwhile: survey again
            return salvage_of(head, segments, held)
        raise StoreConflictError(f"log {key!r} kept changing while it was read")

    async def rewrite(
        self, key: str, records: Sequence[LogRecord], *, expected_version: LogVersion, session_id: str
    ) -> LogVersion:
        """Replace the log's records with ``records``, only if the log is still at ``expected_version``.

        One conditional ``put``: a segment at the next sequence number starting a new life of
        the log, so every reader sees the old records or the new ones, never a mix, and every
        writer holding an older version conflicts. The older segments (missing ones included:
        they come back as empty placeholders), checkpoints and tails are then erased as a
        delete erases them, resumably. The log keeps its expiry; with no ``records`` it is
        deleted (the new segment is a reset) and the returned version is ``None``.

        Raises:
            StoreConflictError: The log moved on, was deleted, or expired; nothing was written.
            ValueError: ``expected_version`` is not a version this driver handed out.
        """
        if expected_version is None:
            raise StoreConflictError(f"log {key!r}: a rewrite needs the version of a live log")
        seq, _, _, expiry, tag, known = parse_version(expected_version)
        if tag != key_tag(key):
            raise StoreConflictError(f"version {expected_version!r} is not a version of log {key!r}")
        if expiry is not None and expiry <= self._clock():
            raise StoreConflictError(f"log {key!r} expired after version {expected_version!r}")
        digests = [r.digest for r in records]
        payloads = [bytes(r.payload) for r in records]
        expires_at = expiry if records else None
        segment = Segment(seq + 1, seq + 1, 0, session_id, expires_at, digests, payloads, known, new_token())
        await self._claim(key, segment)
        self._ends.forget(key)
        await self._erase(key, known, segment.seq)
        return self._head_of(key, segment).version

    # -- listing ---------------------------------------------------------------------------

    async def _log_page(self, prefix: str, after: str | None) -> list[tuple[str, str | None]]:
        """One page of logs under ``prefix`` (after ``after``), in folder order; ``[]`` at the end.

        Each log comes with the name of its newest segment when the page holds it (the first
        segment name of the log's folder: names sort newest first), else ``None`` (the page
        ended among the log's checkpoints and erasure records).
        """
        start = self.prefix + prefix
        cursor = None if after is None else self._names.folder(after)[:-1] + PAST_LOG
        listing = await self.objects.list(start, delimiter=None, after=cursor, limit=_LISTING_PAGE)
        logs: list[tuple[str, str | None]] = []
        for name in listing.keys:
            folder, _, leaf = name.rpartition("/")
            if not LOG_OBJECT.fullmatch(leaf):
                continue
            key = folder[len(self.prefix) :]
            if not logs or logs[-1][0] != key:
                logs.append((key, None))
            if logs[-1][1] is None and leaf.startswith(SEGMENT):
                logs[-1] = (key, name)
        if not logs and len(listing.keys) == _LISTING_PAGE:
            # A page of foreign objects only: continue after them.
            return await self._log_page(prefix, listing.keys[-1][len(self.prefix) :])
        return logs

    async def _log_keys(self, prefix: str, after: str | None) -> list[str]:
        """One page of log keys under ``prefix`` (after ``after``), in folder order; ``[]`` at the end."""
        return [key for key, _ in await self._log_page(prefix, after)]

    async def _listed_head(self, key: str, newest: str | None) -> Head | None:
        """The head of ``key`` from the newest segment a listing showed: one ``get``, no listing of its own.

        The listing is the snapshot the head answers for, as :meth:`_head`'s own listing would
        be. Anything else than a readable segment at that name (gone, blanked by a delete
        since, torn, not listed) is left to :meth:`_head`.
        """
        if newest is not None:
            stored = await self.objects.get(newest)
            segment = None if stored is None else try_decode(stored.data)
            if segment is not None and segment.seq == seq_of(newest):
                return self._head_of(key, segment)
        return await self._head(key)

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        """Return up to ``limit`` live logs whose key starts with ``prefix``, after ``after``.

        Ordered by ``key + "/"``; page with ``after=<last key of the previous page>``. Costs one
        listing per page of objects and one ``get`` per log looked at (its newest segment, named
        by that listing: whether the log is live, expired or deleted, and its session id, are
        in it), only as many logs as it takes to find ``limit`` live ones.
        """
        if limit <= 0:
            raise ValueError(f"limit must be positive, got {limit!r}")
        found: list[LogInfo] = []
        cursor = after
        while len(found) < limit:
            page = await self._log_page(prefix, cursor)
            if not page:
                break
            while page and len(found) < limit:
                # Only as many heads as the logs still wanted: a page may list more logs than that.
                chunk, page = page[: limit - len(found)], page[limit - len(found) :]
                heads = await self._gather([_listed_header(self, key, newest) for key, newest in chunk])
                found.extend(
                    LogInfo(key, head.segment.session_id)
                    for (key, _), head in zip(chunk, heads, strict=True)
                    if head is not None and head.live
                )
                cursor = chunk[-1][0]
        return found

    async def purge_expired(self) -> int:
        """Blank every expired log under this driver's prefix; return how many.

        Also finishes any interrupted delete or restart it finds.
        """
        purged = 0
        cursor: str | None = None
        while keys := await self._log_keys("", cursor):
            results = await self._gather([_expirer(self, k) for k in keys])
            purged += sum(1 for r in results if r is not None)
            cursor = keys[-1]
        return purged

    def settings(self) -> dict[str, Any]:
        """This driver's options of :data:`LOG_OPTIONS`, as its constructor takes them."""
        return {name: getattr(self, name) for name in LOG_OPTIONS}

    def within(self, prefix: str) -> ObjectLogDriver:
        """The same log layout under ``prefix`` of the object driver (a tenant's root): ``<prefix><self.prefix><key>/``.

        The object driver is shared and borrowed; the settings are this driver's.
        """
        return ObjectLogDriver(
            self.objects,
            prefix=prefix + self.prefix,
            cache_bytes=self.cache_bytes,
            cache_idle=self.cache_idle,
            clock=self._clock,
            **self.settings(),
        )

    def tuned(self, **options: Any) -> ObjectLogDriver:
        """The same logs with some of :data:`LOG_OPTIONS` changed (read as their readers read them).

        The driver returned borrows the object driver and shares what this one remembers of
        the logs (their ends and the logs seen written): it holds no memory of its own. The
        options not given are this driver's.

        Raises:
            ValueError: An option is not one of :data:`LOG_OPTIONS`, or its reader refuses the value (naming it).
        """
        unknown = sorted(set(options) - LOG_OPTIONS.keys())
        if unknown:
            raise ValueError(f"unknown object log options {unknown}; it takes {', '.join(sorted(LOG_OPTIONS))}")
        driver = ObjectLogDriver(
            self.objects, prefix=self.prefix, cache_bytes=0, clock=self._clock, **{**self.settings(), **options}
        )
        driver._ends, driver._written = self._ends, self._written
        return driver

    async def aclose(self) -> None:
        """Close the object driver if this driver owns it."""
        if self.owns_objects:
            await self.objects.aclose()


def _past(name: str, folder: str) -> bool:
    """Whether object ``name`` sorts after every object of ``folder`` (a log's folder, ending with ``/``)."""
    return name > folder and not name.startswith(folder)


def _getter(objects: ObjectDriver, key: str) -> Callable[[], Awaitable[StoredObject | None]]:
    return lambda: objects.get(key)


def _lister(driver: ObjectLogDriver, key: str, kind: str) -> Callable[[], Awaitable[str | None]]:
    return lambda: driver._newest(key, kind)  # pyright: ignore[reportPrivateUsage]


def _full_lister(objects: ObjectDriver, prefix: str) -> Callable[[], Awaitable[Listing]]:
    return lambda: objects.list(prefix, delimiter=None)


def _deleter(objects: ObjectDriver, key: str) -> Callable[[], Awaitable[bool]]:
    return lambda: objects.delete(key)


def _overwriter(objects: ObjectDriver, key: str, data: bytes) -> Callable[[], Awaitable[str]]:
    return lambda: objects.put(key, data)


def _listed_header(driver: ObjectLogDriver, key: str, newest: str | None) -> Callable[[], Awaitable[Head | None]]:
    return lambda: driver._listed_head(key, newest)  # pyright: ignore[reportPrivateUsage]


def _expirer(driver: ObjectLogDriver, key: str) -> Callable[[], Awaitable[bool | None]]:
    return lambda: driver._reset(key, only_expired=True)  # pyright: ignore[reportPrivateUsage]


def _try_snapshot(name: str, data: bytes) -> Checkpoint | Tail | None:
    """The checkpoint or tail ``name`` holds, or ``None`` when it cannot be decoded."""
    try:
        return decode_tail(data) if name.rpartition("/")[2].startswith(TAIL) else decode_checkpoint(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
