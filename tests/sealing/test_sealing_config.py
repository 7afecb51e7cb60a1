"""What ``open_stores`` seals with when no code names it: keyring and KMS key options, the environment, conflicts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from agent_framework import Message

from agent_stores.core import StoredObject, Stores, open_stores
from agent_stores.core.sealing import (
    KEYRING_ENV,
    KMS_KEY_ENV,
    SEALED_MARKER,
    Keyring,
    SealedStores,
    resolve_encryption,
)


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
    with pytest.raises(ValueError, match="true or false"):
        open_stores(f"{url}?adopt_plaintext=maybe")
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
