"""What a damaged object log is missing: runs of absent segments, the records they held, and what is still readable."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from ..drivers import LogRecord, LogVersion
from ..errors import CorruptRecordError
from ._format import Checkpoint, Head, Segment, Tail

__all__ = ["Gap", "LogGapError", "Salvage", "absent_runs", "record_span", "salvage_of"]


def record_span(first: int, end: int) -> str:
    """``records 3 to 7`` (``end`` exclusive), ``record 3``, or ``no records``."""
    if end <= first:
        return "no records"
    return f"record {first}" if end - first == 1 else f"records {first} to {end - 1}"


class Gap(NamedTuple):
    """Segments ``first_seq`` to ``last_seq`` of one life of a log are missing (absent, blank or unreadable).

    They held records ``first_record`` (inclusive) to ``end_record`` (exclusive), counted from
    the first record of the log; ``None`` where that is not known.
    """

    first_seq: int
    last_seq: int
    first_record: int | None
    end_record: int | None

    def __str__(self) -> str:
        segments = (
            f"segment {self.first_seq}"
            if self.first_seq == self.last_seq
            else f"segments {self.first_seq} to {self.last_seq}"
        )
        if self.first_record is not None and self.end_record is not None:
            return f"{segments} ({record_span(self.first_record, self.end_record)})"
        if self.end_record is not None:
            return f"{segments} (records before record {self.end_record})"
        return segments


class LogGapError(CorruptRecordError):
    """A read needed records of segments that are missing from the store: a gap in the log.

    Segments are never removed by the log itself (a delete blanks them in place), so a gap
    means something removed objects behind it, such as a bucket lifecycle rule or a clean-up
    job expiring objects by age. Not transient: reading again fails the same way. Windows
    after the gap still read; ``agent-stores repair`` rewrites the log from what is readable.

    Attributes:
        key: The log's key.
        length: Records the log holds by its newest segment, readable or not.
        gaps: The missing runs of segments, oldest first.
    """

    def __init__(self, key: str, length: int, gaps: Sequence[Gap]) -> None:
        self.key = key
        self.length = length
        self.gaps = list(gaps)
        missing = ", ".join(map(str, self.gaps))
        super().__init__(
            f"history log {key!r} ({length} records) has a gap: {missing} missing from the store (removed "
            "behind the log, as a lifecycle rule or a clean-up job expiring objects by age does); windows "
            "after the gap still read, and `agent-stores repair` rewrites the log from what is readable"
        )

    def __reduce__(self) -> tuple[type[LogGapError], tuple[str, int, list[Gap]]]:
        return type(self), (self.key, self.length, self.gaps)


def absent_runs(present: Iterable[int], base: int, top: int, also: Iterable[int] = ()) -> list[tuple[int, int]]:
    """The runs ``(first, last)`` of sequence numbers from ``base`` to ``top`` not in ``present`` (or in ``also``)."""
    have = {seq for seq in present if base <= seq <= top} - set(also)
    runs: list[tuple[int, int]] = []
    expected = base
    for seq in [*sorted(have), top + 1]:
        if seq > expected:
            runs.append((expected, seq - 1))
        expected = seq + 1
    return runs


class Salvage(NamedTuple):
    """Everything readable of a log's current life, and what is lost.

    Attributes:
        key: The log's key.
        version: The version of the log as read; a repair applies only while it still holds.
        session_id: The session the log was created for.
        length: Records the log holds by its newest segment, readable or not.
        gaps: The missing runs of segments, oldest first (empty: the log is whole).
        records: Every record by its position, ``None`` where no segment, checkpoint or tail
            holds it any more.
    """

    key: str
    version: LogVersion
    session_id: str
    length: int
    gaps: list[Gap]
    records: list[LogRecord | None]

    @property
    def lost(self) -> list[tuple[int, int]]:
        """The runs ``(first, end)`` (``end`` exclusive) of records nothing holds any more."""
        runs: list[tuple[int, int]] = []
        for index, record in enumerate(self.records):
            if record is not None:
                continue
            if runs and runs[-1][1] == index:
                runs[-1] = (runs[-1][0], index + 1)
            else:
                runs.append((index, index + 1))
        return runs

    @property
    def after_gap(self) -> int:
        """Position of the first record after the newest lost one (0 when nothing is lost)."""
        lost = self.lost
        return lost[-1][1] if lost else 0


def salvage_of(head: Head, segments: Mapping[int, Segment | None], snapshots: Iterable[Checkpoint | Tail]) -> Salvage:
    """What ``head``'s life still holds, from its readable ``segments`` (by sequence number) and ``snapshots``.

    A checkpoint or tail of the same life fills records its segments lost when it agrees with
    a readable segment around it (or none is left to compare with).
    """
    top = head.segment
    records: list[LogRecord | None] = [None] * head.length

    def fill(start: int, digests: Sequence[str], payloads: Sequence[bytes]) -> None:
        for offset, (digest, payload) in enumerate(zip(digests, payloads, strict=True)):
            position = start + offset
            if 0 <= position < len(records) and records[position] is None:
                records[position] = LogRecord(digest, payload)

    readable: dict[int, Segment] = {}
    for seq in range(top.base, top.seq + 1):
        segment = segments.get(seq)
        if segment is not None and segment.base == top.base and segment.seq == seq:
            readable[seq] = segment
            fill(segment.start, segment.digests, segment.payloads)
    for snapshot in snapshots:
        if snapshot.base != top.base or snapshot.seq > top.seq:
            continue
        start = snapshot.start if isinstance(snapshot, Tail) else 0
        end = start + len(snapshot.digests)
        at, after = readable.get(snapshot.seq), readable.get(snapshot.seq + 1)
        if (at is not None and at.end != end) or (after is not None and after.start != end):
            continue  # does not join the segments around it: not trusted
        fill(start, snapshot.digests, snapshot.payloads)
    gaps: list[Gap] = []
    for first, last in absent_runs(readable, top.base, top.seq):
        below, above = readable.get(first - 1), readable.get(last + 1)
        first_record = 0 if first == top.base else None if below is None else below.end
        gaps.append(Gap(first, last, first_record, None if above is None else above.start))
    return Salvage(head.key, head.version, top.session_id, head.length, gaps, records)
