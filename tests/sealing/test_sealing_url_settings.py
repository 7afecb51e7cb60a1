"""``plaintext_reads``, ``max_scopes`` and ``key_refresh`` from a sealed URL or a keyword reach the sealed stores."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from agent_stores.core import CorruptRecordError, open_stores
from agent_stores.core.sealing import KEYRING_ENV, KMS_KEY_ENV, Encryption, Keyring, SealedStores

SETTINGS = "plaintext_reads=false&max_scopes=3&key_refresh=0.5"

#: A value each setting refuses, and the kind its error names.
BAD: list[tuple[str, object, str]] = [
    ("plaintext_reads", "maybe", "1, true, yes, on or 0, false, no, off"),
    ("plaintext_reads", "", "1, true, yes, on or 0, false, no, off"),
    ("plaintext_reads", 2, "1, true, yes, on or 0, false, no, off"),
    ("max_scopes", "0", "a whole positive number"),
    ("max_scopes", "1.5", "a whole positive number"),
    ("max_scopes", True, "a whole positive number"),
    ("key_refresh", "-1", "a finite, non-negative number of seconds"),
    ("key_refresh", "inf", "a finite, non-negative number of seconds"),
    ("key_refresh", "nan", "a finite, non-negative number of seconds"),
    ("key_refresh", "60s", "a finite, non-negative number of seconds"),
    ("key_refresh", float("nan"), "a finite, non-negative number of seconds"),
    ("key_refresh", True, "a finite, non-negative number of seconds"),
]


@pytest.fixture
def keyring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(KEYRING_ENV, raising=False)
    monkeypatch.delenv(KMS_KEY_ENV, raising=False)
    path = tmp_path / "keyring.json"
    Keyring.create(path)
    return path


def settings_of(stores: Any) -> tuple[bool, int | None, float]:
    """What the live sealed stores run with: the drivers' plaintext reads, the key cache's bound, its refresh."""
    assert isinstance(stores, SealedStores)
    drivers = (stores.object_driver(), stores.log_driver())
    reads = {driver.plaintext_reads for driver in drivers}  # type: ignore[attr-defined]
    assert len(reads) == 1
    keys: Any = stores.data_keys
    return reads.pop(), keys._scopes.max_entries, keys.refresh


def test_the_url_sets_the_sealed_stores(tmp_path: Path, keyring: Path) -> None:
    stores = open_stores(f"file://{tmp_path / 'store'}?keyring={keyring}&{SETTINGS}")
    assert settings_of(stores) == (False, 3, 0.5)
    assert isinstance(stores, SealedStores)
    assert (stores.encryption.plaintext_reads, stores.encryption.max_scopes, stores.encryption.key_refresh) == (
        False,
        3,
        0.5,
    )
    asyncio.run(stores.aclose())
    defaults = open_stores(f"file://{tmp_path / 'other'}?keyring={keyring}")
    assert settings_of(defaults) == (True, 1024, 60.0)
    asyncio.run(defaults.aclose())


def test_plaintext_reads_false_from_the_url_treats_plaintext_as_corrupt(tmp_path: Path, keyring: Path) -> None:
    url = f"file://{tmp_path / 'store'}"

    async def run() -> None:
        async with open_stores(url, encryption=False) as plain:
            await plain.file_store().write("notes.md", "written before sealing")
        async with open_stores(f"{url}?keyring={keyring}&adopt_plaintext=true") as lenient:
            assert await lenient.file_store().read("notes.md") == "written before sealing"
        async with open_stores(f"{url}?keyring={keyring}&plaintext_reads=off") as strict:
            with pytest.raises(CorruptRecordError):
                await strict.file_store().read("notes.md")

    asyncio.run(run())


def test_a_keyword_wins_over_the_url_and_applies_to_an_encryption_given(tmp_path: Path, keyring: Path) -> None:
    url = f"file://{tmp_path / 'store'}?keyring={keyring}&{SETTINGS}"
    stores = open_stores(url, max_scopes="7", plaintext_reads=True)
    assert settings_of(stores) == (True, 7, 0.5)
    asyncio.run(stores.aclose())
    given = Encryption(Keyring.load(keyring), key_refresh=5, max_scopes=2)
    stores = open_stores(f"file://{tmp_path / 'store'}?key_refresh=30", encryption=given)
    assert settings_of(stores) == (True, 2, 30.0)
    asyncio.run(stores.aclose())
    stores = open_stores(f"file://{tmp_path / 'store'}?keyring={keyring}&key_refresh=0")  # 0: before every use
    assert settings_of(stores) == (True, 1024, 0.0)
    asyncio.run(stores.aclose())


@pytest.mark.parametrize(("option", "bad", "kind"), BAD)
def test_a_bad_setting_is_refused_naming_the_option_and_nothing_is_opened(
    tmp_path: Path, keyring: Path, option: str, bad: object, kind: str
) -> None:
    root = tmp_path / "store"
    attempts = [
        lambda: open_stores(f"file://{root}?keyring={keyring}", **{option: bad}),
        lambda: Encryption(Keyring.load(keyring), **{option: bad}),  # the one rule, in code too
    ]
    if isinstance(bad, str):
        attempts.append(lambda: open_stores(f"file://{root}?keyring={keyring}&{option}={bad}"))
    for attempt in attempts:
        with pytest.raises(ValueError, match=f"option {option} takes {kind}"):
            attempt()
    assert not root.exists()


@pytest.mark.parametrize("setting", ["plaintext_reads=false", "max_scopes=3", "key_refresh=30"])
def test_a_setting_needs_a_key(tmp_path: Path, keyring: Path, setting: str) -> None:
    root = tmp_path / "store"
    name, _, value = setting.partition("=")
    for attempt in (
        lambda: open_stores(f"file://{root}?{setting}"),
        lambda: open_stores(f"file://{root}", **{name: value}),
        lambda: open_stores(f"file://{root}", encryption=False, **{name: value}),
    ):
        with pytest.raises(ValueError, match=f"{name} is an option of a sealed store"):
            attempt()
    assert not root.exists()


@pytest.mark.parametrize("option", ["fair_claims", "concurrency", "compact_after", "tail_after", "tail_records"])
def test_a_sealed_store_whose_logs_are_not_object_logs_refuses_the_object_log_options(
    tmp_path: Path, keyring: Path, option: str
) -> None:
    """As the unsealed store of that backend does: a ValueError naming the option, not a stray TypeError."""
    for url in (f"sqlite:///{tmp_path / 'sealed.db'}?keyring={keyring}", f"sqlite:///{tmp_path / 'plain.db'}"):
        stores = open_stores(url)
        with pytest.raises(ValueError, match=rf"unknown history provider options \['{option}'\]"):
            stores.history_provider(**{option: "1"})
        asyncio.run(stores.aclose())
