"""``SealedStores``: every store of a backend built over sealing drivers, and ``forget(tenant)``."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any

from agent_framework import AgentFileStore, HistoryProvider, SessionStore

from ..drivers import LogDriver, ObjectDriver
from ..files import ObjectAgentFileStore
from ..history import LogHistoryProvider
from ..keys import TENANTS, tenant_root
from ..prefixed import within
from ..redaction import redact_url
from ..sealmark import KMS_KEY_ENV, PlaintextStoreError, SealMarker, probe_store, read_marker, write_marker
from ..sessions import ObjectSessionStore
from ..stores import Backend, DriverBackend, Stores
from ._drivers import SealedLogDriver, SealedObjectDriver
from ._keys import KEYRING_ENV, KEYS_OBJECT, DataKeys, KeyProvider, Keyring
from ._sweep import reseal_objects

__all__ = ["KEY_PROVIDERS", "Encryption", "SealedStores", "forget", "kms_provider", "resolve_encryption"]

#: The entry-point group of key providers configured by name: ``kms`` (AWS KMS, the ``s3`` extra).
KEY_PROVIDERS = "agent_stores.key_providers"


@dataclass(frozen=True)
class Encryption:
    """How ``open_stores(url, encryption=...)`` seals a store.

    Args:
        provider: Wraps the data keys (a :class:`Keyring`, a KMS provider).
        plaintext_reads: Keep reading values written before sealing was switched on (they are
            told apart by a format marker). ``False`` treats them as corrupt.
        max_scopes: How many tenants' unwrapped data keys stay cached.
        adopt_plaintext: Open a store that holds plaintext and is not marked as sealed, and
            seal it from now on (marking it: opens without a key refuse it from then on).
            Without it such a store is a :class:`~agent_stores.core.sealmark.PlaintextStoreError`.
    """

    provider: KeyProvider
    plaintext_reads: bool = True
    max_scopes: int = 1024
    adopt_plaintext: bool = False


def kms_provider(key_id: str) -> KeyProvider:
    """An AWS KMS key provider for ``key_id`` (an id, ARN or alias), from the installed ``s3`` extra.

    The KMS client takes the usual AWS configuration (credentials, region, ``AWS_ENDPOINT_URL_KMS``);
    the region of an ARN is used when none is configured.

    Raises:
        ValueError: ``key_id`` is empty, or no installed package provides ``kms``.
    """
    if not key_id:
        raise ValueError("a KMS key id, ARN or alias is required")
    entry = next((ep for ep in entry_points(group=KEY_PROVIDERS) if ep.name == "kms"), None)
    if entry is None:
        raise ValueError('sealing with AWS KMS needs the s3 extra: pip install "agent-stores[s3]"')
    provider: Any = entry.load()(key_id)
    if not isinstance(provider, KeyProvider):
        raise TypeError(f"the key provider {entry.value!r} is not a KeyProvider")
    return provider


def resolve_encryption(
    encryption: object,
    keyring_option: str | None,
    *,
    kms_key_id: str | None = None,
    adopt_plaintext: bool = False,
    environ: Mapping[str, str] | None = None,
) -> Encryption | None:
    """What ``open_stores`` seals with: the first of ``encryption``, a keyring, a KMS key, the environment.

    That is ``encryption``, else the keyring file ``keyring_option``, else the KMS key
    ``kms_key_id``, else the environment variable ``AGENT_STORES_KEYRING``, else
    ``AGENT_STORES_KMS_KEY_ID``.

    ``encryption=False`` opens the store unsealed whatever the environment says.
    ``adopt_plaintext`` applies to a provider found here (an :class:`Encryption` given says its own).

    Raises:
        TypeError: ``encryption`` is not an :class:`Encryption`, a :class:`KeyProvider`, ``None`` or ``False``.
        ValueError: Both a keyring and a KMS key are named, ``adopt_plaintext`` without any key,
            or the KMS provider is not installed.
        FileNotFoundError: The keyring named cannot be read (a malformed one is a ``ValueError``).
    """
    if encryption is False:
        if adopt_plaintext:
            raise ValueError("adopt_plaintext seals a store: it needs a key, not encryption=False")
        return None
    if isinstance(encryption, Encryption):
        return encryption
    if encryption is not None:
        if isinstance(encryption, KeyProvider):
            return Encryption(encryption, adopt_plaintext=adopt_plaintext)
        raise TypeError(
            f"encryption is an Encryption, a KeyProvider (such as a Keyring), None or False, got {encryption!r}"
        )
    if keyring_option and kms_key_id:
        raise ValueError("name a keyring or a KMS key to seal with, not both")
    provider: KeyProvider | None = None
    if keyring_option:
        provider = Keyring.load(keyring_option)
    elif kms_key_id:
        provider = kms_provider(kms_key_id)
    else:
        env = os.environ if environ is None else environ
        provider = Keyring.from_env(env)
        kms_env = env.get(KMS_KEY_ENV, "").strip()
        if provider is not None and kms_env:
            raise ValueError(f"{KEYRING_ENV} and {KMS_KEY_ENV} are both set: keep the one that seals this store")
        if provider is None and kms_env:
            provider = kms_provider(kms_env)
    if provider is None:
        if adopt_plaintext:
            raise ValueError("adopt_plaintext seals a store: name its key (keyring=, kms_key_id= or encryption=)")
        return None
    return Encryption(provider, adopt_plaintext=adopt_plaintext)


class SealedStores(Stores):
    """:class:`~agent_stores.core.Stores` whose every store seals what it writes before a driver sees it.

    Every store is the core's own, built over the backend's drivers wrapped in
    :class:`SealedObjectDriver` and :class:`SealedLogDriver`: history, files, sessions, todos
    and checkpoints, for the store's root and for every tenant (each tenant with its own data
    key). A backend's own search push-down is not used (it would search ciphertext).

    The store is marked as sealed (:data:`~agent_stores.core.sealmark.SEALED_MARKER`) before
    its first data key is made, so an open without a key refuses it. Before the first operation
    of any store handed out, the open checks once that the store is marked, empty, or (sealed
    before markers existed) sealed; a store holding plaintext is a
    :class:`~agent_stores.core.sealmark.PlaintextStoreError` unless
    :attr:`Encryption.adopt_plaintext`.

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
        self.data_keys = DataKeys(
            self.raw_objects, encryption.provider, max_scopes=encryption.max_scopes, before_create=self._mark
        )
        self._marked = False
        self._objects = SealedObjectDriver(self.raw_objects, self.data_keys, plaintext_reads=encryption.plaintext_reads)
        self._logs = SealedLogDriver(self.raw_logs, self.data_keys, plaintext_reads=encryption.plaintext_reads)

    async def _check_open(self) -> None:
        """A sealed open: the store is marked, empty, or sealed before markers; plaintext only when adopted."""
        if await read_marker(self.raw_objects) is not None:
            self._marked = True
            return
        found = await probe_store(self.raw_objects, self.raw_logs)
        if found is None:
            return  # an empty store: marked when its first data key is made
        where, sealed = found
        if not sealed and not self.encryption.adopt_plaintext:
            raise PlaintextStoreError(
                f"{redact_url(self.url)} holds plaintext ({where}) and is not marked as sealed; nothing was read "
                "or written. To seal what is written from now on and keep reading the plaintext, open it with "
                "Encryption(provider, adopt_plaintext=True) or the URL option adopt_plaintext=true; to seal "
                "everything, copy it into a new store: agent-stores migrate PLAIN-URL SEALED-URL"
            )
        await self._mark()

    async def _mark(self) -> None:
        """Mark the store as sealed (once per open): opens without a key refuse it from then on."""
        if not self._marked:
            await write_marker(self.raw_objects, self._marker())
            self._marked = True

    def _marker(self) -> SealMarker:
        provider = self.encryption.provider
        return SealMarker(provider.key_id, type(provider).__name__)

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
        return self.open_check.attach(LogHistoryProvider(self._logs, source_id=source_id, tenant=tenant, **options))

    def file_store(self, *, tenant: str | None = None, **options: Any) -> AgentFileStore:
        """Return a sealed file store."""
        return self.open_check.attach(ObjectAgentFileStore(self._objects, tenant=tenant, **options))

    def session_store(self, *, tenant: str | None = None, **options: Any) -> SessionStore:
        """Return a sealed session store."""
        return self.open_check.attach(ObjectSessionStore(self._objects, tenant=tenant, **options))

    async def forget(self, tenant: str) -> int:
        """Erase a tenant: destroy its data keys first, then delete everything under its root (see :func:`forget`)."""
        deleted = await forget(self, tenant)
        self.data_keys.forget_cached(tenant_root(tenant))
        return deleted

    async def rekey(self) -> dict[str, int]:
        """Re-wrap every scope's data keys under the provider's current key-encryption key.

        Works in scopes (the root and each tenant), never in records; safe while agents write,
        and resumable (see :meth:`DataKeys.rewrap`). Once it has run, a keyring holding only
        the new key-encryption key opens everything, and the store's marker names that key.

        Returns:
            ``{"scopes": scopes visited, "rewrapped": data keys re-wrapped}``.

        Raises:
            SealingKeyError: The provider lacks a key-encryption key a data key is wrapped with.
            PlaintextStoreError: The store holds plaintext and was not opened with ``adopt_plaintext``.
        """
        await self.open_check.wait()
        scopes, rewrapped = 1, await self.data_keys.rewrap("")
        async for tenant in self.iter_tenants():
            scopes += 1
            rewrapped += await self.data_keys.rewrap(f"{TENANTS}/{tenant.segment}/")
        if self._marked or rewrapped:  # a store never sealed stays unmarked
            await write_marker(self.raw_objects, self._marker(), replace=True)
            self._marked = True
        return {"scopes": scopes, "rewrapped": rewrapped}

    async def reseal(self, *, after: str | None = None) -> dict[str, int]:
        """Seal in place every object the store held in plaintext (a store opened with ``adopt_plaintext``).

        Files, session snapshots, todo lists and checkpoints of the root and every tenant; safe
        while agents write and resumable (see :func:`~agent_stores.core.sealing.reseal_objects`).
        History records written before sealing stay plaintext (logs are append-only).

        Returns:
            ``{"scanned": objects looked at, "sealed": objects sealed}``.

        Raises:
            PlaintextStoreError: The store holds plaintext and was not opened with ``adopt_plaintext``.
        """
        await self.open_check.wait()
        return await reseal_objects(self.raw_objects, self._objects, after=after)

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
