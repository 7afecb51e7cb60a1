"""What ``open_stores`` seals with when no code names it: keyring and KMS key options, the environment, conflicts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent_framework import Message

from agent_stores.core import LogRecord, StoredObject, Stores, open_stores
from agent_stores.core.sealing import (
    KEYRING_ENV,
    KMS_KEY_ENV,
    SEALED_MARKER,
    Encryption,
    Keyring,
    SealedLogDriver,
    SealedStores,
    resolve_encryption,
)
from agent_stores.core.sealing._drivers import OPENED_BYTES


def test_a_keyring_and_a_kms_key_together_are_refused(tmp_path: Path) -> None:
    keyring = tmp_path / "keyring.json"
    Keyring.create(keyring)
    with pytest.raises(ValueError, match="not both"):
        resolve_encryption(None, str(keyring), kms_key_id="alias/agents", environ={})
    with pytest.raises(ValueError, match="both set"):
        resolve_encryption(None, None, environ={KEYRING_ENV: str(keyring), KMS_KEY_ENV: "alias/agents"})


def test_adopt_plaintext_needs_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEYRING_ENV, raising=False)
    monkeypatch.delenv(KMS_KEY_ENV, raising=False)
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    for attempt in (
        lambda: open_stores(f"{url}?adopt_plaintext=true"),
        lambda: open_stores(url, adopt_plaintext=True, encryption=False),
    ):
        with pytest.raises(ValueError, match="adopt_plaintext"):
            attempt()
    for bad in ("maybe", ""):
        with pytest.raises(ValueError, match="option adopt_plaintext takes 1, true, yes, on or 0, false, no, off"):
            open_stores(f"{url}?adopt_plaintext={bad}")
    with pytest.raises(ValueError, match="option adopt_plaintext takes"):
        open_stores(url, adopt_plaintext="maybe")
    unsealed = open_stores(url, adopt_plaintext="false")  # read as false, not as a non-empty (true) text
    assert type(unsealed) is Stores
    asyncio.run(unsealed.aclose())
    keyring = tmp_path / "keyring.json"
    Keyring.create(keyring)
    sealed, plain = open_stores(f"{url}?keyring={keyring}&adopt_plaintext=1"), open_stores(f"{url}?adopt_plaintext=0")
    assert isinstance(sealed, SealedStores) and sealed.encryption.adopt_plaintext
    assert type(plain) is Stores
    for stores in (sealed, plain):
        asyncio.run(stores.aclose())


def test_an_open_reads_the_marker_once_for_all_its_stores() -> None:
    """The check costs one read per open, before the first operation; none after it passed."""

    async def run() -> int:
        async with open_stores("memory://") as stores:
            objects = stores.object_driver()
            reads: list[str] = []
            get = objects.get

            async def counted(key: str) -> StoredObject | None:
                reads.append(key)
                return await get(key)

            objects.get = counted  # type: ignore[method-assign]
            files, history = stores.file_store(), stores.tenant("t").history_provider()
            await files.write("a.md", "x")
            await files.read("a.md")
            await history.save_messages("s", [Message("user", ["hi"])])
            await history.get_messages("s")
            await stores.session_store().get("s")
            return reads.count(SEALED_MARKER)

    assert asyncio.run(run()) == 1


def _opened_bytes(stores: Stores) -> int | None:
    driver = stores.log_driver()
    assert isinstance(driver, SealedLogDriver)
    return driver.opened_bytes


def test_opened_bytes_from_the_url_or_a_keyword_sizes_what_the_sealed_history_remembers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEYRING_ENV, raising=False)
    monkeypatch.delenv(KMS_KEY_ENV, raising=False)
    keyring = tmp_path / "keyring.json"
    Keyring.create(keyring)
    url = f"sqlite:///{tmp_path / 'agent.db'}?keyring={keyring}"
    provider = Keyring.load(keyring)

    async def remembered(stores: Stores, key: str) -> int:
        async with stores:
            logs = stores.log_driver()
            await logs.append(key, [LogRecord("d", b"x")], expected_version=None, session_id="s")
            assert await logs.read(key) == [b"x"] and await logs.read(key) == [b"x"]
            return len(logs._opened)  # type: ignore[attr-defined]  # pyright: ignore[reportAttributeAccessIssue]

    cases = [
        (open_stores(f"{url}&opened_bytes=0"), 0),
        (open_stores(f"{url}&opened_bytes=0", opened_bytes=4096), 4096),  # a keyword wins over the query
        (open_stores(url), OPENED_BYTES),
        (open_stores(f"sqlite:///{tmp_path / 'b.db'}?opened_bytes=1024", encryption=provider), 1024),
        (open_stores(f"sqlite:///{tmp_path / 'c.db'}", encryption=Encryption(provider, opened_bytes=0)), 0),
    ]
    for number, (stores, size) in enumerate(cases):
        assert isinstance(stores, SealedStores) and _opened_bytes(stores) == size
        assert asyncio.run(remembered(stores, f"log-{number}")) == (0 if size == 0 else 1)


@pytest.mark.parametrize("bad", ["-1", "1.5", "8MiB", "", "%208", "0x10"])
def test_a_bad_opened_bytes_is_refused_naming_the_option_and_opens_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, bad: str
) -> None:
    monkeypatch.delenv(KEYRING_ENV, raising=False)
    monkeypatch.delenv(KMS_KEY_ENV, raising=False)
    keyring = tmp_path / "keyring.json"
    Keyring.create(keyring)
    database = tmp_path / "agent.db"
    with pytest.raises(ValueError, match="option opened_bytes takes a whole non-negative number of bytes"):
        open_stores(f"sqlite:///{database}?keyring={keyring}&opened_bytes={bad}")
    for value in (-1, 1.5, True, "8MiB"):
        with pytest.raises(ValueError, match="opened_bytes"):
            open_stores(f"sqlite:///{database}?keyring={keyring}", opened_bytes=value)
        with pytest.raises(ValueError, match="opened_bytes"):
            Encryption(Keyring.load(keyring), opened_bytes=value)  # type: ignore[arg-type]
    assert not database.exists()


def test_opened_bytes_needs_a_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(KEYRING_ENV, raising=False)
    monkeypatch.delenv(KMS_KEY_ENV, raising=False)
    database = tmp_path / "agent.db"
    for attempt in (
        lambda: open_stores(f"sqlite:///{database}?opened_bytes=0"),
        lambda: open_stores(f"sqlite:///{database}", opened_bytes=1024),
        lambda: open_stores(f"sqlite:///{database}", opened_bytes=0, encryption=False),
    ):
        with pytest.raises(ValueError, match="opened_bytes is an option of a sealed store"):
            attempt()
    assert not database.exists()
