"""What ``open_stores`` seals with when no code names it: keyring and KMS key options, the environment, conflicts."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from agent_stores.core import Stores, open_stores
from agent_stores.core.sealing import KEYRING_ENV, KMS_KEY_ENV, Keyring, SealedStores, resolve_encryption


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
