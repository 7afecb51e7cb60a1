"""Borrow or own, written once: handles, connectors, ``from_url`` and option routing.

Every store runs on a *handle*: its backend's wrapper around one client or connection
(``SQLiteDatabase``, ``RedisConnection``, ``MongoDBDatabase``, ``S3Bucket``, an fsspec driver).
A backend declares a :class:`Connector` that opens an owned handle from a URL and wraps a
client the user configured; its stores subclass :class:`ConnectedStore` and its
``open_stores`` backend subclasses :class:`ConnectedBackend`. The rules then hold everywhere:

- ``Store(client, ...)`` borrows ``client``: it is never closed. A handle made around it is
  closed by the store's ``aclose()`` (that releases only the handle's own resources, such as
  worker threads); a handle passed in is shared and left open.
- ``Store.from_url(url, **options)`` owns a new handle, closed by ``aclose()`` / ``async with``;
  one collected unclosed warns with a ``ResourceWarning``.
- ``options`` are routed by name: the connector's declared options go to the handle, the
  store constructor's keyword arguments (and those of the framework base it forwards
  ``**kwargs`` to) go to the store, and anything else goes to the connector only when it
  accepts open-ended client options (a Redis client's keywords, an fsspec storage option);
  otherwise it is a ``ValueError`` naming what is accepted.
- A store option its class lists in :attr:`ConnectedStore.url_options` (``cache_bytes`` and
  ``cache_idle`` on every store) is also read from the URL's query, strictly, before the backend's own parser
  sees the URL; ``open_stores`` takes the same options, from the query or as keywords, and
  gives them to each store that takes them.

A third-party backend uses the same pieces (see ``docs/write-your-own-backend.md``).
"""

from __future__ import annotations

import inspect
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from types import TracebackType
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar, cast
from urllib.parse import parse_qsl, quote, urlencode, urlsplit

from .codec import DecodeCache, validate_cache_bytes, validate_cache_idle
from .drivers import LogDriver, ObjectDriver
from .redaction import redact_url

__all__ = [
    "CACHE_BYTES",
    "CACHE_IDLE",
    "MUST_EXIST",
    "ConnectedBackend",
    "ConnectedStore",
    "Connector",
    "Handle",
    "OwnedResource",
    "adapter_capabilities",
    "merge_capabilities",
    "route_options",
    "share_decode_cache",
    "store_options",
    "take_decode_cache",
    "take_query_option",
    "take_url_options",
]

#: The option every store URL and every backend takes: the bytes each of its caches may hold.
CACHE_BYTES = "cache_bytes"
#: The option every store URL and every backend takes: the seconds its decode cache keeps what no load uses.
CACHE_IDLE = "cache_idle"

#: The option that opens only a store that exists and creates nothing (no file, folder, bucket,
#: table or collection), for reading what a store holds. A missing store is a
#: :class:`~agent_stores.core.errors.StoreNotFoundError` on first use. A backend that can keep
#: that promise lists it in its connector's :attr:`Connector.options`; any other refuses it.
MUST_EXIST = "must_exist"


def take_decode_cache(url: str, options: dict[str, Any]) -> tuple[str, DecodeCache]:
    """Take ``cache_bytes`` and ``cache_idle`` out of ``url``'s query and ``options``: the URL left, and their cache.

    A keyword wins over the query. What every backend does first: the decode cache its history
    providers share.

    Raises:
        ValueError: Either is given twice in the query, or its value is refused (naming it).
    """
    url, bytes_from_url = take_query_option(url, CACHE_BYTES)
    url, idle_from_url = take_query_option(url, CACHE_IDLE)
    cache_bytes = validate_cache_bytes(options.pop(CACHE_BYTES, bytes_from_url))
    return url, DecodeCache(cache_bytes, max_idle=validate_cache_idle(options.pop(CACHE_IDLE, idle_from_url)))


def share_decode_cache(options: dict[str, Any], shared: DecodeCache | None) -> None:
    """Give a history provider's ``options`` the backend's ``shared`` cache, unless they size a cache of its own."""
    if shared is not None and CACHE_BYTES not in options and CACHE_IDLE not in options:
        options.setdefault("decode_cache", shared)


def take_query_option(url: str, name: str) -> tuple[str, str | None]:
    """Return ``url`` without the query parameter ``name``, and its value (``None`` when absent).

    For options the core reads for every backend (``cache_bytes``, ``cache_idle``) before the backend's own URL
    parser sees the URL. A URL without the parameter is returned unchanged.

    Raises:
        ValueError: ``name`` is given more than once.
    """
    base, mark, query = url.partition("?")
    if not mark or name not in query:
        return url, None
    fragment = ""
    if "#" in query:
        query, fragment = query.split("#", 1)
        fragment = "#" + fragment
    pairs = parse_qsl(query, keep_blank_values=True)
    values = [v for k, v in pairs if k == name]
    if not values:
        return url, None
    if len(values) > 1:
        raise ValueError(f"the URL gives {name} more than once")
    rest = urlencode([(k, v) for k, v in pairs if k != name], quote_via=quote, safe="/:,")
    return base + ("?" + rest if rest else "") + fragment, values[0]


def take_url_options(url: str, readers: Mapping[str, Callable[[Any], Any]]) -> tuple[str, dict[str, Any]]:
    """Return ``url`` without the query parameters ``readers`` names, and their values as each reader reads them.

    Raises:
        ValueError: A parameter is given more than once, or its reader refuses its value.
    """
    given: dict[str, Any] = {}
    for name, read in readers.items():
        url, text = take_query_option(url, name)
        if text is not None:
            given[name] = read(text)
    return url, given


class Handle(Protocol):
    """What a store runs on: anything with ``aclose()`` that releases only what it created."""

    async def aclose(self) -> None:
        """Release what the handle created (never a client it was given)."""
        ...


HandleT = TypeVar("HandleT", bound=Handle)


class OwnedResource:
    """``aclose()`` and ``async with`` for a store: closes what it made or owns, never what it borrowed.

    A store records each resource with :meth:`_adopt`. ``owned`` resources came from a URL:
    they are closed, and one collected unclosed emits a ``ResourceWarning``. ``close`` alone
    marks a resource the store made around something borrowed (a handle around your client):
    it is closed too, silently.
    """

    _closing: list[Handle]
    _owns_resource: bool = False
    _closed: bool = False

    def _adopt(self, resource: Handle, *, owned: bool, close: bool | None = None) -> None:
        if not (owned or close):
            return
        closing = self.__dict__.setdefault("_closing", [])
        if not any(r is resource for r in closing):
            closing.append(resource)
        if owned:
            self._owns_resource = True

    async def aclose(self) -> None:
        """Close what this store made or owns. Idempotent; a borrowed client stays open."""
        if self._closed:
            return
        self._closed = True
        for resource in reversed(self.__dict__.get("_closing", [])):
            await resource.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __del__(self, _warn: Any = warnings.warn) -> None:
        if getattr(self, "_owns_resource", False) and not getattr(self, "_closed", True):
            _warn(f"{type(self).__name__} was not closed; call aclose() or use 'async with'", ResourceWarning, 1)


class Connector(ABC, Generic[HandleT]):
    """How a backend reaches its server: an owned handle from a URL, or one around your client.

    Attributes:
        handle_type: The handle class; an instance passed to a store is shared as is.
        options: Names of the handle's own options (URL query spellings and keywords).
            :data:`MUST_EXIST` among them promises that ``open(url, must_exist=True)`` gives a
            handle that creates nothing and raises ``StoreNotFoundError`` when the store is missing.
        open_ended: The handle also takes options it cannot list (a client library's
            keywords, a filesystem's storage options): names no store takes go to it
            (never :data:`MUST_EXIST`, which the connector must declare).
        name: How errors name the backend.
    """

    handle_type: ClassVar[type[Any]]
    options: ClassVar[frozenset[str]] = frozenset()
    open_ended: ClassVar[bool] = False
    name: ClassVar[str] = "backend"

    @abstractmethod
    def open(self, url: str, **options: Any) -> HandleT:
        """Return a handle owning a new client for ``url``, without I/O.

        Raises:
            ValueError: The URL is malformed or an option is invalid.
        """

    @abstractmethod
    def borrow(self, client: Any, **options: Any) -> HandleT:
        """Return a handle around ``client``, which the caller keeps and closes.

        Raises:
            TypeError: ``client`` is not something this backend runs on.
            ValueError: An option is invalid.
        """

    def handle(self, client: Any, **options: Any) -> tuple[HandleT, bool]:
        """Return ``(handle, made)`` for what a store constructor was given.

        A handle is shared as is (``made`` is false, and ``options`` must be empty: they belong
        to the handle); anything else goes through :meth:`borrow` (``made`` is true).

        Raises:
            TypeError: ``client`` is not something this backend runs on.
            ValueError: Options given with a ready handle, or an invalid option.
        """
        if isinstance(client, self.handle_type):
            given = sorted(k for k, v in options.items() if v is not None)
            if given:
                raise ValueError(f"{given} belong to the {self.handle_type.__name__}; set them where it is made")
            return client, False
        return self.borrow(client, **{k: v for k, v in options.items() if v is not None}), True


def store_options(store_type: type) -> frozenset[str]:
    """Return the keyword arguments ``store_type``'s constructor takes, following ``**kwargs`` up its bases.

    The first positional parameter (the client or driver) and ``owns_driver`` are not options.
    """
    names: set[str] = set()
    for klass in store_type.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        parameters = list(inspect.signature(init).parameters.values())[1:]  # without self
        forwards = False
        positional_seen = False
        for parameter in parameters:
            if parameter.kind is parameter.VAR_KEYWORD:
                forwards = True
            elif parameter.kind is parameter.VAR_POSITIONAL:
                continue
            elif parameter.kind is parameter.POSITIONAL_OR_KEYWORD and not positional_seen:
                positional_seen = True  # what the store runs on, except the framework's source_id
                if parameter.name == "source_id":
                    names.add(parameter.name)
            else:
                names.add(parameter.name)
        if not forwards:
            break
    names.discard("owns_driver")
    return frozenset(names)


def route_options(
    store_type: type, connector: Connector[Any], options: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split ``options`` into ``(store options, handle options)`` by name (see the module docstring).

    Raises:
        ValueError: An option neither the store nor the handle takes.
    """
    takes = store_options(store_type)
    store: dict[str, Any] = {}
    handle: dict[str, Any] = {}
    unknown: list[str] = []
    for name, value in options.items():
        if name in connector.options:
            handle[name] = value
        elif name in takes:
            store[name] = value
        elif name == MUST_EXIST:
            _refuse_must_exist(connector, value)
        elif connector.open_ended:
            handle[name] = value
        else:
            unknown.append(name)
    if unknown:
        raise ValueError(
            f"unknown options {sorted(unknown)} for {store_type.__name__}: it takes {_names(takes)}, "
            f"and the {connector.name} connection takes {_names(connector.options)}"
        )
    return store, handle


def _refuse_must_exist(connector: Connector[Any], value: Any) -> None:
    """Refuse ``must_exist=True`` for a connector that does not declare it (it cannot keep the promise)."""
    if value:
        raise ValueError(
            f"the {connector.name} backend cannot open a store without creating it "
            f"({MUST_EXIST!r} is not among its connector's options)"
        )


def _names(names: Iterable[str]) -> str:
    return ", ".join(sorted(names)) or "none"


class ConnectedStore(OwnedResource, Generic[HandleT]):
    """A store over a backend handle: ``from_url`` once for every store of every backend.

    Subclasses set :attr:`connector` and call :meth:`_connect` first in their constructor,
    whose first parameter is the client (or handle) and whose keyword arguments are the
    store's options.
    """

    connector: ClassVar[Connector[Any]]
    handle: HandleT
    #: The store options a URL's query may give, each with what reads its value strictly (the
    #: text of the query, or a keyword's value) and raises ``ValueError`` naming it. Every store
    #: of one backend lists the same names, so one URL opens each of them: a store ignores an
    #: option it does not take (a file store, ``cache_bytes``) once the value is found valid.
    url_options: ClassVar[Mapping[str, Callable[[Any], Any]]] = {
        CACHE_BYTES: validate_cache_bytes,
        CACHE_IDLE: validate_cache_idle,
    }

    def _connect(self, client: Any, **handle_options: Any) -> HandleT:
        """Adopt ``client``: a handle is shared; anything else is wrapped in a handle this store closes."""
        handle, made = self.connector.handle(client, **handle_options)
        self.handle = handle
        self._adopt(handle, owned=False, close=made)
        return handle

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Self:
        """Open a store that owns a new connection to ``url``; nothing connects until first use.

        ``options`` are the store's keyword arguments and the connection's options, routed
        by name (see :mod:`agent_stores.core.lifecycle`). ``aclose()`` (or ``async with``)
        closes the connection.

        Raises:
            ValueError: The URL is malformed, or an option is unknown or invalid.
        """
        url, given = take_url_options(url, cls.url_options)
        store, handle = route_options(cls, cls.connector, options)
        takes = store_options(cls)
        for name, value in given.items():
            if name in takes:  # a store that does not take it (a file store, cache_bytes) ignores it
                store.setdefault(name, value)
        return cls.owning(cls.connector.open(url, **handle), **store)

    @classmethod
    def owning(cls, handle: HandleT, **options: Any) -> Self:
        """Build a store on ``handle`` that owns it: ``aclose()`` closes it."""
        try:
            store: Self = cls(handle, **options)  # pyright: ignore[reportCallIssue]
        except TypeError as err:
            raise ValueError(f"invalid options for {cls.__name__}: {err}") from err
        store._adopt(handle, owned=True)
        return store


def adapter_capabilities() -> dict[str, dict[str, Any]]:
    """What the stores the core builds over a backend's drivers declare, per conformance suite.

    Every optional capability of each suite, on drivers that pass ``LogDriverConformance`` and
    ``ObjectDriverConformance`` with every capability but ``native_expiry`` (and that run in
    a server, so several processes share them). A backend declares only where it differs
    (:attr:`ConnectedBackend.capabilities`). A fresh dict each call: suite name to capability
    fields, as the suites' capabilities classes take them.
    """
    return {
        "history": {
            "windowed_load": True,
            "skip_excluded": True,
            "concurrent_instances": True,
            "multi_process": True,
            "admin": True,
            "ttl": True,
            "corruptible": True,
            "stored_compaction": True,
        },
        "files": {
            "case_sensitive": True,
            "empty_directories": True,
            "atomic_create_across_instances": True,
            "rejects_file_directory_conflicts": False,
            "long_names": True,
        },
        "sessions": {"durable": True, "corruptible": True, "versioned": True},
        "checkpoints": {
            "durable": True,
            "ordered_listing": True,
            "lineage_ties": True,
            "keep_last": True,
            "ttl": True,
            "namespaces": True,
            "corruptible": True,
        },
        "todos": {"durable": True, "namespaces": True, "corruptible": True},
        "log_driver": {"ttl": True, "native_expiry": False, "concurrent_instances": True, "conditional_delete": True},
        "object_driver": {"atomic_create_across_instances": True, "atomic_if_version_across_instances": True},
    }


def merge_capabilities(
    base: dict[str, dict[str, Any]], changes: Mapping[str, Mapping[str, Any]]
) -> dict[str, dict[str, Any]]:
    """``base`` with the fields of ``changes`` set, suite by suite (a new dict)."""
    merged = {suite: dict(fields) for suite, fields in base.items()}
    for suite, fields in changes.items():
        merged.setdefault(suite, {}).update(fields)
    return merged


class ConnectedBackend(Generic[HandleT]):
    """An ``open_stores`` backend declared by its connector and store classes, on one owned handle.

    Subclasses set the class attributes (or override :meth:`object_driver` / :meth:`log_driver`
    where a driver needs more than the handle); every store they hand out shares
    :attr:`handle`, which :meth:`aclose` closes, and every history provider shares one
    :class:`~agent_stores.core.codec.DecodeCache` of ``cache_bytes`` and ``cache_idle``
    (options of every backend and URL; by default a 32nd of the memory the process may use,
    16 to 256 MiB, and 300 s; ``cache_bytes=0`` keeps nothing).

    Attributes:
        connector: Opens the handle from the URL.
        history_type, file_store_type, session_store_type: The store classes, each built as
            ``store_type(handle, **options)``.
        object_driver_type, log_driver_type: The driver classes, each built as ``driver_type(handle)``.
    """

    connector: ClassVar[Connector[Any]]
    history_type: ClassVar[Callable[..., Any]]
    file_store_type: ClassVar[Callable[..., Any]]
    session_store_type: ClassVar[Callable[..., Any]]
    object_driver_type: ClassVar[Callable[[Any], ObjectDriver]]
    log_driver_type: ClassVar[Callable[[Any], LogDriver]]
    #: Where this backend's stores and drivers differ from :func:`adapter_capabilities`: suite
    #: name to the capability fields that differ. The one declaration its tests, ``agent-stores
    #: check`` and the docs read (see :meth:`declared_capabilities`).
    capabilities: ClassVar[Mapping[str, Mapping[str, Any]]] = {}

    def __init__(self, url: str, **options: Any) -> None:
        url, decode_cache = take_decode_cache(url, options)
        clock: Any = options.pop("clock", None)
        if clock is not None and not callable(clock):
            raise TypeError(f"clock is a callable returning seconds since the epoch, got {clock!r}")
        #: Seconds since the epoch for every expiry this backend's stores and drivers decide
        #: (``None``: the real clock); what ``agent-stores check`` and tests pass to move time.
        self.clock = cast("Callable[[], float] | None", clock)
        readers = self.store_url_options()
        url, given = take_url_options(url, readers)
        for name in [n for n in options if n in readers]:  # a keyword wins over the URL's query
            given[name] = readers[name](options.pop(name))
        #: The store options this backend's URL or keywords gave (:attr:`ConnectedStore.url_options`),
        #: read: each store handed out that takes one gets it unless the call names its own.
        self.store_defaults: dict[str, Any] = given
        if MUST_EXIST not in self.connector.options:
            _refuse_must_exist(self.connector, options.pop(MUST_EXIST, False))
        unknown = sorted(n for n in options if n not in self.connector.options and not self.connector.open_ended)
        if unknown:
            raise ValueError(
                f"unknown {self.connector.name} backend options {unknown}; "
                f"known: {_names({*self.connector.options, CACHE_BYTES, CACHE_IDLE, *readers})}"
            )
        self.url = url
        self.decode_cache = decode_cache
        self.handle: HandleT = self.connector.open(url, **options)

    @classmethod
    def store_url_options(cls) -> dict[str, Callable[[Any], Any]]:
        """The store options (but ``cache_bytes``, ``cache_idle``: the backend's shared cache) its URL may give.

        Those its store classes list in :attr:`ConnectedStore.url_options`, each with its reader.
        """
        readers: dict[str, Callable[[Any], Any]] = {}
        for store_type in (cls.history_type, cls.file_store_type, cls.session_store_type):
            readers.update(getattr(store_type, "url_options", {}))
        readers.pop(CACHE_BYTES, None)
        readers.pop(CACHE_IDLE, None)
        return readers

    def scoped(self, kind: str, tenant: str | None) -> tuple[Any, dict[str, Any]]:
        """What the ``kind`` store (``history``, ``files``, ``sessions``) of ``tenant`` is built on.

        Returns the handle and the options that place the store: by default the shared handle
        and ``tenant=`` (the core's stores keep everything under the tenant's root). A backend
        whose stores are rooted in a folder of their kind overrides this to root them in the
        tenant's folder instead.
        """
        del kind
        return self.handle, ({} if tenant is None else {"tenant": tenant})

    def history_provider(self, *, source_id: str, tenant: str | None = None, **options: Any) -> Any:
        """Return a history provider on the shared handle; ``options`` as its class takes them."""
        takes = store_options(self.history_type) if isinstance(self.history_type, type) else frozenset[str]()
        if "decode_cache" in takes:
            share_decode_cache(options, self.decode_cache)
        if "clock" in takes and self.clock is not None:
            options.setdefault("clock", self.clock)
        return self._build("history provider", self.history_type, "history", tenant, source_id=source_id, **options)

    def file_store(self, *, tenant: str | None = None, **options: Any) -> Any:
        """Return a file store on the shared handle."""
        return self._build("file store", self.file_store_type, "files", tenant, **options)

    def session_store(self, *, tenant: str | None = None, **options: Any) -> Any:
        """Return a session store on the shared handle."""
        return self._build("session store", self.session_store_type, "sessions", tenant, **options)

    def _build(self, what: str, store_type: Callable[..., Any], kind: str, tenant: str | None, **options: Any) -> Any:
        takes = store_options(store_type) if isinstance(store_type, type) else None
        if takes is not None:
            unknown = sorted(set(options) - takes)
            if unknown:
                raise ValueError(f"unknown {what} options {unknown}; it takes {_names(takes)}")
            for name, value in self.store_defaults.items():
                if name in takes:
                    options.setdefault(name, value)
        handle, placement = self.scoped(kind, tenant)
        return store_type(handle, **placement, **options)

    @property
    def follows_clock(self) -> bool:
        """Whether every expiry of these stores follows :attr:`clock` (a server that expires by its own does not)."""
        history = self.history_type
        return isinstance(history, type) and "clock" in store_options(history)

    def object_driver(self) -> ObjectDriver:
        """An object driver on the shared handle, for stores the core builds over any backend."""
        return type(self).object_driver_type(self.handle)

    def log_driver(self) -> LogDriver:
        """A log driver on the shared handle, for stores the core builds over any backend (on :attr:`clock`)."""
        driver_type = type(self).log_driver_type
        if self.clock is not None and "clock" in inspect.signature(driver_type).parameters:
            return cast(Any, driver_type)(self.handle, clock=self.clock)
        return driver_type(self.handle)

    @classmethod
    def declared_capabilities(cls) -> dict[str, dict[str, Any]]:
        """What this backend's stores and drivers declare, per conformance suite: :attr:`capabilities` over the core's.

        Plain data (no test imports): suite name (``history``, ``files``, ``sessions``,
        ``checkpoints``, ``todos``, ``log_driver``, ``object_driver``) to the fields of that
        suite's capabilities class. A fresh dict each call.
        """
        return merge_capabilities(adapter_capabilities(), cls.capabilities)

    def conformance_capabilities(self) -> dict[str, dict[str, Any]]:
        """What ``agent-stores check`` declares for the stores of this URL: :meth:`declared_capabilities`.

        A backend whose guarantees depend on the URL (an in-process database, a filesystem's
        own) adjusts them here.
        """
        return self.declared_capabilities()

    async def aclose(self) -> None:
        """Close the shared handle; the stores handed out stop working."""
        await self.handle.aclose()

    def location(self) -> str:
        """Where this backend's data lives, spelled one way: two URLs naming the same data give the same location.

        What ``agent-stores migrate`` compares to refuse copying a store into itself. The
        default is the URL without credentials, with its scheme and host in lower case, no
        ``/`` at the end of its path and its query parameters sorted; a backend whose URLs
        spell one place in more ways (relative paths, symbolic links) overrides it.
        """
        parts = urlsplit(self.url)
        host = parts.netloc.rpartition("@")[2].lower()
        query = urlencode(sorted(parse_qsl(parts.query, keep_blank_values=True)))
        path = parts.path.rstrip("/")
        return redact_url(f"{parts.scheme.lower()}://{host}{path}" + (f"?{query}" if query else ""))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({redact_url(self.url)!r})"
