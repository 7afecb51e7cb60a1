"""``BoundedCache``: a least-recently-used map bounded by entry count and by a cost budget.

Every cache in the project is one of these, owned by the object that uses it (a history
provider's remembered tails, the object log's remembered ends, a decode cache), so its bound is
visible and configurable where the owner is made, and nothing is process-wide state.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

__all__ = ["BoundedCache"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class BoundedCache(Generic[K, V]):
    """A map that forgets its least recently used entries past ``max_entries`` or ``max_cost``.

    ``cost(key, value)`` gives what an entry counts against ``max_cost`` (default: 1 each);
    an entry costing more than ``max_cost`` alone is never kept. ``max_cost=0`` or
    ``max_entries=0`` keeps nothing, so a cache can be switched off by its size.
    :meth:`get` marks the entry used; :meth:`peek` does not (a plain dictionary lookup, for hot
    paths that evict by insertion order).

    Not locked: every operation is safe within one event loop. Used from several threads at
    once, a lost race costs at most a miss or an early eviction, never a wrong value.

    Args:
        max_entries: Most entries kept (``None``: no bound by count).
        max_cost: Most total cost kept (``None``: no bound by cost).
        cost: The cost of one entry.

    Raises:
        ValueError: A bound is negative.
    """

    __slots__ = ("_cost", "_cost_of", "_costs", "_entries", "max_cost", "max_entries", "peek")

    def __init__(
        self,
        *,
        max_entries: int | None = None,
        max_cost: int | None = None,
        cost: Callable[[K, V], int] | None = None,
    ) -> None:
        for name, bound in (("max_entries", max_entries), ("max_cost", max_cost)):
            if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 0):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise ValueError(f"{name} must be a non-negative integer or None, got {bound!r}")
        self.max_entries = max_entries
        self.max_cost = max_cost
        self._cost_of = cost
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._costs: dict[K, int] = {}
        self._cost = 0
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
        value = self._entries.get(key)
        if value is not None:
            try:  # noqa: SIM105 (contextlib.suppress: a context manager per lookup costs more than the lookup)
                self._entries.move_to_end(key)
            except KeyError:  # removed by another thread meanwhile
                pass
        return value

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
        self._entries[key] = value
        self._costs[key] = cost
        self._cost += cost
        self._evict()
        return key in self._entries

    def pop(self, key: K) -> V | None:
        """Forget ``key``; return its entry, or ``None``."""
        value = self._entries.pop(key, None)
        cost = self._costs.pop(key, None)
        if cost is not None:
            self._cost = max(0, self._cost - cost)
        return value

    def clear(self) -> None:
        """Forget every entry."""
        self._entries.clear()
        self._costs.clear()
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

    def __repr__(self) -> str:
        return (
            f"BoundedCache({len(self)} entries, cost {self._cost}, "
            f"max_entries={self.max_entries!r}, max_cost={self.max_cost!r})"
        )
