"""``BoundedCache``: a least-recently-used map bounded by entry count, by a cost budget and by idle time.

Every cache in the project is one of these, owned by the object that uses it (a history
provider's remembered tails, the object log's remembered ends, a decode cache), so its bound is
visible and configurable where the owner is made, and nothing is process-wide state.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

__all__ = ["BoundedCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """A map that forgets its least recently used entries past ``max_entries`` or ``max_cost``, and idle ones.

    ``cost(key, value)`` gives what an entry counts against ``max_cost`` (default: 1 each);
    an entry costing more than ``max_cost`` alone is never kept. ``max_cost=0`` or
    ``max_entries=0`` keeps nothing, so a cache can be switched off by its size.
    :meth:`get` marks the entry used; :meth:`peek` does not (a plain dictionary lookup, for hot
    paths that evict by insertion order, and mark what they read with :meth:`renew`).

    With ``max_idle``, an entry not put, got or renewed for ``max_idle`` seconds of ``clock`` is
    forgotten by the next :meth:`put`, :meth:`get` or :meth:`expire`: lazily, from the least
    recently used end, so each operation costs O(1) amortized and one reading of ``clock``.
    Nothing runs in the background: an idle cache gives its memory back on its next use.

    Not locked: every operation is safe within one event loop. Used from several threads at
    once, a lost race costs at most a miss or an early eviction, never a wrong value.

    Args:
        max_entries: Most entries kept (``None``: no bound by count).
        max_cost: Most total cost kept (``None``: no bound by cost).
        cost: The cost of one entry.
        max_idle: Seconds an entry is kept unused (``None``: no bound by time).
        clock: Seconds that never run backwards (default :func:`time.monotonic`).

    Raises:
        ValueError: A bound is negative, or ``max_idle`` is not a positive, finite number.
    """

    __slots__ = (
        "_clock",
        "_cost",
        "_cost_of",
        "_costs",
        "_entries",
        "max_cost",
        "max_entries",
        "max_idle",
        "peek",
        "stamps",
    )

    def __init__(
        self,
        *,
        max_entries: int | None = None,
        max_cost: int | None = None,
        cost: Callable[[K, V], int] | None = None,
        max_idle: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        _check_idle(max_idle)
        for name, bound in (("max_entries", max_entries), ("max_cost", max_cost)):
            if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 0):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ValueError(f"{name} must be a non-negative integer or None, got {bound!r}")
        self.max_entries = max_entries
        self.max_cost = max_cost
        self._cost_of = cost
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._costs: dict[K, int] = {}
        self._cost = 0
        self.max_idle = max_idle
        self._clock = clock
        #: When each entry was last put, got or renewed (by ``clock``); read it, never change it.
        self.stamps: dict[K, float] = {}
        #: ``peek(key, default=None)``: the entry without marking it used.
        self.peek: Callable[..., V | None] = self._entries.get

    @property
    def enabled(self) -> bool:
        """Whether the cache keeps anything at all."""
        return self.max_entries != 0 and self.max_cost != 0

    @property
    def cost(self) -> int:
        """The total cost of the entries kept."""
        return self._cost

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[K]:
        return iter(list(self._entries))

    def get(self, key: K) -> V | None:
        """Return the entry of ``key`` and mark it most recently used, or ``None``."""
        if self.max_idle is not None:
            now = self._clock()
            self.expire(now)
            value = self._entries.get(key)
            if value is not None:
                self.renew(key, now)
            return value
        value = self._entries.get(key)
        if value is not None:
            try:  # noqa: SIM105 (contextlib.suppress: a context manager per lookup costs more than the lookup)
                self._entries.move_to_end(key)
            except KeyError:  # removed by another thread meanwhile
                pass
        return value

    def renew(self, key: K, now: float) -> None:
        """Mark the entry of ``key`` (if kept) used at ``now``, a reading of this cache's clock: most recently used."""
        try:
            self._entries.move_to_end(key)
        except KeyError:  # not kept, or removed by another thread meanwhile
            return
        self.stamps[key] = now

    def expire(self, now: float | None = None) -> float:
        """Forget the entries unused for ``max_idle`` seconds at ``now`` (default: the clock read once); return ``now``.

        Nothing is read or forgotten without ``max_idle`` (then it returns ``now``, or ``0.0``).
        """
        idle = self.max_idle
        if idle is None:
            return 0.0 if now is None else now
        if now is None:
            now = self._clock()
        entries = self._entries
        if entries:
            cutoff = now - idle
            stamps = self.stamps
            while entries:
                try:
                    oldest = next(iter(entries))
                except (StopIteration, RuntimeError):  # emptied or changed by another thread meanwhile
                    break
                if stamps.get(oldest, cutoff) > cutoff:
                    break
                self.pop(oldest)
        return now

    def put(self, key: K, value: V) -> bool:
        """Keep ``value`` under ``key`` as the most recently used entry; return whether it was kept.

        Older entries are forgotten until both bounds hold. An entry that alone exceeds
        ``max_cost`` is not kept (and an older entry under ``key`` is forgotten).
        """
        self.pop(key)
        if not self.enabled:
            return False
        cost = self._cost_of(key, value) if self._cost_of is not None else 1
        if self.max_cost is not None and cost > self.max_cost:
            return False
        if self.max_idle is not None:
            self.stamps[key] = self.expire()
        self._entries[key] = value
        self._costs[key] = cost
        self._cost += cost
        self._evict()
        return key in self._entries

    def pop(self, key: K) -> V | None:
        """Forget ``key``; return its entry, or ``None``."""
        value = self._entries.pop(key, None)
        cost = self._costs.pop(key, None)
        self.stamps.pop(key, None)
        if cost is not None:
            self._cost = max(0, self._cost - cost)
        return value

    def clear(self) -> None:
        """Forget every entry."""
        self._entries.clear()
        self._costs.clear()
        self.stamps.clear()
        self._cost = 0

    def resize(self, *, max_entries: int | None = None, max_cost: int | None = None) -> None:
        """Set new bounds (``None`` keeps a bound as it is) and forget what no longer fits.

        Raises:
            ValueError: A bound is negative.
        """
        BoundedCache(max_entries=max_entries, max_cost=max_cost)  # validates
        if max_entries is not None:
            self.max_entries = max_entries
        if max_cost is not None:
            self.max_cost = max_cost
        self._evict()

    def _evict(self) -> None:
        entries = self._entries
        while entries and (
            (self.max_entries is not None and len(entries) > self.max_entries)
            or (self.max_cost is not None and self._cost > self.max_cost)
        ):
            try:
                oldest, _ = entries.popitem(last=False)
            except KeyError:  # emptied by another thread meanwhile
                break
            self._cost = max(0, self._cost - self._costs.pop(oldest, 0))
            self.stamps.pop(oldest, None)

    def __repr__(self) -> str:
        return (
            f"BoundedCache({len(self)} entries, cost {self._cost}, "
            f"max_entries={self.max_entries!r}, max_cost={self.max_cost!r}, max_idle={self.max_idle!r})"
        )


def _check_idle(max_idle: float | None) -> None:
    if max_idle is None:
        return
    if isinstance(max_idle, bool) or not isinstance(max_idle, int | float) or not (0 < max_idle < math.inf):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"max_idle must be a positive, finite number of seconds or None, got {max_idle!r}")
