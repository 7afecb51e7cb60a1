"""``fair_claims`` from a ``file://`` URL or a keyword reaches a folder's object log; a bad value opens nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_stores.core import LogDriver, LogRecord, StoreConflictError, open_stores
from agent_stores.fsspec import FsspecAgentFileStore, FsspecHistoryProvider

pytestmark = pytest.mark.asyncio


async def _lost_claim_finds_the_end(first: LogDriver, second: LogDriver) -> bool:
    """Whether ``second``, beaten to a segment by ``first``, learnt where the log ends (fair claims do)."""
    start = await first.append("k", [LogRecord("d-a", b"a")], expected_version=None, session_id="s")
    assert (await second.tail("k", 16)).version == start
    await first.append("k", [LogRecord("d-b", b"b")], expected_version=start, session_id="s")
    with pytest.raises(StoreConflictError) as lost:
        await second.append("k", [LogRecord("d-c", b"c")], expected_version=start, session_id="s")
    return lost.value.log_end is not None


@pytest.mark.parametrize(("query", "fair"), [("?fair_claims=false", False), ("?fair_claims=YES", True), ("", True)])
async def test_fair_claims_in_the_url_reaches_every_object_log_of_open_stores(
    tmp_path: Path, query: str, fair: bool
) -> None:
    async with open_stores(f"file://{tmp_path}{query}") as stores:
        provider: Any = stores.history_provider()
        assert provider.driver.fair_claims is fair
        assert stores.tenant("t").history_provider().driver.fair_claims is fair  # type: ignore[attr-defined]
        logs: Any = stores.log_driver()
        assert logs.fair_claims is fair
        assert await _lost_claim_finds_the_end(stores.log_driver(), logs) is fair
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history"]  # noqa: ASYNC240  # not a storage option


async def test_fair_claims_as_a_keyword_wins_over_the_url(tmp_path: Path) -> None:
    async with open_stores(f"file://{tmp_path}?fair_claims=1", fair_claims="off") as stores:
        assert stores.log_driver().fair_claims is False  # type: ignore[attr-defined]
        provider: Any = stores.history_provider(fair_claims=True)  # and a store's own keyword over both
        assert provider.driver.fair_claims is True


async def test_from_url_gives_fair_claims_to_the_history_provider_and_ignores_it_elsewhere(tmp_path: Path) -> None:
    url = f"file://{tmp_path}?fair_claims=0"
    async with (
        FsspecHistoryProvider.from_url(url) as history,
        FsspecHistoryProvider.from_url(f"file://{tmp_path}") as fair,
    ):
        assert history.driver.fair_claims is False  # type: ignore[attr-defined]
        assert await _lost_claim_finds_the_end(fair.driver, history.driver) is False  # type: ignore[attr-defined]
    async with FsspecAgentFileStore.from_url(url) as files:  # one URL opens every store
        await files.write("a.md", "x")
        assert await files.read("a.md") == "x"


@pytest.mark.parametrize("bad", ["maybe", "", "2", "%20true"])
async def test_a_bad_fair_claims_value_is_refused_naming_the_option(tmp_path: Path, bad: str) -> None:
    root = tmp_path / "store"
    url = f"file://{root}?fair_claims={bad}"
    for attempt in (
        lambda: open_stores(url),
        lambda: FsspecHistoryProvider.from_url(url),
        lambda: FsspecAgentFileStore.from_url(url),
        lambda: open_stores(f"file://{root}", fair_claims=bad),
    ):
        with pytest.raises(ValueError, match="option fair_claims takes 1, true, yes, on or 0, false, no, off"):
            attempt()
    assert not root.exists()  # nothing opened, nothing created
