"""What a store holds, one level of the key layout at a time: tenants, namespaces, source ids.

Every backend answers these from the two drivers it already has: an object listing with a
delimiter folds a level directly; a log driver, which lists whole logs only, is walked one
distinct segment per request (each request skips past every log under the segment it found).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import NamedTuple

from .drivers import LogDriver, ObjectDriver
from .keys import decode_segment

__all__ = ["Segment", "iter_pages", "log_segments", "object_segments", "segments"]

# Sorts after every character a key segment holds (segments are ASCII), so a listing that
# starts after ``<prefix><segment>/\x7f`` skips every key under that segment.
_PAST_SEGMENT = "/\x7f"


class Segment(NamedTuple):
    """One level of the layout: its key segment, and the id it decodes to where it can (else ``None``)."""

    segment: str
    name: str | None

    @classmethod
    def of(cls, segment: str) -> Segment:
        """The entry for ``segment``."""
        return cls(segment, decode_segment(segment))


async def object_segments(
    objects: ObjectDriver, prefix: str, *, after: str | None = None, limit: int = 100
) -> list[str]:
    """Return the ``limit`` smallest segments directly under ``prefix`` of ``objects`` that sort after ``after``."""
    listing = await objects.list(
        prefix, delimiter="/", after=None if after is None else prefix + after + _PAST_SEGMENT, limit=limit
    )
    return [p[len(prefix) : -1] for p in listing.prefixes if len(p) > len(prefix) + 1]


async def log_segments(
    logs: LogDriver,
    prefix: str,
    *,
    after: str | None = None,
    limit: int = 100,
    hidden: Callable[[str], bool] | None = None,
) -> list[str]:
    """Return the ``limit`` smallest first segments of the log keys under ``prefix`` that sort after ``after``.

    One ``list_logs`` request per segment found; segments ``hidden`` says are skipped (and do
    not count towards ``limit``).
    """
    found: list[str] = []
    cursor = None if after is None else prefix + after + _PAST_SEGMENT
    while len(found) < limit:
        logs_found = await logs.list_logs(prefix, after=cursor, limit=1)
        if not logs_found:
            break
        segment = logs_found[0].key[len(prefix) :].partition("/")[0]
        if hidden is None or not hidden(segment):
            found.append(segment)
        cursor = prefix + segment + _PAST_SEGMENT
    return found


async def segments(
    sources: list[Callable[[str | None, int], Awaitable[list[str]]]],
    *,
    after: str | None = None,
    limit: int = 100,
    exclude: frozenset[str] = frozenset(),
) -> list[Segment]:
    """Merge the segments several listings give into one sorted, distinct page of ``limit``."""
    if limit <= 0:
        raise ValueError(f"limit must be positive, got {limit!r}")
    merged: set[str] = set()
    for source in sources:
        merged.update(s for s in await source(after, limit + len(exclude)) if s not in exclude)
    return [Segment.of(s) for s in sorted(merged)[:limit]]


async def iter_pages(
    page: Callable[[str | None, int], Awaitable[list[Segment]]], *, size: int = 100
) -> AsyncIterator[Segment]:
    """Yield every entry of a paged listing (``page(after, limit)``), in order."""
    after: str | None = None
    while True:
        entries = await page(after, size)
        for entry in entries:
            yield entry
        if len(entries) < size:
            return
        after = entries[-1].segment
