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

import os
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from agent_framework import AgentFileStore, HistoryProvider, SessionStore, TodoProvider

from .checkpoints import ObjectCheckpointStorage
from .drivers import LogDriver, ObjectDriver
from .lifecycle import OwnedResource
from .redaction import redact_url
from .todos import ObjectTodoStore

if TYPE_CHECKING:
    from .tenants import TenantStores

__all__ = [
    "ENTRY_POINT_GROUP",
    "OPENAI_API_ENV",
    "Backend",
    "BackendFactory",
    "DriverBackend",
    "Stores",
    "harness_kwargs",
    "open_stores",
    "openai_client",
]

ENTRY_POINT_GROUP = "agent_stores.backends"

#: Environment variable choosing the OpenAI API :func:`openai_client` speaks: ``chat`` or ``responses``.
OPENAI_API_ENV = "AGENT_STORES_OPENAI_API"

# Sent as the key to an OpenAI-compatible server reached through OPENAI_BASE_URL without one
# (a local server that checks no key); the OpenAI SDK refuses to build a client without a key.
_NO_KEY = "no-key"
_DEFAULT_MODEL = "gpt-4o-mini"

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

    def harness_kwargs(
        self,
        *,
        file_access: bool = False,
        service_history: bool = False,
        default_options: Mapping[str, Any] | None = None,
        **history_options: Any,
    ) -> dict[str, Any]:
        """Return keyword arguments for ``create_harness_agent`` that keep the agent's state in these stores.

        ``history_provider`` (``history_options`` as :meth:`history_provider` takes them),
        ``file_memory_store`` (the file store), ``file_access_store`` (the same file store, when
        ``file_access``) and ``default_options`` with ``store=False``: the conversation the
        model sees is loaded from our history provider on every model call, never from a copy
        the model service keeps (a Responses API client would otherwise send
        ``previous_response_id`` and skip our history). Pass your own chat options as
        ``default_options``; they are merged.

        With ``service_history=True`` no ``store`` option is set: a client that stores history
        at the service (the Responses API's default) then continues from the service's copy,
        and our provider only records the conversation (the framework skips loading it).

        Raises:
            ValueError: ``default_options`` sets ``store`` to something else than ``service_history`` implies.
        """
        kwargs = harness_kwargs(
            self.history_provider(**history_options),
            self.file_store(),
            file_access=file_access,
            service_history=service_history,
            default_options=default_options,
        )
        if isinstance(self.backend, DriverBackend):  # the harness's todo list, kept per session
            kwargs["todo_provider"] = TodoProvider(store=self.todo_store())
        return kwargs

    def tenant(self, tenant: str) -> TenantStores:
        """Return the view of these stores bound to one authenticated tenant (see :class:`TenantStores`).

        Raises:
            ValueError: ``tenant`` is not a non-empty string.
        """
        from .tenants import TenantStores

        return TenantStores(self, tenant)

    def __repr__(self) -> str:
        return f"Stores({redact_url(self.url)!r})"


def harness_kwargs(
    history: HistoryProvider,
    files: AgentFileStore,
    *,
    file_access: bool = False,
    service_history: bool = False,
    default_options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Return ``create_harness_agent`` keyword arguments for ``history`` and ``files``.

    See :meth:`Stores.harness_kwargs`; this builds them for stores you made yourself.

    Raises:
        ValueError: ``default_options`` sets ``store`` to something else than ``service_history`` implies.
    """
    options = dict(default_options or {})
    if not service_history:
        if options.get("store") not in (None, False):
            raise ValueError("default_options['store'] must be False unless service_history=True")
        options["store"] = False
    kwargs: dict[str, Any] = {"history_provider": history, "file_memory_store": files, "default_options": options}
    if file_access:
        kwargs["file_access_store"] = files
    return kwargs


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


def openai_client(
    api: Literal["chat", "responses"] | None = None,
    *,
    model: str | None = None,
    api_key: str | None = None,
    base_url: str | None = None,
    **options: Any,
) -> Any:
    """Return the framework's OpenAI chat client for OpenAI or any OpenAI-compatible server.

    ``api`` chooses the API: ``"chat"`` (Chat Completions, the default: every OpenAI-compatible
    server speaks it) or ``"responses"`` (the Responses API); when not given, the
    ``AGENT_STORES_OPENAI_API`` environment variable decides, else ``"chat"``. Both keep the
    conversation in the history provider when the agent is built with
    :meth:`Stores.harness_kwargs` (``store=False``).

    ``model``, ``api_key`` and ``base_url`` default to ``OPENAI_MODEL`` (else ``gpt-4o-mini``),
    ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``. A base URL without a key (a local server
    that checks none) works: a placeholder key is sent. ``options`` go to the client class
    (``OpenAIChatCompletionClient`` or ``OpenAIChatClient`` of ``agent-framework-openai``).

    Raises:
        ImportError: ``agent-framework-openai`` is not installed (``pip install "agent-stores[openai]"``).
        ValueError: ``api`` is not ``chat`` or ``responses``, or neither a key nor a base URL is configured.
    """
    chosen = api or os.environ.get(OPENAI_API_ENV, "").strip().lower() or "chat"
    if chosen not in ("chat", "responses"):
        raise ValueError(f"api must be 'chat' or 'responses' (from {OPENAI_API_ENV} or the argument), got {chosen!r}")
    try:
        from agent_framework.openai import OpenAIChatClient, OpenAIChatCompletionClient
    except ImportError as err:
        raise ImportError('the OpenAI clients need agent-framework-openai: pip install "agent-stores[openai]"') from err
    key = api_key or os.environ.get("OPENAI_API_KEY") or None
    url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    if key is None and url is None:
        raise ValueError("set OPENAI_API_KEY (api.openai.com) or OPENAI_BASE_URL (an OpenAI-compatible server)")
    name = model or os.environ.get("OPENAI_MODEL") or _DEFAULT_MODEL
    client_type = OpenAIChatClient if chosen == "responses" else OpenAIChatCompletionClient
    return client_type(model=name, api_key=key or _NO_KEY, base_url=url, **options)
