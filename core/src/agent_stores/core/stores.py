"""``open_stores(url)``: every store of one backend from one URL.

Backends register a factory under the entry-point group ``agent_stores.backends``, one entry
per URL scheme, so installed backends (ours and third parties') are found without the core
knowing their names::

    [project.entry-points."agent_stores.backends"]
    sqlite = "agent_stores.sqlite:open_backend"

A factory takes ``(url, **options)`` and returns a :class:`Backend` without doing I/O:
connections open lazily on first use, so ``open_stores`` can be called outside an event loop.
A backend declared with :class:`~agent_stores.core.lifecycle.ConnectedBackend` is one; a
backend that also offers ``object_driver()`` (and ``log_driver()``) gets every store the core
builds generically over those drivers with no wiring of its own.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from agent_framework import AgentFileStore, HistoryProvider, SessionStore, TodoProvider

from .checkpoints import ObjectCheckpointStorage
from .drivers import LogDriver, ObjectDriver
from .lifecycle import OwnedResource
from .redaction import redact_url
from .todos import ObjectTodoStore

__all__ = ["ENTRY_POINT_GROUP", "Backend", "BackendFactory", "DriverBackend", "Stores", "open_stores"]

ENTRY_POINT_GROUP = "agent_stores.backends"

# Schemes of the backends this project ships, and the extra that installs each.
_EXTRAS = {
    "sqlite": "sqlite",
    "redis": "redis",
    "rediss": "redis",
    "valkey": "redis",
    "redis+cluster": "redis",
    "mongodb": "mongodb",
    "mongodb+srv": "mongodb",
    "s3": "s3",
    "fsspec": "fsspec",
    "file": "fsspec",
}


@runtime_checkable
class Backend(Protocol):
    """The stores of one backend, sharing one connection or client."""

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
    """The history provider, file store and session store of one backend.

    Use as ``async with open_stores(url) as stores:`` or call ``aclose()`` when done: it closes
    the backend's connections, and the stores handed out stop working.
    """

    def __init__(self, url: str, backend: Backend) -> None:
        self.url = url
        self.backend = backend
        self._adopt(backend, owned=True)

    def object_driver(self) -> ObjectDriver:
        """The backend's shared object driver, to build a store the core offers over any driver.

        Raises:
            TypeError: The backend does not hand out its drivers (see :class:`DriverBackend`).
        """
        return self._drivers().object_driver()

    def log_driver(self) -> LogDriver:
        """The backend's shared log driver (see :meth:`object_driver`)."""
        return self._drivers().log_driver()

    def _drivers(self) -> DriverBackend:
        if not isinstance(self.backend, DriverBackend):
            raise TypeError(f"the backend for {redact_url(self.url)!r} does not offer object_driver() and log_driver()")
        return self.backend

    def history_provider(self, source_id: str = "history", **options: Any) -> HistoryProvider:
        """Return a history provider for ``source_id``; ``options`` as the backend's provider takes them."""
        return self.backend.history_provider(source_id=source_id, **options)

    def file_store(self, **options: Any) -> AgentFileStore:
        """Return the backend's ``AgentFileStore``."""
        return self.backend.file_store(**options)

    def session_store(self, **options: Any) -> SessionStore:
        """Return the backend's ``SessionStore``."""
        return self.backend.session_store(**options)

    def checkpoint_storage(self, **options: Any) -> ObjectCheckpointStorage:
        """Return workflow checkpoint storage over the backend's object driver.

        ``options`` as :class:`~agent_stores.core.checkpoints.ObjectCheckpointStorage` takes
        them (``namespace``, ``keep_last``, ``ttl``, ``allowed_checkpoint_types``, ``prefix``).

        Raises:
            TypeError: The backend does not hand out its drivers (see :class:`DriverBackend`).
        """
        return ObjectCheckpointStorage(self.object_driver(), **options)

    def todo_store(self, **options: Any) -> ObjectTodoStore:
        """Return the harness ``TodoStore`` over the backend's object driver (``namespace``, ``prefix``).

        Raises:
            TypeError: The backend does not hand out its drivers (see :class:`DriverBackend`).
        """
        return ObjectTodoStore(self.object_driver(), **options)

    def harness_kwargs(self, **history_options: Any) -> dict[str, Any]:
        """Return keyword arguments for ``create_harness_agent``, every one kept in this store.

        ``history_provider`` (built with ``history_options``), ``file_memory_store`` and, where
        the backend hands out its drivers (every backend of ours does), ``todo_provider``: the
        harness's todo list, kept per session in :meth:`todo_store`.
        """
        kwargs: dict[str, Any] = {
            "history_provider": self.history_provider(**history_options),
            "file_memory_store": self.file_store(),
        }
        if isinstance(self.backend, DriverBackend):
            kwargs["todo_provider"] = TodoProvider(store=self.todo_store())
        return kwargs

    def __repr__(self) -> str:
        return f"Stores({redact_url(self.url)!r})"


def _scheme(url: str) -> str:
    if not isinstance(url, str) or "://" not in url:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"not a store URL (expected scheme://...): {redact_url(url)!r}")
    return url.split("://", 1)[0].lower()


def open_stores(url: str, **options: Any) -> Stores:
    """Open the stores a URL names, through the backend registered for its scheme.

    ``sqlite:///relative.db``, ``sqlite:////absolute.db``, ``sqlite://`` (in-memory),
    ``memory://`` (the core's in-process driver) and the schemes of any installed backend.
    A compound scheme ``family+variant://`` (``fsspec+sftp``, ``redis+cluster``) goes to the
    backend registered for the exact scheme, else to the one registered for ``family``.
    No connection is made until a store is first used.

    Raises:
        ValueError: ``url`` has no scheme or no installed backend serves it; the message names
            the extra to install.
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
    return Stores(url, factory(url, **options))
