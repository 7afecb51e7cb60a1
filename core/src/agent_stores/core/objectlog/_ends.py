"""What an object-log driver remembers of the logs it read or wrote, in bounded caches it owns."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import NamedTuple

from ..cache import BoundedCache
from ._format import Segment

__all__ = ["End", "RememberedEnds"]

# Logs whose newest segment and tail a driver remembers (for one-round windowed reads).
SEEN_KEYS = 4096
# Logs whose end a driver remembers, and the newest digests it keeps of each (for a tail read
# after a save or a lost claim).
END_KEYS = 1024
END_DIGESTS = 32
# Bytes a remembered record costs besides its payload (its digest, the objects holding both).
RECORD_OVERHEAD = 128
# Logs a driver remembers having met other writers on (for fair claims).
CONTENDED_KEYS = 1024


class End(NamedTuple):
    """What a driver last learned of a log's end: its newest segment then and the records up to it."""

    segment: Segment
    length: int
    digests: list[str]  # the last ``len(digests)`` digests of the log up to ``segment``
    # After a lost claim: how many segments others wrote past the remembered end the last time
    # it was brought up to date (at least 1), so the next catch-up fetches them with the listing;
    # 0 when not contended.
    pace: int
    # The payloads of the last ``len(payloads)`` records up to ``segment`` (``None``: none kept),
    # so the next window of at most ``window`` records can be served from them.
    payloads: list[bytes] | None
    window: int  # records of the largest window read of this log (0: none read)
    # The segment is this driver's own append.
    own: bool = False


class _Window(NamedTuple):
    """The newest payloads of a log up to one segment (its sequence number and token), and their cost."""

    seq: int
    token: bytes
    payloads: list[bytes]
    size: int


class RememberedEnds:
    """A driver's memory of logs: their ends (digests), newest records (payloads) and newest objects seen.

    Three bounded caches, least recently used dropped first: the ends of at most 1,024 logs
    with their newest digests; the payloads of the windows read of them, at most ``cache_bytes``
    in all (payloads and :data:`RECORD_OVERHEAD` bytes per record; 0 keeps none); and the newest
    segment and tail seen of at most 4,096 logs (what a windowed read fetches by name). A
    window no read used for ``max_idle`` seconds is forgotten by the next read or write of a
    window, so payloads are kept for the sessions in use only.

    Args:
        cache_bytes: Most bytes of payloads kept.
        max_idle: Seconds a window no read uses is kept (``None``: until evicted).
        clock: Seconds, for ``max_idle``.

    Raises:
        ValueError: ``cache_bytes`` is negative.
    """

    __slots__ = ("_contended", "_ends", "_seen", "_windows")

    def __init__(
        self, cache_bytes: int, *, max_idle: float | None = None, clock: Callable[[], float] = time.monotonic
    ) -> None:
        if cache_bytes < 0:
            raise ValueError(f"cache_bytes must be at least 0, got {cache_bytes!r}")
        self._ends: BoundedCache[str, End] = BoundedCache(max_entries=END_KEYS)
        self._windows: BoundedCache[str, _Window] = BoundedCache(
            max_entries=END_KEYS,
            max_cost=cache_bytes,
            cost=lambda _, window: window.size,
            max_idle=max_idle,
            clock=clock,
        )
        self._seen: BoundedCache[str, tuple[int, int | None]] = BoundedCache(max_entries=SEEN_KEYS)
        self._contended: BoundedCache[str, tuple[float, float | None]] = BoundedCache(max_entries=CONTENDED_KEYS)

    @property
    def cache_bytes(self) -> int:
        """Most bytes of payloads kept."""
        return self._windows.max_cost or 0

    @property
    def cache_idle(self) -> float | None:
        """Seconds a window no read uses is kept (``None``: until evicted)."""
        return self._windows.max_idle

    @property
    def payload_bytes(self) -> int:
        """Bytes of payloads kept now (with the per-record overhead)."""
        return self._windows.cost

    def end(self, key: str) -> End | None:
        """The remembered end of ``key``, with its payloads when they are kept."""
        known = self._ends.get(key)
        if known is None:
            return None
        held = self._windows.get(key)
        if held is None or (held.seq, held.token) != (known.segment.seq, known.segment.token):
            return known
        return known._replace(payloads=held.payloads)

    def learn(
        self,
        key: str,
        segment: Segment,
        digests: Sequence[str],
        payloads: Sequence[bytes] | None = None,
        *,
        pace: int = 0,
        window: int = 0,
        own: bool = False,
    ) -> None:
        """Note ``segment`` as the newest known of ``key``, ``digests`` the newest ones up to it.

        Records remembered for the segment just below (same life) are kept in front, so a
        save or a lost claim extends what an earlier read learned. ``payloads`` (the newest
        ones up to ``segment``) are kept only for a log whose window was read (``window``,
        or an earlier read's), as many as that window, within ``cache_bytes``. ``own`` marks this
        driver's own append.
        """
        known = self.end(key)
        self.forget(key)
        if known is not None:
            window = max(window, known.window)
        start = segment.end - len(digests)
        joined = list(digests)
        kept = None if payloads is None or not window else list(payloads)
        follows = (
            known is not None
            and known.segment.base == segment.base
            and known.segment.seq < segment.seq
            and known.length == start
        )
        if known is not None and follows:
            joined = [*known.digests, *joined]
            if kept is not None and known.payloads is not None:
                kept = [*known.payloads, *kept]
        if kept is not None:
            kept = kept[-window:]
            size = sum(map(len, kept)) + RECORD_OVERHEAD * len(kept)
            if not self._windows.put(key, _Window(segment.seq, segment.token, kept, size)):
                kept = None  # larger than cache_bytes alone (or none kept)
        digests_kept = max(END_DIGESTS, 0 if kept is None else len(kept))
        self._ends.put(key, End(segment, segment.end, joined[-digests_kept:], pace, None, window, own))

    def contend(self, key: str, when: float, *, lost: bool = False) -> None:
        """Note that another writer was met on ``key`` at ``when`` (a monotonic time); ``lost``: by losing a claim.

        The first lost claim since this driver's last own append starts its wait on the log.
        """
        known = self._contended.get(key)
        since = None if known is None else known[1]
        if lost and since is None:
            since = when
        self._contended.put(key, (when, since))

    def won(self, key: str) -> None:
        """Note that this driver's claim on ``key`` succeeded: its wait (if any) is over."""
        known = self._contended.get(key)
        if known is not None and known[1] is not None:
            self._contended.put(key, (known[0], None))

    def contended(self, key: str) -> tuple[float, float | None] | None:
        """When another writer was last met on ``key``, and since when this driver has been losing claims on it.

        ``None`` when no other writer is remembered; the second time is ``None`` when this
        driver's last claim on ``key`` succeeded.
        """
        return self._contended.get(key)

    def forget(self, key: str) -> None:
        """Forget the end and payloads of ``key`` (what was seen of it, and whether it is contended, stay)."""
        self._ends.pop(key)
        self._windows.pop(key)

    def seen(self, key: str) -> tuple[int, int | None] | None:
        """The newest segment and tail (``None``: none) last seen of ``key``."""
        return self._seen.get(key)

    def see(self, key: str, top_seq: int, tail_seq: int | None) -> None:
        """Note the newest segment and tail of ``key`` seen, for the next read to fetch them by name."""
        self._seen.put(key, (top_seq, tail_seq))
