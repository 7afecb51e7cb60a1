"""``BoundedCache``: the one bounded LRU every cache of the project is."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agent_stores.core.cache import BoundedCache


def test_least_recently_used_goes_first() -> None:
    cache: BoundedCache[str, int] = BoundedCache(max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.get("a") == 1  # "b" is now the least recently used
    cache.put("c", 3)
    assert list(cache) == ["a", "c"]


def test_peek_does_not_mark_use() -> None:
    cache: BoundedCache[str, int] = BoundedCache(max_entries=2)
    cache.put("a", 1)
    cache.put("b", 2)
    assert cache.peek("a") == 1
    cache.put("c", 3)
    assert "a" not in cache and list(cache) == ["b", "c"]


def test_cost_budget_and_oversized_entries() -> None:
    cache: BoundedCache[str, bytes] = BoundedCache(max_cost=10, cost=lambda _key, value: len(value))
    assert cache.put("a", b"1234")
    assert cache.put("b", b"123456")
    assert cache.cost == 10
    assert cache.put("c", b"12")
    assert list(cache) == ["b", "c"] and cache.cost == 8
    assert not cache.put("b", b"x" * 11)  # too large alone: not kept, the old entry forgotten too
    assert list(cache) == ["c"] and cache.cost == 2


@pytest.mark.parametrize("bounds", [{"max_entries": 0}, {"max_cost": 0}])
def test_a_zero_bound_keeps_nothing(bounds: dict[str, int]) -> None:
    cache: BoundedCache[str, int] = BoundedCache(**bounds)
    assert not cache.enabled
    assert not cache.put("a", 1)
    assert len(cache) == 0 and cache.get("a") is None


def test_resize_forgets_what_no_longer_fits() -> None:
    cache: BoundedCache[int, int] = BoundedCache(max_entries=10)
    for i in range(10):
        cache.put(i, i)
    cache.resize(max_entries=3)
    assert list(cache) == [7, 8, 9]


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_bad_bounds_are_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="non-negative integer"):
        BoundedCache(max_entries=bad)  # type: ignore[arg-type]


@given(
    st.lists(st.tuples(st.sampled_from(["put", "get", "pop"]), st.integers(0, 9), st.integers(1, 6)), max_size=60),
    st.integers(0, 5),
    st.integers(0, 15),
)
def test_matches_a_model(ops: list[tuple[str, int, int]], max_entries: int, max_cost: int) -> None:
    """Against a plain list model: the same entries, in the same recency order, the same cost."""
    cache: BoundedCache[int, int] = BoundedCache(max_entries=max_entries, max_cost=max_cost, cost=lambda _k, v: v)
    model: list[tuple[int, int]] = []
    for op, key, value in ops:
        found = next((i for i, (k, _) in enumerate(model) if k == key), None)
        if op == "put":
            if found is not None:
                model.pop(found)
            if max_entries and max_cost and value <= max_cost:
                model.append((key, value))
                while len(model) > max_entries or sum(v for _, v in model) > max_cost:
                    model.pop(0)
            cache.put(key, value)
        elif op == "get":
            expected = None if found is None else model[found][1]
            if found is not None:
                model.append(model.pop(found))
            assert cache.get(key) == expected
        else:
            if found is not None:
                model.pop(found)
            cache.pop(key)
        assert list(cache) == [k for k, _ in model]
        assert cache.cost == sum(v for _, v in model)
