"""The sealing commands: ``keyring create|rotate``, ``rekey`` (and ``--data-keys``), ``reseal``, ``forget``."""

from __future__ import annotations

from typing import Any

from agent_stores.core import redact_url
from agent_stores.core.sealing import KEYRING_ENV, KMS_KEY_ENV, Keyring, SealedStores, forget

from ._errors import CliError
from ._open import open_url

__all__ = ["create_keyring", "forget_tenant", "rekey_store", "reseal_store", "rotate_data_keys", "rotate_keyring"]

_NO_KEY = (
    f"name the key: {KEYRING_ENV}=FILE or the URL option ?keyring=FILE (AWS KMS: {KMS_KEY_ENV}=ID or ?kms_key_id=ID)"
)


def _one_scope(tenant: str | None, namespace: str | None, *, required: bool) -> None:
    """Refuse both ``--tenant`` and ``--namespace`` (and neither, when ``required``), and an empty tenant."""
    if tenant is not None and namespace is not None:
        raise CliError("name a tenant (--tenant) or a namespace (--namespace), not both")
    if required and tenant is None and namespace is None:
        raise CliError("name what to erase: --tenant TENANT, or --namespace NAMESPACE for a store without tenants")
    if tenant is not None and not tenant:
        raise CliError("--tenant must name a tenant")


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


async def forget_tenant(url: str, tenant: str | None, namespace: str | None = None) -> dict[str, Any]:
    """Destroy a tenant's (or a namespace's) data keys, then delete its data (:func:`agent_stores.core.sealing.forget`).

    Raises:
        CliError: The URL is malformed, the store does not exist, ``tenant`` is empty, or not
            exactly one of ``tenant`` and ``namespace`` is given.
    """
    _one_scope(tenant, namespace, required=True)
    async with open_url(url, must_exist=True) as stores:
        if not stores.offers_drivers:
            raise CliError(f"the backend for {redact_url(url)!r} does not offer its drivers; forget needs them")
        deleted = await forget(stores, tenant, namespace=namespace)
        named = {"tenant": tenant} if tenant is not None else {"namespace": namespace}
        return {"url": redact_url(url), **named, "deleted": deleted}


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
            raise CliError(_NO_KEY)
        return {"url": redact_url(url), **await stores.rekey()}


async def rotate_data_keys(
    url: str, *, tenant: str | None = None, namespace: str | None = None, older_than: float | None = None
) -> dict[str, Any]:
    """Give every scope of a sealed store (or one tenant or namespace) a new current data key (``rotate_data_keys``).

    Raises:
        CliError: The store is not opened with a key, does not exist, or both a tenant and a
            namespace are named.
    """
    _one_scope(tenant, namespace, required=False)
    async with open_url(url, must_exist=True) as stores:
        if not isinstance(stores, SealedStores):
            raise CliError(_NO_KEY)
        report = await stores.rotate_data_keys(tenant=tenant, namespace=namespace, older_than=older_than)
        return {"url": redact_url(url), **report}


async def reseal_store(
    url: str,
    *,
    tenant: str | None = None,
    namespace: str | None = None,
    after: str | None = None,
    log_ttl: float | None = None,
    concurrency: int = 4,
) -> dict[str, Any]:
    """Seal again every object and history log not sealed with its scope's current data key (``SealedStores.reseal``).

    Raises:
        CliError: The store is not opened with a key, does not exist, or both a tenant and a
            namespace are named.
    """
    _one_scope(tenant, namespace, required=False)
    async with open_url(url, must_exist=True) as stores:
        if not isinstance(stores, SealedStores):
            raise CliError(_NO_KEY)
        report = await stores.reseal(
            tenant=tenant, namespace=namespace, after=after, log_ttl=log_ttl, concurrency=concurrency
        )
        return {"url": redact_url(url), **report}
