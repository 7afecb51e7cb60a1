"""The object log's options from an ``s3://`` URL or a keyword reach the live log (SeaweedFS); bad ones open nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_framework import Message

from agent_stores.core import ObjectLogDriver, open_stores
from agent_stores.core.sealing import KEYRING_ENV, KMS_KEY_ENV, Keyring, SealedStores
from agent_stores.s3 import S3AgentFileStore, S3HistoryProvider
from s3_support import S3Target

pytestmark = pytest.mark.asyncio

TUNED = {"concurrency": "4", "compact_after": "2", "tail_after": "None", "tail_records": "7"}
SETTINGS = {"concurrency": 4, "compact_after": 2, "tail_after": None, "tail_records": 7}


def settings_of(driver: Any) -> dict[str, Any]:
    assert isinstance(driver, ObjectLogDriver)
    return {name: getattr(driver, name) for name in SETTINGS}


async def test_the_url_sets_every_object_log_of_open_stores(seaweedfs: S3Target, s3_prefix: str) -> None:
    async with open_stores(seaweedfs.url(s3_prefix, **TUNED), session=seaweedfs.session()) as stores:
        provider: Any = stores.history_provider()
        assert settings_of(provider.driver) == SETTINGS
        assert settings_of(stores.tenant("t").history_provider().driver) == SETTINGS  # type: ignore[attr-defined]
        assert settings_of(stores.log_driver()) == SETTINGS
        for turn in range(4):
            await provider.save_messages("s", [Message(role="user", contents=[f"turn {turn}"])])
        assert len(await provider.get_messages("s")) == 4  # a full load of 4 segments, more than compact_after
    listing = seaweedfs.client(skimmed=False).list_objects_v2(Bucket=seaweedfs.bucket, Prefix=f"{s3_prefix}/history/")
    leaves = [item["Key"].rpartition("/")[2] for item in listing.get("Contents", [])]
    assert any(leaf.startswith("c") for leaf in leaves), f"compact_after=2 wrote no checkpoint: {leaves}"


async def test_a_keyword_wins_over_the_url_and_a_stores_own_over_both(seaweedfs: S3Target, s3_prefix: str) -> None:
    url = seaweedfs.url(s3_prefix, **TUNED)
    async with open_stores(url, session=seaweedfs.session(), compact_after=9, tail_after="3") as stores:
        assert settings_of(stores.log_driver()) == {**SETTINGS, "compact_after": 9, "tail_after": 3}
        provider: Any = stores.history_provider(concurrency=2)
        assert settings_of(provider.driver) == {**SETTINGS, "compact_after": 9, "tail_after": 3, "concurrency": 2}


async def test_from_url_gives_them_to_the_history_provider_and_ignores_them_elsewhere(
    seaweedfs: S3Target, s3_prefix: str
) -> None:
    url = seaweedfs.url(s3_prefix, **TUNED)
    async with S3HistoryProvider.from_url(url, session=seaweedfs.session(), tail_records=12) as history:
        assert settings_of(history.driver) == {**SETTINGS, "tail_records": 12}
        await history.save_messages("s", [])
    async with S3AgentFileStore.from_url(url, session=seaweedfs.session()) as files:  # one URL opens every store
        await files.write("a.md", "x")
        assert await files.read("a.md") == "x"


@pytest.mark.parametrize(
    ("option", "bad", "kind"),
    [
        ("concurrency", "0", "a whole positive number"),
        ("compact_after", "1e3", "a whole positive number"),
        ("tail_records", "", "a whole positive number"),
        ("tail_after", "-1", "a whole non-negative number or none"),
    ],
)
async def test_a_bad_value_is_refused_naming_the_option_and_nothing_is_opened(
    seaweedfs: S3Target, s3_prefix: str, option: str, bad: str, kind: str
) -> None:
    url = seaweedfs.url(s3_prefix) + f"&{option}={bad}"
    for attempt in (
        lambda: open_stores(url, session=seaweedfs.session()),
        lambda: open_stores(seaweedfs.url(s3_prefix), session=seaweedfs.session(), **{option: bad}),
        lambda: open_stores(seaweedfs.url(s3_prefix), session=seaweedfs.session(), **{option: True}),
        lambda: S3HistoryProvider.from_url(url, session=seaweedfs.session()),
        lambda: S3AgentFileStore.from_url(url, session=seaweedfs.session()),
    ):
        with pytest.raises(ValueError, match=f"option {option} takes {kind}"):
            attempt()
    listing = seaweedfs.client().list_objects_v2(Bucket=seaweedfs.bucket, Prefix=s3_prefix)
    assert listing.get("KeyCount", 0) == 0  # nothing was opened, nothing written


async def test_a_sealed_url_sets_the_raw_log_and_the_sealing(
    seaweedfs: S3Target, s3_prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEYRING_ENV, raising=False)
    monkeypatch.delenv(KMS_KEY_ENV, raising=False)
    keyring = tmp_path / "keyring.json"
    Keyring.create(keyring)
    url = seaweedfs.url(s3_prefix, keyring=str(keyring), compact_after="3", key_refresh="2.5", max_scopes="16")
    async with open_stores(url, session=seaweedfs.session(), plaintext_reads="no") as stores:
        assert isinstance(stores, SealedStores)
        raw: Any = stores.raw_logs
        assert (raw.compact_after, raw.tail_after) == (3, 8)
        encryption = stores.encryption
        assert (encryption.key_refresh, encryption.max_scopes, encryption.plaintext_reads) == (2.5, 16, False)
        provider = stores.history_provider()
        await provider.save_messages("s", [Message(role="user", contents=["sealed"])])
        assert [m.text for m in await provider.get_messages("s")] == ["sealed"]


async def test_a_sealed_stores_history_provider_takes_them_as_keywords(
    seaweedfs: S3Target, s3_prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEYRING_ENV, raising=False)
    monkeypatch.delenv(KMS_KEY_ENV, raising=False)
    keyring = tmp_path / "keyring.json"
    Keyring.create(keyring)
    url = seaweedfs.url(s3_prefix, keyring=str(keyring), compact_after="9", tail_records="7")
    async with open_stores(url, session=seaweedfs.session(), concurrency=4) as stores:
        assert isinstance(stores, SealedStores)
        provider: Any = stores.history_provider(compact_after=2, tail_after="none")
        expected = {"concurrency": 4, "compact_after": 2, "tail_after": None, "tail_records": 7}
        assert settings_of(provider.driver.driver) == expected  # the provider's own over the URL's and open_stores's
        tenants: Any = stores.tenant("t").history_provider(compact_after="2")
        assert settings_of(tenants.driver.driver)["compact_after"] == 2
        assert settings_of(stores.raw_logs)["compact_after"] == 9  # the store's own log is untouched
        for turn in range(4):
            await provider.save_messages("s", [Message(role="user", contents=[f"turn {turn}"])])
        assert [m.text for m in await provider.get_messages("s")] == [f"turn {turn}" for turn in range(4)]
        with pytest.raises(ValueError, match="option compact_after takes a whole positive number"):
            stores.history_provider(compact_after="0")
    listing = seaweedfs.client(skimmed=False).list_objects_v2(Bucket=seaweedfs.bucket, Prefix=f"{s3_prefix}/history/")
    leaves = [item["Key"].rpartition("/")[2] for item in listing.get("Contents", [])]
    assert any(leaf.startswith("c") for leaf in leaves), f"compact_after=2 wrote no checkpoint: {leaves}"
