"""Idle expiry of the caches, and the default decode cache budget: what a process keeps for sessions it serves."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Message

from agent_stores.core import LogHistoryProvider, codec, open_stores
from agent_stores.core.cache import BoundedCache
from agent_stores.core.codec import DecodeCache, cache_budget, memory_limit, validate_cache_idle
from agent_stores.core.memory import MemoryLogDriver
from agent_stores.core.sealing import Keyring, SealedStores
from agent_stores.testing.clock import FakeClock

MiB = 1 << 20
GiB = 1 << 30


def _records(log: str, count: int = 40) -> list[bytes]:
    return [
        codec.encode_message(Message(role="user", contents=[f"{log} message {i}"], message_id=f"{log}-{i}"))
        for i in range(count)
    ]


# BoundedCache


def test_an_entry_unused_for_max_idle_is_forgotten_by_the_next_operation() -> None:
    clock = FakeClock(0.0)
    cache: BoundedCache[str, int] = BoundedCache(max_idle=10, clock=clock)
    cache.put("a", 1)
    cache.put("b", 2)
    clock.advance(6)
    assert cache.get("a") == 1  # used: kept 10 s from now
    clock.advance(6)  # "b" unused for 12 s, "a" for 6 s
    assert "b" in cache  # nothing runs in the background
    cache.put("c", 3)
    assert list(cache) == ["a", "c"]
    clock.advance(10)
    assert cache.get("a") is None and cache.get("c") is None
    assert len(cache) == 0 and cache.cost == 0 and not cache.stamps


def test_expire_gives_the_whole_cost_back_after_idle_time() -> None:
    clock = FakeClock(100.0)
    cache: BoundedCache[int, bytes] = BoundedCache(
        max_cost=1 << 20, cost=lambda _k, v: len(v), max_idle=300, clock=clock
    )
    for i in range(100):
        cache.put(i, b"x" * 1000)
    assert cache.cost == 100_000
    clock.advance(299)
    assert cache.expire() == 399 and cache.cost == 100_000
    clock.advance(1)
    cache.expire()
    assert cache.cost == 0 and len(cache) == 0 and not cache.stamps


def test_peek_does_not_mark_use_but_renew_does() -> None:
    clock = FakeClock(0.0)
    cache: BoundedCache[str, int] = BoundedCache(max_idle=10, clock=clock)
    cache.put("a", 1)
    cache.put("b", 2)
    clock.advance(5)
    assert cache.peek("a") == 1
    cache.renew("b", clock())
    cache.renew("missing", clock())  # nothing to mark
    clock.advance(5)
    cache.expire()
    assert list(cache) == ["b"] and cache.stamps == {"b": 5.0}


def test_without_max_idle_nothing_expires_and_the_clock_is_not_read() -> None:
    def clock() -> float:
        raise AssertionError("the clock is read only with max_idle")

    cache: BoundedCache[str, int] = BoundedCache(max_entries=2, clock=clock)
    cache.put("a", 1)
    assert cache.get("a") == 1 and cache.expire() == 0.0 and list(cache) == ["a"]


def test_each_operation_drops_what_went_idle_oldest_first() -> None:
    clock = FakeClock(0.0)
    cache: BoundedCache[int, int] = BoundedCache(max_idle=100, clock=clock)
    for i in range(1000):
        cache.put(i, i)
        clock.advance(1)
    # stamps follow the order of use, so the idle ones are a prefix: one put drops exactly them
    cache.put(-1, -1)
    assert len(cache) == 100 and next(iter(cache)) == 901


@pytest.mark.parametrize("bad", [0, -1, math.inf, math.nan, True, "5"])
def test_a_bad_max_idle_is_refused(bad: object) -> None:
    with pytest.raises(ValueError, match="max_idle"):
        BoundedCache(max_idle=bad)  # type: ignore[arg-type]


# DecodeCache


def test_a_decode_cache_forgets_the_sessions_no_load_used() -> None:
    clock = FakeClock(0.0)
    cache = DecodeCache(64 * MiB, max_idle=300, clock=clock)
    for log in range(20):
        cache.share(_records(f"s{log}"), "w", log)
    assert cache.entries.cost > 0
    busy = cache.share(_records("s0"), "w", 0)
    for _ in range(10):  # session 0 keeps loading every 100 s; the others went quiet
        clock.advance(100)
        again = cache.share(_records("s0"), "w", 0)
        assert all(a is b for a, b in zip(again, busy, strict=True))  # its messages still shared
    kept = {key[0] for key in cache.entries if type(key) is tuple}
    assert kept == {0}
    clock.advance(300)
    cache.decode([], "w")  # any load frees what went idle
    assert cache.entries.cost == 0 and len(cache.entries) == 0


def test_a_decode_cache_renews_a_hit_only_an_eighth_of_max_idle_after_its_stamp() -> None:
    clock = FakeClock(0.0)
    cache = DecodeCache(64 * MiB, max_idle=80, clock=clock)
    records = _records("s")
    cache.decode(records, "w")
    clock.advance(9)
    cache.decode(records, "w")
    assert set(cache.entries.stamps.values()) == {0.0}  # younger than 10 s: not moved
    clock.advance(2)
    cache.decode(records, "w")
    assert set(cache.entries.stamps.values()) == {11.0}


def test_a_decode_cache_without_max_idle_keeps_entries_until_evicted() -> None:
    clock = FakeClock(0.0)
    cache = DecodeCache(64 * MiB, max_idle=None, clock=clock)
    cache.share(_records("s"), "w", "s")
    clock.advance(1e9)
    cache.decode([], "w")
    assert len(cache.entries) == 40 and cache.max_idle is None


def test_a_decode_cache_keeps_300_s_by_default() -> None:
    assert DecodeCache().max_idle == codec.DEFAULT_CACHE_IDLE == 300.0


# The default budget


@pytest.mark.parametrize(
    ("cgroup_limits", "physical", "limit"),
    [
        ([], 24 * GiB, 24 * GiB),  # no cgroup: the machine's memory
        (["max\n"], 24 * GiB, 24 * GiB),  # cgroup v2 without a limit
        (["max\n", "536870912\n"], 24 * GiB, 512 * MiB),  # a 512 MiB container (an ancestor's limit counts)
        (["9223372036854771712\n"], 24 * GiB, 24 * GiB),  # cgroup v1 without a limit
        (["2147483648"], 24 * GiB, 2 * GiB),  # cgroup v1 with one
        ([None, "", "garbage", "-5", "0", "١٢"], 8 * GiB, 8 * GiB),  # unreadable or not a limit
        (["1073741824"], None, GiB),  # no physical memory known
        ([None], None, None),  # nothing known
        ([], 0, None),
    ],
)
def test_memory_limit_is_the_smallest_limit_stated(
    cgroup_limits: list[str | None], physical: int | None, limit: int | None
) -> None:
    assert memory_limit(cgroup_limits, physical) == limit


@pytest.mark.parametrize(
    ("limit", "budget"),
    [
        (None, 16 * MiB),  # unknown: the former default
        (256 * MiB, 16 * MiB),
        (512 * MiB, 16 * MiB),  # a small container keeps what it kept before
        (2 * GiB, 64 * MiB),
        (4 * GiB, 128 * MiB),
        (8 * GiB, 256 * MiB),  # enough for 1,000 agents' 40-message windows
        (24 * GiB, 256 * MiB),
        (1 << 50, 256 * MiB),
    ],
)
def test_the_default_budget_is_a_32nd_of_the_limit_within_16_and_256_mib(limit: int | None, budget: int) -> None:
    assert cache_budget(limit) == budget


def test_the_default_budget_is_read_from_this_process() -> None:
    assert 16 * MiB <= codec.DEFAULT_CACHE_BYTES <= 256 * MiB
    assert DecodeCache().max_bytes == codec.DEFAULT_CACHE_BYTES == codec.validate_cache_bytes(None)


# The options


@pytest.mark.parametrize("value", ["0", "-1", "1e3", "60s", "", "inf", "nan", 0, -1.0, math.inf, True])
def test_a_bad_cache_idle_is_a_clear_error(value: object) -> None:
    with pytest.raises(ValueError, match="cache_idle"):
        validate_cache_idle(value)  # type: ignore[arg-type]


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_a_bad_cache_idle_in_a_url_or_keyword_is_refused_before_anything_opens(value: str) -> None:
    with pytest.raises(ValueError, match="cache_idle"):
        open_stores(f"memory://?cache_idle={value}")
    with pytest.raises(ValueError, match="cache_idle"):
        open_stores("memory://", cache_idle=value)
    with pytest.raises(ValueError, match="cache_idle"):
        LogHistoryProvider(MemoryLogDriver(), cache_idle=value)  # type: ignore[arg-type]


def test_cache_idle_and_a_shared_cache_are_not_both_given() -> None:
    with pytest.raises(ValueError, match="cache_idle"):
        LogHistoryProvider(MemoryLogDriver(), cache_idle=60, decode_cache=DecodeCache())


@pytest.mark.asyncio
async def test_cache_idle_from_a_url_and_from_code_and_an_explicit_cache_bytes_wins() -> None:
    async with open_stores("memory://?cache_idle=60&cache_bytes=4096") as stores:
        history: Any = stores.history_provider()
        assert history.decode_cache.max_idle == 60 and history.decode_cache.max_bytes == 4096
        own: Any = stores.history_provider(cache_idle=5)  # a provider asking for its own gets its own
        assert own.decode_cache is not history.decode_cache
        assert own.decode_cache.max_idle == 5 and own.decode_cache.max_bytes == codec.DEFAULT_CACHE_BYTES
    async with open_stores("memory://", cache_idle=0.5, cache_bytes=0) as stores:
        history = stores.history_provider()
        assert history.decode_cache.max_idle == 0.5 and history.decode_cache.max_bytes == 0
    provider = LogHistoryProvider(MemoryLogDriver(), cache_bytes=12345, cache_idle="7.5")  # type: ignore[arg-type]
    assert provider.decode_cache.max_bytes == 12345 and provider.decode_cache.max_idle == 7.5
    assert LogHistoryProvider(MemoryLogDriver(), cache_bytes=0).decode_cache.max_bytes == 0


@pytest.mark.asyncio
async def test_a_sealed_store_gives_a_provider_asking_for_cache_idle_its_own_cache(tmp_path: Path) -> None:
    keyring = tmp_path / "keyring.json"
    Keyring.create(keyring)
    async with open_stores(f"sqlite:///{tmp_path / 'agent.db'}?keyring={keyring}&cache_idle=30") as stores:
        assert isinstance(stores, SealedStores)
        shared: Any = stores.history_provider()
        own: Any = stores.history_provider(cache_idle=5)
        assert shared.decode_cache.max_idle == 30
        assert own.decode_cache is not shared.decode_cache and own.decode_cache.max_idle == 5
        await own.save_messages("s", [Message(role="user", contents=["sealed"])])
        assert [m.text for m in await shared.get_messages("s")] == ["sealed"]
