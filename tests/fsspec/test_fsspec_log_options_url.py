"""The object log's options from a ``file://`` or ``fsspec+…://`` URL or a keyword reach the live log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_framework import Message

from agent_stores.core import ObjectLogDriver, open_stores
from agent_stores.core.sealing import KEYRING_ENV, KMS_KEY_ENV, Keyring, SealedStores
from agent_stores.fsspec import FsspecAgentFileStore, FsspecHistoryProvider

pytestmark = pytest.mark.asyncio

TUNED = "concurrency=4&compact_after=2&tail_after=none&tail_records=7"
SETTINGS = {"concurrency": 4, "compact_after": 2, "tail_after": None, "tail_records": 7}
DEFAULTS = {"concurrency": 32, "compact_after": 64, "tail_after": 8, "tail_records": 1000}

#: A value each option refuses, and the kind its error names.
BAD = [
    ("concurrency", "0", "a whole positive number"),
    ("concurrency", "-1", "a whole positive number"),
    ("compact_after", "1.5", "a whole positive number"),
    ("compact_after", "", "a whole positive number"),
    ("tail_records", "true", "a whole positive number"),
    ("tail_records", "%208", "a whole positive number"),
    ("tail_after", "-1", "a whole non-negative number or none"),
    ("tail_after", "null", "a whole non-negative number or none"),
]


def settings_of(driver: Any) -> dict[str, Any]:
    assert isinstance(driver, ObjectLogDriver)
    return {name: getattr(driver, name) for name in SETTINGS}


async def test_the_url_sets_every_object_log_of_open_stores(tmp_path: Path) -> None:
    async with open_stores(f"file://{tmp_path}?{TUNED}") as stores:
        provider: Any = stores.history_provider()
        assert settings_of(provider.driver) == SETTINGS
        assert settings_of(stores.tenant("t").history_provider().driver) == SETTINGS  # type: ignore[attr-defined]
        assert settings_of(stores.log_driver()) == SETTINGS
        for turn in range(4):
            await provider.save_messages("s", [Message(role="user", contents=[f"turn {turn}"])])
        assert len(await provider.get_messages("s")) == 4  # a full load of 4 segments, more than compact_after
    checkpoints = [p.name for p in (tmp_path / "history").rglob("c*") if p.is_file()]
    assert checkpoints, "compact_after=2 from the URL did not make the full load write a checkpoint"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history"]  # noqa: ASYNC240  # not storage options


async def test_without_the_options_the_log_keeps_its_defaults(tmp_path: Path) -> None:
    async with open_stores(f"file://{tmp_path}") as stores:
        assert settings_of(stores.log_driver()) == DEFAULTS
        assert settings_of(stores.history_provider().driver) == DEFAULTS  # type: ignore[attr-defined]


async def test_a_keyword_wins_over_the_url_and_a_stores_own_over_both(tmp_path: Path) -> None:
    url = f"file://{tmp_path}?{TUNED}"
    async with open_stores(url, compact_after="9", tail_after=3) as stores:
        assert settings_of(stores.log_driver()) == {**SETTINGS, "compact_after": 9, "tail_after": 3}
        provider: Any = stores.history_provider(tail_records=11)
        assert settings_of(provider.driver) == {**SETTINGS, "compact_after": 9, "tail_after": 3, "tail_records": 11}


async def test_from_url_gives_them_to_the_history_provider_and_ignores_them_elsewhere(tmp_path: Path) -> None:
    url = f"file://{tmp_path}?{TUNED}"
    async with FsspecHistoryProvider.from_url(url, concurrency=6) as history:
        assert settings_of(history.driver) == {**SETTINGS, "concurrency": 6}
    async with FsspecAgentFileStore.from_url(url) as files:  # one URL opens every store
        await files.write("a.md", "x")
        assert await files.read("a.md") == "x"


async def test_a_remote_filesystems_url_takes_them_too() -> None:
    async with open_stores("fsspec+memory://log-options?compact_after=3&tail_after=0") as stores:
        driver: Any = stores.log_driver()
        assert (driver.compact_after, driver.tail_after) == (3, 0)


@pytest.mark.parametrize(("option", "bad", "kind"), BAD)
async def test_a_bad_value_is_refused_naming_the_option_and_nothing_is_opened(
    tmp_path: Path, option: str, bad: str, kind: str
) -> None:
    root = tmp_path / "store"
    url = f"file://{root}?{option}={bad}"
    for attempt in (
        lambda: open_stores(url),
        lambda: open_stores(f"file://{root}", **{option: bad}),
        lambda: FsspecHistoryProvider.from_url(url),
        lambda: FsspecAgentFileStore.from_url(url),
    ):
        with pytest.raises(ValueError, match=f"option {option} takes {kind}"):
            attempt()
    assert not root.exists()  # nothing opened, nothing created


@pytest.mark.parametrize("option", ["concurrency", "compact_after", "tail_after", "tail_records"])
async def test_a_bool_is_no_number(tmp_path: Path, option: str) -> None:
    root = tmp_path / "store"
    with pytest.raises(ValueError, match=f"option {option} takes"):
        open_stores(f"file://{root}", **{option: True})
    with pytest.raises(ValueError, match=f"option {option} takes"):
        FsspecHistoryProvider.from_url(f"file://{root}", **{option: True})
    assert not root.exists()


async def test_a_sealed_folders_history_provider_takes_them_as_keywords(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEYRING_ENV, raising=False)
    monkeypatch.delenv(KMS_KEY_ENV, raising=False)
    keyring = tmp_path / "keyring.json"
    Keyring.create(keyring)
    root = tmp_path / "store"
    async with open_stores(f"file://{root}?keyring={keyring}&{TUNED}", compact_after=9) as stores:
        assert isinstance(stores, SealedStores)
        provider: Any = stores.history_provider(compact_after="2", concurrency=3)
        assert settings_of(provider.driver.driver) == {**SETTINGS, "concurrency": 3}
        tenants: Any = stores.tenant("t").history_provider(tail_records=5)
        assert settings_of(tenants.driver.driver) == {**SETTINGS, "compact_after": 9, "tail_records": 5}
        for turn in range(4):
            await provider.save_messages("s", [Message(role="user", contents=[f"turn {turn}"])])
        assert [m.text for m in await provider.get_messages("s")] == [f"turn {turn}" for turn in range(4)]
        for option, bad, kind in BAD:
            with pytest.raises(ValueError, match=f"option {option} takes {kind}"):
                stores.history_provider(**{option: bad})
    checkpoints = [p.name for p in (root / "history").rglob("c*") if p.is_file()]
    assert checkpoints, "compact_after=2 given to the sealed provider did not make the full load write a checkpoint"
