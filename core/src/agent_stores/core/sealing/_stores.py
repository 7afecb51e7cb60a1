"""``SealedStores``: every store of a backend built over sealing drivers, and ``forget(tenant)``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_framework import AgentFileStore, HistoryProvider, SessionStore

from ..drivers import LogDriver, ObjectDriver
from ..files import ObjectAgentFileStore
from ..history import LogHistoryProvider
from ..keys import TENANTS, tenant_root
from ..prefixed import within
from ..sessions import ObjectSessionStore
from ..stores import Backend, DriverBackend, Stores
from ._drivers import SealedLogDriver, SealedObjectDriver
from ._keys import KEYS_OBJECT, DataKeys, KeyProvider, Keyring

__all__ = ["Encryption", "SealedStores", "forget", "resolve_encryption"]


@dataclass(frozen=True)
class Encryption:
    """How ``open_stores(url, encryption=...)`` seals a store.

    Args:
        provider: Wraps the data keys (a :class:`Keyring`, a KMS provider).
        plaintext_reads: Keep reading values written before sealing was switched on (they are
            told apart by a format marker). ``False`` treats them as corrupt.
        max_scopes: How many tenants' unwrapped data keys stay cached.
    """

    provider: KeyProvider
    plaintext_reads: bool = True
    max_scopes: int = 1024


def resolve_encryption(encryption: object, keyring_option: str | None) -> Encryption | None:
    """What ``open_stores`` seals with: ``encryption``, else the URL option ``keyring=``, else ``AGENT_STORES_KEYRING``.

    ``encryption=False`` opens the store unsealed whatever the environment says.

    Raises:
        TypeError: ``encryption`` is not an :class:`Encryption`, a :class:`KeyProvider`, ``None`` or ``False``.
        ValueError, FileNotFoundError: The keyring named cannot be read.
    """
    if encryption is False:
        return None
    if isinstance(encryption, Encryption):
        return encryption
    if encryption is not None:
        if isinstance(encryption, KeyProvider):
            return Encryption(encryption)
        raise TypeError(
            f"encryption is an Encryption, a KeyProvider (such as a Keyring), None or False, got {encryption!r}"
        )
    if keyring_option:
        return Encryption(Keyring.load(keyring_option))
    keyring = Keyring.from_env()
    return None if keyring is None else Encryption(keyring)


class SealedStores(Stores):
    """:class:`~agent_stores.core.Stores` whose every store seals what it writes before a driver sees it.

    Every store is the core's own, built over the backend's drivers wrapped in
    :class:`SealedObjectDriver` and :class:`SealedLogDriver`: history, files, sessions, todos
    and checkpoints, for the store's root and for every tenant (each tenant with its own data
    key). A backend's own search push-down is not used (it would search ciphertext).

    Raises:
        TypeError: The backend does not hand out its drivers (see :class:`~agent_stores.core.DriverBackend`).
    """

    def __init__(self, url: str, backend: Backend, encryption: Encryption) -> None:
        super().__init__(url, backend)
        if not isinstance(backend, DriverBackend):
            raise TypeError("encryption needs a backend that offers object_driver() and log_driver()")
        self.encryption = encryption
        self.raw_objects: ObjectDriver = backend.object_driver()
        self.raw_logs: LogDriver = backend.log_driver()
        self.data_keys = DataKeys(self.raw_objects, encryption.provider, max_scopes=encryption.max_scopes)
        self._objects = SealedObjectDriver(self.raw_objects, self.data_keys, plaintext_reads=encryption.plaintext_reads)
        self._logs = SealedLogDriver(self.raw_logs, self.data_keys, plaintext_reads=encryption.plaintext_reads)

    def object_driver(self) -> ObjectDriver:
        """The sealing object driver every store of these stores writes through."""
        return self._objects

    def log_driver(self) -> LogDriver:
        """The sealing log driver every history provider of these stores writes through."""
        return self._logs

    def history_provider(
        self, source_id: str = "history", *, tenant: str | None = None, **options: Any
    ) -> HistoryProvider:
        """Return a sealed history provider (options as :class:`~agent_stores.core.LogHistoryProvider` takes them)."""
        shared = getattr(self.backend, "decode_cache", None)
        if shared is not None and "cache_bytes" not in options:
            options.setdefault("decode_cache", shared)
        return LogHistoryProvider(self._logs, source_id=source_id, tenant=tenant, **options)

    def file_store(self, *, tenant: str | None = None, **options: Any) -> AgentFileStore:
        """Return a sealed file store."""
        return ObjectAgentFileStore(self._objects, tenant=tenant, **options)

    def session_store(self, *, tenant: str | None = None, **options: Any) -> SessionStore:
        """Return a sealed session store."""
        return ObjectSessionStore(self._objects, tenant=tenant, **options)

    async def forget(self, tenant: str) -> int:
        """Erase a tenant: destroy its data keys first, then delete everything under its root (see :func:`forget`)."""
        deleted = await forget(self, tenant)
        self.data_keys.forget_cached(tenant_root(tenant))
        return deleted

    async def rekey(self) -> dict[str, int]:
        """Re-wrap every scope's data keys under the provider's current key-encryption key.

        Works in scopes (the root and each tenant), never in records; safe while agents write,
        and resumable (see :meth:`DataKeys.rewrap`). Once it has run, a keyring holding only
        the new key-encryption key opens everything.

        Returns:
            ``{"scopes": scopes visited, "rewrapped": data keys re-wrapped}``.

        Raises:
            SealingKeyError: The provider lacks a key-encryption key a data key is wrapped with.
        """
        scopes, rewrapped = 1, await self.data_keys.rewrap("")
        async for tenant in self.iter_tenants():
            scopes += 1
            rewrapped += await self.data_keys.rewrap(f"{TENANTS}/{tenant.segment}/")
        return {"scopes": scopes, "rewrapped": rewrapped}

    def __repr__(self) -> str:
        return f"Sealed{super().__repr__()}"


async def forget(stores: Stores, tenant: str) -> int:
    """Erase a tenant of any store: destroy its data keys first, then delete its logs and objects.

    Once the keys are gone nothing sealed for the tenant decrypts — the live store, and every
    replica, snapshot or backup taken from then on — so an interrupted call leaves nothing
    readable, and calling again finishes the deletion. It needs no key-encryption key, so a
    store opened without one can be erased too; a store that was never sealed has its data
    deleted. A backup taken *before* the call still holds the wrapped key: it opens with the
    key-encryption key until that key is rotated away and destroyed (``docs/encryption.md``).
    A process that had the tenant's data key cached keeps it until it reads the key object again.

    Returns:
        How many logs and objects were deleted (the key object not counted).

    Raises:
        TypeError: The backend does not hand out its drivers.
        ValueError: ``tenant`` is not a non-empty string.
    """
    root = tenant_root(tenant)
    if isinstance(stores, SealedStores):
        objects, logs = stores.raw_objects, stores.raw_logs
        stores.data_keys.forget_cached(root)
    else:
        objects, logs = stores.object_driver(), stores.log_driver()
    await objects.delete(root + KEYS_OBJECT)
    deleted = 0
    scoped_logs = within(logs, root)
    after_log: str | None = None
    while page := await scoped_logs.list_logs("", after=after_log, limit=100):
        for log in page:
            deleted += await scoped_logs.delete(log.key)
        after_log = page[-1].key
    after: str | None = None
    while True:
        listing = await objects.list(root, delimiter=None, after=after, limit=500)
        for key in listing.keys:
            deleted += await objects.delete(key)
        if len(listing.keys) < 500:
            return deleted
        after = listing.keys[-1]
