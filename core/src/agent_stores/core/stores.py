"""``open_stores(url)``: every store of one backend from one URL.

Backends register a factory under the entry-point group ``agent_stores.backends``, one entry
per URL scheme, so installed backends (ours and third parties') are found without the core
knowing their names::

    [project.entry-points."agent_stores.backends"]
    sqlite = "agent_stores.sqlite:SQLiteBackend"

A factory (a class or a function) takes ``(url, **options)`` and returns a :class:`Backend` without doing I/O:
connections open lazily on first use, so ``open_stores`` can be called outside an event loop.
A backend declared with :class:`~agent_stores.core.lifecycle.ConnectedBackend` is one; a
backend that also offers ``object_driver()`` (and ``log_driver()``) gets every store the core
builds generically over those drivers with no wiring of its own.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Mapping
from importlib.metadata import entry_points
from typing import Any, Protocol, cast, runtime_checkable

from agent_framework import AgentFileStore, CompactionStrategy, HistoryProvider, SessionStore

from .checkpoints import ObjectCheckpointStorage
from .drivers import LogDriver, ObjectDriver
from .harness import harness_kwargs
from .keys import TENANTS, KeySpace
from .lifecycle import OwnedResource, take_query_option
from .listing import Segment, iter_pages, log_segments, object_segments, segments
from .opencheck import OpenCheck
from .prefixed import within
from .redaction import redact_url
from .retain import is_staging_segment
from .sealmark import ADOPT_PLAINTEXT, KMS_KEY_ENV, SEALING_SETTINGS, refuse_if_sealed, take_sealing_options
from .tenants import TenantStores
from .todos import ObjectTodoStore

__all__ = ["ENTRY_POINT_GROUP", "Backend", "BackendFactory", "DriverBackend", "Stores", "open_stores"]

ENTRY_POINT_GROUP = "agent_stores.backends"
#: The environment variable naming (or holding) the keyring that seals every store opened.
KEYRING_ENV = "AGENT_STORES_KEYRING"

# Schemes of the backends this project ships, and the extra that installs each.
_EXTRAS = {
    "sqlite": "sqlite",
    "redis": "redis",
    "rediss": "redis",
    "valkey": "redis",
    "valkeys": "redis",
    "redis+cluster": "redis",
    "mongodb": "mongodb",
    "mongodb+srv": "mongodb",
    "s3": "s3",
    "fsspec": "fsspec",
    "file": "fsspec",
}


@runtime_checkable
class Backend(Protocol):
    """The stores of one backend, sharing one connection or client.

    Each method takes the store's own options, and ``tenant=`` when a tenant view asks: the
    store must then keep everything under ``tenants/<tenant>/`` of the layout
    (:mod:`agent_stores.core.keys`; the core's stores do, given ``tenant``). A backend that
    cannot refuses the option with ``TypeError`` or ``ValueError``.
    """

    def history_provider(self, *, source_id: str, **options: Any) -> HistoryProvider:
        """Return a history provider; ``options`` are the provider's own (``max_messages``, ``ttl``, ...)."""
        ...

    def file_store(self, **options: Any) -> AgentFileStore:
        """Return a file store."""
        ...

    def session_store(self, **options: Any) -> SessionStore:
        """Return a session store."""
        ...

    async def aclose(self) -> None:
        """Close what the backend opened."""
        ...


@runtime_checkable
class DriverBackend(Protocol):
    """A backend that hands out its shared drivers, for stores built generically in core."""

    def object_driver(self) -> ObjectDriver:
        """The object driver on the backend's shared connection."""
        ...

    def log_driver(self) -> LogDriver:
        """The log driver on the backend's shared connection."""
        ...


class BackendFactory(Protocol):
    """What a backend registers under ``agent_stores.backends``."""

    def __call__(self, url: str, **options: Any) -> Backend:
        """Return the backend for ``url`` without doing I/O.

        Raises:
            ValueError: The URL is malformed for this backend or an option is unknown.
        """
        ...


class Stores(OwnedResource):
    """Every store of one backend: history, files, sessions, todos, checkpoints.

    Use as ``async with open_stores(url) as stores:`` or call ``aclose()`` when done: it closes
    the backend's connections, and the stores handed out stop working. Every method that hands
    out a store takes ``tenant=`` (what :meth:`tenant`'s view passes): the store then keeps
    everything under ``tenants/<tenant>/`` (see :mod:`agent_stores.core.keys`).

    Before the first operation of any store it hands out, an open checks once that the store
    is not sealed (see ``docs/encryption.md``): opened without a key, a sealed store raises
    :class:`~agent_stores.core.sealmark.SealedStoreError` instead of being read or written.
    """

    def __init__(self, url: str, backend: Backend) -> None:
        self.url = url
        self.backend = backend
        self._adopt(backend, owned=True)
        #: What this open verifies once, before the first operation of every store it hands out.
        self.open_check = OpenCheck(self._check_open)

    async def _check_open(self) -> None:
        """An open without a key refuses a store marked as sealed (one read; none without drivers)."""
        hands_out = getattr(self.backend, "object_driver", None)
        if callable(hands_out):  # a backend without the method (or with a driver attribute) is not checked
            await refuse_if_sealed(cast(ObjectDriver, hands_out()), redact_url(self.url))

    def object_driver(self) -> ObjectDriver:
        """The backend's shared object driver, to build a store the core offers over any driver.

        Raises:
            TypeError: The backend does not hand out its drivers (see :class:`DriverBackend`).
        """
        return self._drivers().object_driver()

    def log_driver(self) -> LogDriver:
        """The backend's shared log driver (see :meth:`object_driver`)."""
        return self._drivers().log_driver()

    @property
    def offers_drivers(self) -> bool:
        """Whether the backend hands out its drivers (todos, checkpoints and listings need them)."""
        return isinstance(self.backend, DriverBackend)

    def _drivers(self) -> DriverBackend:
        if not isinstance(self.backend, DriverBackend):
            raise TypeError(f"the backend for {redact_url(self.url)!r} does not offer object_driver() and log_driver()")
        return self.backend

    def history_provider(
        self, source_id: str = "history", *, tenant: str | None = None, **options: Any
    ) -> HistoryProvider:
        """Return a history provider for ``source_id``; ``options`` as the backend's provider takes them."""
        return self.open_check.attach(self.backend.history_provider(source_id=source_id, **_scoped(options, tenant)))

    def file_store(self, *, tenant: str | None = None, **options: Any) -> AgentFileStore:
        """Return the backend's ``AgentFileStore``."""
        return self.open_check.attach(self.backend.file_store(**_scoped(options, tenant)))

    def session_store(self, *, tenant: str | None = None, **options: Any) -> SessionStore:
        """Return the backend's ``SessionStore``."""
        return self.open_check.attach(self.backend.session_store(**_scoped(options, tenant)))

    def checkpoint_storage(self, *, tenant: str | None = None, **options: Any) -> ObjectCheckpointStorage:
        """Return workflow checkpoint storage over the backend's object driver.

        ``options`` as :class:`~agent_stores.core.checkpoints.ObjectCheckpointStorage` takes
        them (``namespace``, ``keep_last``, ``ttl``, ``allowed_checkpoint_types``, ``prefix``).

        Raises:
            TypeError: The backend does not hand out its drivers (see :class:`DriverBackend`).
        """
        clock = getattr(self.backend, "clock", None)
        if clock is not None:
            options.setdefault("clock", clock)
        return self.open_check.attach(ObjectCheckpointStorage(self.object_driver(), tenant=tenant, **options))

    def todo_store(self, *, tenant: str | None = None, **options: Any) -> ObjectTodoStore:
        """Return the harness ``TodoStore`` over the backend's object driver (``namespace``, ``prefix``).

        Raises:
            TypeError: The backend does not hand out its drivers (see :class:`DriverBackend`).
        """
        return self.open_check.attach(ObjectTodoStore(self.object_driver(), tenant=tenant, **options))

    def harness_kwargs(
        self,
        *,
        file_access: bool = False,
        service_history: bool = False,
        default_options: Mapping[str, Any] | None = None,
        compaction: CompactionStrategy | None = None,
        retain: bool = False,
        **history_options: Any,
    ) -> dict[str, Any]:
        """Return keyword arguments for ``create_harness_agent`` that keep the agent's state in these stores.

        ``history_provider`` (``history_options`` as :meth:`history_provider` takes them),
        ``file_memory_store`` (the file store), ``file_access_store`` (the same file store, when
        ``file_access``), ``todo_provider`` (the harness's todo list, kept per session, when the
        backend offers its drivers) and ``default_options`` with ``store=False``: the
        conversation the model sees is loaded from our history provider on every model call,
        never from a copy the model service keeps (a Responses API client would otherwise send
        ``previous_response_id`` and skip our history). Pass your own chat options as
        ``default_options``; they are merged.

        With ``service_history=True`` no ``store`` option is set: a client that stores history
        at the service (the Responses API's default) then continues from the service's copy,
        and our provider only records the conversation (the framework skips loading it).

        With ``compaction`` (a framework strategy such as ``ContextWindowCompactionStrategy`` or
        ``SummarizationStrategy``), the harness compacts with it before each model call and
        what it decides is stored in the history after each turn (see ``docs/compaction.md``);
        with ``retain=True`` the messages it excluded are then dropped from the store too.

        Raises:
            ValueError: ``default_options`` sets ``store`` to something else than ``service_history`` implies.
        """
        tenant = history_options.pop("tenant", None)
        return harness_kwargs(
            self.history_provider(tenant=tenant, **history_options),
            self.file_store(tenant=tenant),
            todos=self.todo_store(tenant=tenant) if self.offers_drivers else None,
            file_access=file_access,
            service_history=service_history,
            default_options=default_options,
            compaction=compaction,
            retain=retain,
        )

    def tenant(self, tenant: str) -> TenantStores:
        """Return the view of these stores bound to one authenticated tenant (see :class:`TenantStores`).

        Raises:
            ValueError: ``tenant`` is not a non-empty string.
        """
        return TenantStores(self, tenant)

    async def list_tenants(self, *, after: str | None = None, limit: int = 100) -> list[Segment]:
        """Return up to ``limit`` tenants holding data, in key order, each after the segment ``after``.

        Each entry is the tenant's key segment and its id (``None`` for an id so long that its
        segment is a digest). Page with ``after=<segment of the last entry>``.

        Raises:
            TypeError: The backend does not hand out its drivers (see :class:`DriverBackend`).
            ValueError: ``limit`` is not positive.
        """
        objects, logs = self.object_driver(), self.log_driver()

        async def from_objects(after: str | None, limit: int) -> list[str]:
            return await object_segments(objects, TENANTS + "/", after=after, limit=limit)

        async def from_logs(after: str | None, limit: int) -> list[str]:
            return await log_segments(logs, TENANTS + "/", after=after, limit=limit)

        return await segments([from_objects, from_logs], after=after, limit=limit)

    def iter_tenants(self, *, page_size: int = 100) -> AsyncIterator[Segment]:
        """Yield every tenant holding data (see :meth:`list_tenants`)."""
        return iter_pages(lambda after, limit: self.list_tenants(after=after, limit=limit), size=page_size)

    async def list_namespaces(
        self, kind: str, *, tenant_segment: str | None = None, after: str | None = None, limit: int = 100
    ) -> list[Segment]:
        """Return up to ``limit`` namespaces of ``kind`` holding data, outside every tenant or in one.

        ``kind`` is ``history``, ``todos`` or ``checkpoints`` (the kinds that take a
        ``namespace``); ``tenant_segment`` a segment :meth:`list_tenants` returned. History
        namespaces outside tenants never include the reserved ``tenants``.

        Raises:
            TypeError: The backend does not hand out its drivers.
            ValueError: ``kind`` is not one of those, or ``limit`` is not positive.
        """
        root = "" if tenant_segment is None else f"{TENANTS}/{tenant_segment}/"
        if kind == "history":
            logs = within(self.log_driver(), root)

            async def from_logs(after: str | None, limit: int) -> list[str]:
                return await log_segments(logs, "", after=after, limit=limit)

            exclude: frozenset[str] = frozenset({TENANTS}) if tenant_segment is None else frozenset()
            return await segments([from_logs], after=after, limit=limit, exclude=exclude)
        if kind not in ("todos", "checkpoints"):
            raise ValueError(f"kind must be 'history', 'todos' or 'checkpoints', got {kind!r}")
        objects = self.object_driver()

        async def from_objects(after: str | None, limit: int) -> list[str]:
            return await object_segments(objects, f"{root}{kind}/", after=after, limit=limit)

        return await segments([from_objects], after=after, limit=limit)

    async def list_source_ids(
        self, namespace: str = "", *, tenant_segment: str | None = None, after: str | None = None, limit: int = 100
    ) -> list[Segment]:
        """Return up to ``limit`` history source ids holding sessions in ``namespace`` (see :meth:`list_namespaces`).

        Raises:
            TypeError: The backend does not hand out its drivers.
            ValueError: ``limit`` is not positive.
        """
        root = "" if tenant_segment is None else f"{TENANTS}/{tenant_segment}/"
        logs = within(self.log_driver(), root)
        prefix = KeySpace(namespace).namespace_segment + "/"

        async def from_logs(after: str | None, limit: int) -> list[str]:
            # a retention's staging logs sit beside the source's (see ``retain``): not a source id
            return await log_segments(logs, prefix, after=after, limit=limit, hidden=is_staging_segment)

        return await segments([from_logs], after=after, limit=limit)

    def __repr__(self) -> str:
        return f"Stores({redact_url(self.url)!r})"


def _scoped(options: dict[str, Any], tenant: str | None) -> dict[str, Any]:
    """``options`` with ``tenant`` when one is given (a backend without tenant views never sees the option)."""
    return options if tenant is None else {**options, "tenant": tenant}


def _scheme(url: str) -> str:
    if not isinstance(url, str) or "://" not in url:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"not a store URL (expected scheme://...): {redact_url(url)!r}")
    return url.split("://", 1)[0].lower()


def resolve_encryption(encryption: object, keyring_option: str | None, **named: Any) -> Any:
    """What :func:`open_stores` seals with (see :func:`agent_stores.core.sealing.resolve_encryption`)."""
    # a sealed store's settings: refused below without a key
    tuned = any(named.get(name) is not None for name in SEALING_SETTINGS)
    unnamed = keyring_option is None and not named.get("kms_key_id") and not named.get(ADOPT_PLAINTEXT) and not tuned
    if encryption is False and not named.get(ADOPT_PLAINTEXT) and not tuned:
        return None
    if encryption is None and unnamed and not os.environ.get(KEYRING_ENV) and not os.environ.get(KMS_KEY_ENV):
        return None  # the common case never imports the sealing layer
    from .sealing import resolve_encryption as resolve  # sealing builds on this module

    return resolve(encryption, keyring_option, **named)


def open_stores(url: str, **options: Any) -> Stores:
    """Open the stores a URL names, through the backend registered for its scheme.

    ``sqlite:///relative.db``, ``sqlite:////absolute.db``, ``sqlite://`` (in-memory),
    ``memory://`` (the core's in-process driver) and the schemes of any installed backend.
    A compound scheme ``family+variant://`` (``fsspec+sftp``, ``redis+cluster``) goes to the
    backend registered for the exact scheme, else to the one registered for ``family``.
    No connection is made until a store is first used.

    ``options`` go to the backend. ``must_exist=True`` (every backend of this project takes
    it) opens only a store that exists and creates nothing, to read what it holds: a SQLite
    file is opened without being created (and must hold agent-stores tables), a folder
    (``file://``, ``fsspec+…://``) and a bucket must exist, a MongoDB database must hold the
    stores' collections; reads never create anything on Redis. A missing store is a
    ``StoreNotFoundError`` on first use. Writes to a store that exists work as usual.

    ``encryption`` (a :class:`~agent_stores.core.sealing.Keyring` or other key provider, or an
    :class:`~agent_stores.core.sealing.Encryption`) seals everything the stores write, per
    tenant (see ``docs/encryption.md``); without it, the URL option ``keyring=<file>``, the
    option or URL option ``kms_key_id=<AWS KMS key id, ARN or alias>``, or the environment
    variable ``AGENT_STORES_KEYRING`` or ``AGENT_STORES_KMS_KEY_ID`` does;
    ``encryption=False`` opens unsealed. A sealed store opened without its key raises
    :class:`~agent_stores.core.sealmark.SealedStoreError` on the first operation; a sealed open
    of a store holding plaintext raises :class:`~agent_stores.core.sealmark.PlaintextStoreError`
    unless the option or URL option ``adopt_plaintext`` is true (seal from now on). The fields
    of :class:`~agent_stores.core.sealing.Encryption` but its provider are options and URL
    options too, read strictly, and need a key: ``opened_bytes`` (a whole number of bytes:
    what a sealed store's history remembers having decrypted; 8 MiB by default, ``0`` nothing),
    ``plaintext_reads`` (a boolean), ``max_scopes`` (a whole positive number) and
    ``key_refresh`` (seconds, ``0`` included). An option given in code wins over the URL's.

    Raises:
        ValueError: ``url`` has no scheme or no installed backend serves it (the message names
            the extra to install), the backend refuses an option (``must_exist`` included), or a
            sealing option is malformed or given without a key.
    """
    scheme = _scheme(url)
    found = {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}
    family = scheme.split("+", 1)[0]
    entry = found.get(scheme) or found.get(family)
    if entry is None:
        extra = _EXTRAS.get(scheme) or _EXTRAS.get(family)
        if extra is not None:
            raise ValueError(f'the {scheme!r} backend is not installed: pip install "agent-stores[{extra}]"')
        raise ValueError(
            f"no agent-stores backend for scheme {scheme!r}; installed: {', '.join(sorted(found)) or 'none'}"
        )
    factory: BackendFactory = entry.load()
    encryption = options.pop("encryption", None)
    url, keyring_option = take_query_option(url, "keyring")
    url, named = take_sealing_options(url, options)
    sealing = resolve_encryption(encryption, keyring_option, **named)
    if sealing is None:
        return Stores(url, factory(url, **options))
    from .sealing import SealedStores  # sealing builds on this module

    return SealedStores(url, factory(url, **options), sealing)
