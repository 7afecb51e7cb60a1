"""``SealedStores``: every store of a backend built over sealing drivers; ``forget`` a tenant or a namespace."""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib.metadata import entry_points
from typing import Any

from agent_framework import AgentFileStore, HistoryProvider, SessionStore

from ..drivers import LogDriver, ObjectDriver
from ..files import ObjectAgentFileStore
from ..history import LogHistoryProvider, validate_ttl
from ..keys import TENANTS, key_segment, tenant_root
from ..lifecycle import share_decode_cache
from ..objectlog import LOG_OPTIONS, ObjectLogDriver
from ..prefixed import within
from ..redaction import redact_url
from ..sealmark import (
    ADOPT_PLAINTEXT,
    KMS_KEY_ENV,
    SEALING_SETTINGS,
    PlaintextStoreError,
    SealMarker,
    probe_store,
    read_marker,
    write_marker,
)
from ..sessions import ObjectSessionStore
from ..stores import Backend, DriverBackend, Stores
from ..urls import parse_bool
from ._drivers import OPENED_BYTES, SealedLogDriver, SealedObjectDriver
from ._keys import KEYRING_ENV, DataKeys, KeyProvider, Keyring
from ._scopes import NAMESPACE_SCOPES, keys_object, namespace_scope
from ._sweep import reseal_logs, reseal_objects

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
        max_scopes: How many scopes' (tenants', namespaces') unwrapped data keys stay cached.
        adopt_plaintext: Open a store that holds plaintext and is not marked as sealed, and
            seal it from now on (marking it: opens without a key refuse it from then on).
            Without it such a store is a :class:`~agent_stores.core.sealmark.PlaintextStoreError`.
        key_refresh: Seconds after which a scope's data keys are read from the store again
            before their next use: a data key another process made current is used here, and
            one another process destroyed (``forget``) stops being used, within this bound
            (``0``: read again before every use).
        opened_bytes: Most bytes of history records the stores remember having opened (their
            sealed and plain bytes), so a record loaded again is not decrypted again; ``0``
            remembers none.

    Every field but ``provider`` is also an option of ``open_stores`` and of a sealed store's
    URL (``?keyring=FILE&plaintext_reads=false&max_scopes=4096&key_refresh=30&opened_bytes=0``),
    read by the same readers (:data:`~agent_stores.core.sealmark.SEALING_SETTINGS`): the text
    of a URL is accepted here too and stored as the value it reads as.

    Raises:
        ValueError: A field its reader refuses, naming it: ``plaintext_reads`` or
            ``adopt_plaintext`` not a boolean, ``max_scopes`` not a whole positive number,
            ``key_refresh`` not a finite, non-negative number of seconds, ``opened_bytes`` not a
            whole non-negative number of bytes.
    """

    provider: KeyProvider
    plaintext_reads: bool = True
    max_scopes: int = 1024
    adopt_plaintext: bool = False
    key_refresh: float = 60.0
    opened_bytes: int = OPENED_BYTES

    def __post_init__(self) -> None:
        object.__setattr__(self, ADOPT_PLAINTEXT, parse_bool(self.adopt_plaintext, option=ADOPT_PLAINTEXT))
        for name, read in SEALING_SETTINGS.items():
            object.__setattr__(self, name, read(getattr(self, name)))


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
    opened_bytes: int | None = None,
    plaintext_reads: bool | None = None,
    max_scopes: int | None = None,
    key_refresh: float | None = None,
    environ: Mapping[str, str] | None = None,
) -> Encryption | None:
    """What ``open_stores`` seals with: the first of ``encryption``, a keyring, a KMS key, the environment.

    That is ``encryption``, else the keyring file ``keyring_option``, else the KMS key
    ``kms_key_id``, else the environment variable ``AGENT_STORES_KEYRING``, else
    ``AGENT_STORES_KMS_KEY_ID``.

    ``encryption=False`` opens the store unsealed whatever the environment says.
    ``adopt_plaintext`` applies to a provider found here (an :class:`Encryption` given says its own).
    ``opened_bytes``, ``plaintext_reads``, ``max_scopes`` and ``key_refresh`` (``None``: not
    given) apply to whatever seals, an :class:`Encryption` given included, read as
    :class:`Encryption` reads them.

    Raises:
        TypeError: ``encryption`` is not an :class:`Encryption`, a :class:`KeyProvider`, ``None`` or ``False``.
        ValueError: Both a keyring and a KMS key are named, ``adopt_plaintext`` or a setting
            without any key, a setting its reader refuses (naming it), or the KMS provider is
            not installed.
        FileNotFoundError: The keyring named cannot be read (a malformed one is a ``ValueError``).
    """
    given = {
        name: value
        for name, value in (
            ("opened_bytes", opened_bytes),
            ("plaintext_reads", plaintext_reads),
            ("max_scopes", max_scopes),
            ("key_refresh", key_refresh),
        )
        if value is not None
    }
    settings = {name: SEALING_SETTINGS[name](value) for name, value in given.items()}
    if encryption is False:
        if adopt_plaintext or settings:
            named = ADOPT_PLAINTEXT if adopt_plaintext else next(iter(settings))
            raise ValueError(f"{named} is an option of a sealed store: it needs a key, not encryption=False")
        return None
    if isinstance(encryption, Encryption):
        return replace(encryption, **settings) if settings else encryption
    if encryption is not None:
        if isinstance(encryption, KeyProvider):
            return Encryption(encryption, adopt_plaintext=adopt_plaintext, **settings)
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
        if settings:
            raise ValueError(
                f"{next(iter(settings))} is an option of a sealed store: name its key "
                "(keyring=, kms_key_id= or encryption=)"
            )
        return None
    return Encryption(provider, adopt_plaintext=adopt_plaintext, **settings)


class SealedStores(Stores):
    """:class:`~agent_stores.core.Stores` whose every store seals what it writes before a driver sees it.

    Every store is the core's own, built over the backend's drivers wrapped in
    :class:`SealedObjectDriver` and :class:`SealedLogDriver`: history, files, sessions, todos
    and checkpoints, for the store's root and for every tenant (each tenant with its own data
    keys; outside tenants, each namespace's history, todos and checkpoints with its own). A
    backend's own search push-down is not used (it would search ciphertext).

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
            self.raw_objects,
            encryption.provider,
            max_scopes=encryption.max_scopes,
            before_create=self._mark,
            refresh=encryption.key_refresh,
        )
        self._marked = False
        self._objects = SealedObjectDriver(self.raw_objects, self.data_keys, plaintext_reads=encryption.plaintext_reads)
        self._logs = SealedLogDriver(
            self.raw_logs,
            self.data_keys,
            plaintext_reads=encryption.plaintext_reads,
            opened_bytes=encryption.opened_bytes,
        )

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
        """Return a sealed history provider.

        ``options`` as :class:`~agent_stores.core.LogHistoryProvider` takes them and, where the
        backend's logs are object logs (S3, fsspec), the object log's (:data:`~agent_stores.core.objectlog.LOG_OPTIONS`:
        ``fair_claims``, ``concurrency``, ``compact_after``, ``tail_after``, ``tail_records``),
        which win over the URL's and ``open_stores``'s for this provider, as on an unsealed store.

        Raises:
            ValueError: An object log option on a backend whose logs are not object logs, or a
                value its reader refuses, naming the option.
        """
        logs = self._logs
        tuned = {name: options.pop(name) for name in LOG_OPTIONS if name in options}
        if tuned:
            if not isinstance(self.raw_logs, ObjectLogDriver):
                raise ValueError(
                    f"unknown history provider options {sorted(tuned)} for {redact_url(self.url)}: they are "
                    "options of the object log (s3, fsspec), and this store's logs are not object logs"
                )
            logs = logs.over(self.raw_logs.tuned(**tuned))
        share_decode_cache(options, getattr(self.backend, "decode_cache", None))
        return self.open_check.attach(LogHistoryProvider(logs, source_id=source_id, tenant=tenant, **options))

    def file_store(self, *, tenant: str | None = None, **options: Any) -> AgentFileStore:
        """Return a sealed file store."""
        return self.open_check.attach(ObjectAgentFileStore(self._objects, tenant=tenant, **options))

    def session_store(self, *, tenant: str | None = None, **options: Any) -> SessionStore:
        """Return a sealed session store."""
        return self.open_check.attach(ObjectSessionStore(self._objects, tenant=tenant, **options))

    async def forget(self, tenant: str | None = None, *, namespace: str | None = None) -> int:
        """Erase a tenant, or a namespace outside tenants: destroy its data keys first, then delete its data.

        See :func:`forget`.
        """
        return await forget(self, tenant, namespace=namespace)

    async def scopes(self) -> AsyncIterator[str]:
        """Yield every scope that may hold data keys: the root, each namespace with keys, each tenant."""
        yield ""
        after: str | None = None
        while True:
            listing = await self.raw_objects.list(NAMESPACE_SCOPES, delimiter="/", after=after, limit=500)
            for prefix in listing.prefixes:
                yield prefix
            if len(listing.prefixes) + len(listing.keys) < 500:
                break
            after = max([*listing.prefixes, *listing.keys])
        async for tenant in self.iter_tenants():
            yield f"{TENANTS}/{tenant.segment}/"

    def _chosen(self, tenant: str | None, namespace: str | None) -> list[str] | None:
        """The one scope ``tenant`` or ``namespace`` names (``None``: every scope)."""
        if tenant is not None and namespace is not None:
            raise ValueError("name a tenant or a namespace, not both")
        if tenant is not None:
            return [tenant_root(tenant)]
        if namespace is not None:
            return [namespace_scope(key_segment(namespace))]
        return None

    async def rekey(self) -> dict[str, int]:
        """Re-wrap every scope's data keys under the provider's current key-encryption key.

        Works in scopes (the root, each namespace and each tenant), never in records; safe
        while agents write, and resumable (see :meth:`DataKeys.rewrap`). Once it has run, a
        keyring holding only the new key-encryption key opens everything, and the store's
        marker names that key.

        Returns:
            ``{"scopes": scopes visited, "rewrapped": data keys re-wrapped}``.

        Raises:
            SealingKeyError: The provider lacks a key-encryption key a data key is wrapped with.
            PlaintextStoreError: The store holds plaintext and was not opened with ``adopt_plaintext``.
        """
        await self.open_check.wait()
        scopes = rewrapped = 0
        async for scope in self.scopes():
            scopes += 1
            rewrapped += await self.data_keys.rewrap(scope)
        if self._marked or rewrapped:  # a store never sealed stays unmarked
            await write_marker(self.raw_objects, self._marker(), replace=True)
            self._marked = True
        return {"scopes": scopes, "rewrapped": rewrapped}

    async def rotate_data_keys(
        self, *, tenant: str | None = None, namespace: str | None = None, older_than: float | None = None
    ) -> dict[str, Any]:
        """Give every scope (or the one ``tenant`` or ``namespace`` names) a new current data key.

        New values are sealed with it at once in this process, and in others once they read the
        scope's key object again (:attr:`Encryption.key_refresh`; a value sealed with a key a
        process has not seen reads it at once). Older data keys stay, so every record sealed
        before keeps opening by its key id; :meth:`reseal` then seals the objects and logs again under
        the new keys. Each scope changes under a conditional write (see :meth:`DataKeys.rotate`):
        safe while agents write and while another process rotates. A scope whose current key was
        made at or after ``older_than`` (a Unix time; default: when this call started) is
        skipped, so running it again with the ``older_than`` an interrupted run returned
        finishes that run without adding a second key. Scopes without data keys are skipped.

        Returns:
            ``{"scopes": scopes visited, "rotated": scopes given a new key, "older_than": the cutoff}``.

        Raises:
            ValueError: Both ``tenant`` and ``namespace`` are given, or ``tenant`` is empty.
            SealingKeyError: The provider cannot wrap the new keys.
            PlaintextStoreError: The store holds plaintext and was not opened with ``adopt_plaintext``.
        """
        chosen = self._chosen(tenant, namespace)
        await self.open_check.wait()
        cutoff = time.time() if older_than is None else older_than
        scopes = rotated = 0
        async for scope in _each(chosen, self.scopes):
            scopes += 1
            rotated += await self.data_keys.rotate(scope, older_than=cutoff) is not None
        return {"scopes": scopes, "rotated": rotated, "older_than": cutoff}

    async def reseal(
        self,
        *,
        after: str | None = None,
        tenant: str | None = None,
        namespace: str | None = None,
        log_ttl: float | None = None,
        concurrency: int = 4,
    ) -> dict[str, int]:
        """Seal again every object and history log not sealed with its scope's current data key.

        Files, session snapshots, todo lists, checkpoints and history logs of the root, every
        namespace and every tenant (or only of ``tenant``, or of ``namespace`` outside
        tenants) that are still plaintext (a store opened with ``adopt_plaintext``), or sealed
        with an older data key (after :meth:`rotate_data_keys`, or a namespace's values sealed
        with the root's key before namespaces had keys of their own). Safe while agents write
        and resumable: objects are rewritten in place on a condition (see
        :func:`~agent_stores.core.sealing.reseal_objects`); logs through retention's
        stage/seal/swap with every record kept, at most ``concurrency`` at once (see
        :func:`~agent_stores.core.sealing.reseal_logs`). A rewritten log's expiry starts again
        with ``log_ttl`` (pass your history providers' ``ttl``; ``None``: it does not expire).
        ``after`` (an object key) applies to objects only.

        Returns:
            ``{"scanned", "sealed", "resealed", "unreadable"}``: objects looked at, plaintext
            ones sealed, ones sealed again under the current key, ones that do not open; and
            ``{"logs_scanned", "logs_resealed", "logs_unreadable", "logs_busy"}``: the same for
            history logs, and logs left for the next run (saves kept landing, or a retention of
            the session was under way).

        Raises:
            ValueError: Both ``tenant`` and ``namespace`` are given, ``tenant`` is empty,
                ``log_ttl`` is not positive or ``concurrency`` is below 1.
            PlaintextStoreError: The store holds plaintext and was not opened with ``adopt_plaintext``.
            StoreConflictError: An object kept changing for every attempt.
        """
        self._chosen(tenant, namespace)  # refuses both at once
        ttl = validate_ttl(log_ttl)
        if concurrency < 1:
            raise ValueError(f"concurrency must be at least 1, got {concurrency}")
        prefixes: Sequence[str] = ("",)
        log_roots: list[tuple[str, str]] = []
        if tenant is not None:
            prefixes = (tenant_root(tenant),)
            log_roots = [(tenant_root(tenant), "")]
        elif namespace is not None:
            segment = key_segment(namespace)
            prefixes = _namespace_objects(segment)
            if segment != TENANTS:  # outside tenants, ``tenants/`` holds every tenant's logs, never a namespace's
                log_roots = [("", f"{segment}/")]
        await self.open_check.wait()
        if tenant is None and namespace is None:
            log_roots = [("", "")]
            async for found in self.iter_tenants():
                log_roots.append((f"{TENANTS}/{found.segment}/", ""))
        report = await reseal_objects(self.raw_objects, self._objects, after=after, prefixes=prefixes)
        logs = await reseal_logs(self.raw_logs, self._logs, roots=log_roots, ttl=ttl, concurrency=concurrency)
        return {**report, **logs}

    def __repr__(self) -> str:
        return f"Sealed{super().__repr__()}"


async def _each(chosen: list[str] | None, every: Callable[[], AsyncIterator[str]]) -> AsyncIterator[str]:
    if chosen is not None:
        for scope in chosen:
            yield scope
        return
    async for scope in every():
        yield scope


def _namespace_objects(segment: str) -> tuple[str, str]:
    """The object folders of the namespace ``segment`` outside tenants: its todo lists and checkpoints."""
    return (f"todos/{segment}/", f"checkpoints/{segment}/")


async def forget(stores: Stores, tenant: str | None = None, *, namespace: str | None = None) -> int:
    """Erase a tenant, or a namespace outside tenants, of any store: destroy its data keys first, then delete its data.

    A tenant's data is everything under ``tenants/<tenant>/``: its history logs and every
    object. A namespace's data (outside tenants) is its history logs ``<namespace>/...``, its
    todo lists ``todos/<namespace>/...`` and checkpoints ``checkpoints/<namespace>/...``;
    files and sessions take no namespace and stay (they are sealed with the root's keys).

    Once the keys are gone nothing sealed for the tenant or namespace decrypts — the live
    store, and every replica, snapshot or backup taken from then on — so an interrupted call
    leaves nothing readable, and calling again finishes the deletion. It needs no
    key-encryption key, so a store opened without one can be erased too; a store that was
    never sealed has its data deleted. A backup taken *before* the call still holds the
    wrapped key: it opens with the key-encryption key until that key is rotated away and
    destroyed (``docs/encryption.md``). A namespace's values sealed before namespaces had
    data keys of their own are sealed with the root's key: a copy of those taken before the
    call still opens (``SealedStores.reseal`` seals such objects and logs under the namespace's key).
    Another process that had the keys cached stops using them once it reads the key object
    again (:attr:`Encryption.key_refresh`).

    Returns:
        How many logs and objects were deleted (the key object not counted).

    Raises:
        TypeError: The backend does not hand out its drivers.
        ValueError: Neither or both of ``tenant`` and ``namespace`` are given, or ``tenant`` is
            not a non-empty string.
    """
    if (tenant is None) == (namespace is None):
        raise ValueError("forget erases a tenant or a namespace: name exactly one")
    if tenant is not None:
        scope = root = tenant_root(tenant)
        log_prefix, object_prefixes = "", (root,)
    else:
        assert namespace is not None
        segment = key_segment(namespace)
        scope, root = namespace_scope(segment), ""
        # outside tenants, the log prefix ``tenants/`` holds every tenant's logs, never a namespace's
        log_prefix = "" if segment == TENANTS else f"{segment}/"
        object_prefixes = _namespace_objects(segment)
    if isinstance(stores, SealedStores):
        objects, logs = stores.raw_objects, stores.raw_logs
        stores.data_keys.forget_cached(scope)
    else:
        objects, logs = stores.object_driver(), stores.log_driver()
    await objects.delete(keys_object(scope))
    deleted = 0
    if log_prefix or tenant is not None:
        scoped_logs = within(logs, root)
        after_log: str | None = None
        while page := await scoped_logs.list_logs(log_prefix, after=after_log, limit=100):
            for log in page:
                deleted += await scoped_logs.delete(log.key)
            after_log = page[-1].key
    for prefix in object_prefixes:
        after: str | None = None
        while True:
            listing = await objects.list(prefix, delimiter=None, after=after, limit=500)
            for key in listing.keys:
                deleted += await objects.delete(key)
            if len(listing.keys) < 500:
                break
            after = listing.keys[-1]
    if isinstance(stores, SealedStores):
        stores.data_keys.forget_cached(scope)
    return deleted
