"""``fair_claims`` from an ``s3://`` URL or a keyword reaches the object log (SeaweedFS); a bad value opens nothing."""

from __future__ import annotations

from typing import Any

import pytest

from agent_stores.core import LogDriver, LogRecord, StoreConflictError, open_stores
from agent_stores.s3 import S3AgentFileStore, S3HistoryProvider
from s3_support import S3Target

pytestmark = pytest.mark.asyncio


async def _lost_claim_finds_the_end(first: LogDriver, second: LogDriver) -> bool:
    """Whether ``second``, beaten to a segment by ``first``, learnt where the log ends (fair claims do)."""
    start = await first.append("k", [LogRecord("d-a", b"a")], expected_version=None, session_id="s")
    assert (await second.tail("k", 16)).version == start
    await first.append("k", [LogRecord("d-b", b"b")], expected_version=start, session_id="s")
    with pytest.raises(StoreConflictError) as lost:
        await second.append("k", [LogRecord("d-c", b"c")], expected_version=start, session_id="s")
    return lost.value.log_end is not None


@pytest.mark.parametrize(
    ("query", "fair"), [({"fair_claims": "false"}, False), ({"fair_claims": "On"}, True), ({}, True)]
)
async def test_fair_claims_in_the_url_reaches_every_object_log_of_open_stores(
    seaweedfs: S3Target, s3_prefix: str, query: dict[str, str], fair: bool
) -> None:
    async with open_stores(seaweedfs.url(s3_prefix, **query), session=seaweedfs.session()) as stores:
        provider: Any = stores.history_provider()
        assert provider.driver.fair_claims is fair
        assert provider.driver.within("x/").fair_claims is fair  # a tenant's view keeps it
        logs: Any = stores.log_driver()
        assert logs.fair_claims is fair
        assert await _lost_claim_finds_the_end(stores.log_driver(), logs) is fair
        await provider.save_messages("s", [])  # the stores work as usual


async def test_fair_claims_as_a_keyword_wins_over_the_url(seaweedfs: S3Target, s3_prefix: str) -> None:
    url = seaweedfs.url(s3_prefix, fair_claims="true")
    async with open_stores(url, session=seaweedfs.session(), fair_claims=False) as stores:
        assert stores.log_driver().fair_claims is False  # type: ignore[attr-defined]
        provider: Any = stores.history_provider(fair_claims=True)  # and a store's own keyword over both
        assert provider.driver.fair_claims is True


async def test_from_url_gives_fair_claims_to_the_history_provider_and_ignores_it_elsewhere(
    seaweedfs: S3Target, s3_prefix: str
) -> None:
    url = seaweedfs.url(s3_prefix, fair_claims="0")
    async with S3HistoryProvider.from_url(url, session=seaweedfs.session()) as history:
        assert history.driver.fair_claims is False  # type: ignore[attr-defined]
        await history.save_messages("s", [])
        unfair = S3HistoryProvider.from_url(seaweedfs.url(s3_prefix), session=seaweedfs.session(), fair_claims="no")
        async with unfair:
            assert await _lost_claim_finds_the_end(history.driver, unfair.driver) is False  # type: ignore[attr-defined]
    async with S3AgentFileStore.from_url(url, session=seaweedfs.session()) as files:  # one URL opens every store
        await files.write("a.md", "x")
        assert await files.read("a.md") == "x"


@pytest.mark.parametrize("bad", ["maybe", "", "2", "%20true"])
async def test_a_bad_fair_claims_value_is_refused_naming_the_option(
    seaweedfs: S3Target, s3_prefix: str, bad: str
) -> None:
    url = seaweedfs.url(s3_prefix) + f"&fair_claims={bad}"
    for attempt in (
        lambda: open_stores(url, session=seaweedfs.session()),
        lambda: S3HistoryProvider.from_url(url, session=seaweedfs.session()),
        lambda: S3AgentFileStore.from_url(url, session=seaweedfs.session()),
        lambda: open_stores(seaweedfs.url(s3_prefix), session=seaweedfs.session(), fair_claims=bad),
    ):
        with pytest.raises(ValueError, match="option fair_claims takes 1, true, yes, on or 0, false, no, off"):
            attempt()
    listing = seaweedfs.client().list_objects_v2(Bucket=seaweedfs.bucket, Prefix=s3_prefix)
    assert listing.get("KeyCount", 0) == 0  # nothing was opened, nothing written
