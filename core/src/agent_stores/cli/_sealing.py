"""``agent-stores keyring create`` and ``agent-stores forget``: the keyring that seals stores, and erasing a tenant."""

from __future__ import annotations

from typing import Any

from agent_stores.core import redact_url
from agent_stores.core.sealing import KEYRING_ENV, KMS_KEY_ENV, Keyring, SealedStores, forget

from ._errors import CliError
from ._open import open_url

__all__ = ["create_keyring", "forget_tenant", "rekey_store", "reseal_store", "rotate_keyring"]


def create_keyring(path: str) -> dict[str, Any]:
    """Write a new keyring to ``path`` (mode 0600) and say how to use it.

    Raises:
        CliError: ``path`` exists (a keyring is never overwritten) or cannot be written.
    """
    try:
        keyring = Keyring.create(path)
    except FileExistsError as err:
        raise CliError(f"{path!r} exists; a keyring is never overwritten (choose another file)") from err
    except OSError as err:
        raise CliError(f"cannot write {path!r}: {err.strerror}") from err
    return {"file": path, "key_id": keyring.key_id, "environment": KEYRING_ENV}


async def forget_tenant(url: str, tenant: str) -> dict[str, Any]:
    """Destroy the tenant's data keys, then delete its data of every kind (:func:`agent_stores.core.sealing.forget`).

    Raises:
        CliError: The URL is malformed, the store does not exist, or ``tenant`` is empty.
    """
    if not tenant:
        raise CliError("--tenant must name a tenant")
    async with open_url(url, must_exist=True) as stores:
        if not stores.offers_drivers:
            raise CliError(f"the backend for {redact_url(url)!r} does not offer its drivers; forget needs them")
        deleted = await forget(stores, tenant)
        return {"url": redact_url(url), "tenant": tenant, "deleted": deleted}


def rotate_keyring(path: str) -> dict[str, Any]:
    """Add a new current key-encryption key to the keyring file at ``path`` (older keys stay, to unwrap).

    Raises:
        CliError: ``path`` is not a readable keyring.
    """
    try:
        rotated = Keyring.load(path).rotated()
        rotated.save(path, overwrite=True)
    except (OSError, ValueError) as err:
        raise CliError(f"cannot rotate {path!r}: {err}") from err
    return {"file": path, "key_id": rotated.key_id, "keys": sorted(rotated.keys)}


async def rekey_store(url: str) -> dict[str, Any]:
    """Re-wrap every data key of a sealed store under its keyring's current key (see ``SealedStores.rekey``).

    Raises:
        CliError: The store is not opened with a keyring, or does not exist.
    """
    async with open_url(url, must_exist=True) as stores:
        if not isinstance(stores, SealedStores):
            raise CliError(
                f"name the key: {KEYRING_ENV}=FILE or the URL option ?keyring=FILE "
                f"(AWS KMS: {KMS_KEY_ENV}=ID or ?kms_key_id=ID)"
            )
        return {"url": redact_url(url), **await stores.rekey()}


async def reseal_store(url: str) -> dict[str, Any]:
    """Seal in place every object a sealed store still holds in plaintext (see ``SealedStores.reseal``).

    Raises:
        CliError: The store is not opened with a key, or does not exist.
    """
    async with open_url(url, must_exist=True) as stores:
        if not isinstance(stores, SealedStores):
            raise CliError(
                f"name the key: {KEYRING_ENV}=FILE or the URL option ?keyring=FILE "
                f"(AWS KMS: {KMS_KEY_ENV}=ID or ?kms_key_id=ID)"
            )
        return {"url": redact_url(url), **await stores.reseal()}
