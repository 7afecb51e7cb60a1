"""Listing logs on an object store: one listing per page and one ``get`` per log, never a listing per log.

The ``get`` stays: whether a log is live, expired or deleted, and its session id, are only in
its newest segment. A log that changed between the page's listing and that ``get`` (deleted,
blanked) is read as :meth:`ObjectLogDriver.list_logs` always read it, so it is never listed.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from agent_stores.core import LogRecord, ObjectLogDriver
from objectlog_support import Counting

pytestmark = pytest.mark.asyncio


async def _fill(driver: ObjectLogDriver, count: int, *, segments: int = 1, ttl: float | None = None) -> list[str]:
    keys = [f"ns/src/s{n:03d}" for n in range(count)]
    for key in keys:
        version = None
        for at in range(segments):
            record = LogRecord(f"d{at}", f"m{at}".encode())
            version = await driver.append(key, [record], expected_version=version, session_id=key[-4:], ttl=ttl)
    return keys


@pytest.mark.parametrize("segments", [1, 3])
async def test_listing_n_logs_costs_a_get_each_and_no_listing_per_log(segments: int) -> None:
    objects = Counting()
    driver = ObjectLogDriver(objects, cache_bytes=0)
    keys = await _fill(driver, 30, segments=segments)
    objects.calls.clear()
    listed = await driver.list_logs("ns/", limit=1000)
    assert [log.key for log in listed] == keys
    assert [log.session_id for log in listed] == [k[-4:] for k in keys]
    calls = Counter(objects.calls)
    pages = -(-30 * segments // 200)  # objects per page of the listing, rounded up
    assert calls == {"get": 30, "list": pages + 1}, calls  # the last page is the empty one


async def test_expired_and_deleted_logs_are_not_listed() -> None:
    now = [1000.0]
    objects = Counting()
    driver = ObjectLogDriver(objects, clock=lambda: now[0])
    await _fill(driver, 3, ttl=60)
    await driver.append("ns/src/z-forever", [LogRecord("d", b"m")], expected_version=None, session_id="z")
    await driver.delete("ns/src/s001")
    assert [log.key for log in await driver.list_logs("ns/")] == ["ns/src/s000", "ns/src/s002", "ns/src/z-forever"]
    now[0] += 61
    assert [log.key for log in await driver.list_logs("ns/")] == ["ns/src/z-forever"]


class DeletingBehind(Counting):
    """Deletes a log through another driver right after a page listing named it, before its ``get``."""

    def __init__(self) -> None:
        super().__init__()
        self.victim: str | None = None
        self.other: ObjectLogDriver | None = None

    async def get(self, key: str) -> Any:
        victim, self.victim = self.victim, None
        if victim is not None and key.startswith(f"history/{victim}/") and self.other is not None:
            await self.other.delete(victim)  # claims a reset segment, blanks the one listed
        return await super().get(key)


async def test_a_log_deleted_between_the_listing_and_its_get_is_not_listed() -> None:
    objects = DeletingBehind()
    driver = ObjectLogDriver(objects, cache_bytes=0)
    objects.other = ObjectLogDriver(objects, cache_bytes=0)
    await _fill(driver, 2, segments=2)
    objects.victim = "ns/src/s000"
    assert [log.key for log in await driver.list_logs("ns/")] == ["ns/src/s001"]
    assert objects.victim is None  # the race was forced


async def test_a_page_cut_before_a_logs_segments_still_lists_it() -> None:
    """A page that ends among a log's checkpoint and erasure records: its head is read with its own listing."""
    objects = Counting()
    driver = ObjectLogDriver(objects, cache_bytes=0)
    (key,) = await _fill(driver, 1)
    await objects.put(f"history/{key}/c{10**20 - 2:020d}", b"")  # names that sort before the segments'
    for seq in range(1, 251):
        await objects.put(f"history/{key}/f{10**20 - 1 - seq:020d}", b"")
    objects.calls.clear()
    listed = await driver.list_logs("ns/")
    assert [(log.key, log.session_id) for log in listed] == [(key, "s000")]
    assert Counter(objects.calls) == {"list": 3, "get": 1}  # the page, the log's newest segment, the last page


async def test_a_short_page_reads_only_the_logs_it_returns() -> None:
    """``limit=10`` over a page listing 30 logs: ten ``get``; the next page starts after the tenth log."""
    objects = Counting()
    driver = ObjectLogDriver(objects, cache_bytes=0)
    keys = await _fill(driver, 30)
    await driver.delete(keys[3])  # looked at, not live: one more log read to fill the page
    objects.calls.clear()
    first = await driver.list_logs("ns/", limit=10)
    assert [log.key for log in first] == keys[:3] + keys[4:11]
    assert Counter(objects.calls) == {"list": 1, "get": 11}
    rest = await driver.list_logs("ns/", after=first[-1].key, limit=100)
    assert [log.key for log in rest] == keys[11:]
