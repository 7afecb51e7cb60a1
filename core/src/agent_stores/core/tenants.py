"""Tenant-scoped views: one authenticated tenant's sessions, history and files, and nothing else.

A hosted application must never use a session id a client sent as a storage key as it is:
the client could name another user's session. Bind the stores to the tenant your
authentication established, then use the client's session key only inside that view::

    tenant_stores = stores.tenant(user.tenant_id)        # from authentication, never from the request
    sessions = tenant_stores.session_store()
    session = await sessions.get(client_key) or AgentSession(session_id=client_key)
    agent = create_harness_agent(client, **tenant_stores.harness_kwargs())

Every key a view touches is derived from the tenant and the id or path it is given, through
the same injective mapping as every other key (:func:`~agent_stores.core.keys.key_segment`):
no session key, path or namespace given to one tenant's view can name, list, overwrite or
delete anything of another tenant's. Tenant data lives under ``tenants/<tenant>/`` (sessions
and files) and in the history namespace ``tenants/<tenant>``; the unscoped stores see all of
it (an administrator's view), so never hand them ids that came from a client.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from agent_framework import (
    AgentFileStore,
    AgentSession,
    FileSearchResult,
    FileStoreEntry,
    HistoryProvider,
    SessionStore,
)

from ._framework import normalize_relative_path
from .keys import key_segment
from .stores import harness_kwargs

if TYPE_CHECKING:
    from .stores import Stores

__all__ = ["TENANT_ROOT", "TenantFileStore", "TenantSessionStore", "TenantStores", "tenant_namespace"]

#: The first key segment of everything a tenant view stores.
TENANT_ROOT = "tenants"


def _tenant_root(tenant: str) -> str:
    if not isinstance(tenant, str) or not tenant:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError("tenant must be a non-empty string")
    return f"{TENANT_ROOT}/{key_segment(tenant)}"


def tenant_namespace(tenant: str) -> str:
    """The history namespace of ``tenant``.

    Raises:
        ValueError: ``tenant`` is not a non-empty string.
    """
    _tenant_root(tenant)
    return f"{TENANT_ROOT}/{tenant}"


class TenantSessionStore(SessionStore):
    """A ``SessionStore`` view bound to one tenant: session keys name this tenant's sessions only.

    The session stored under ``key`` is stored in ``inner`` under ``tenants/<tenant>/<key>``
    (the tenant as one key segment, which never contains ``/``), so two tenants using the
    same key, or a key shaped like another tenant's id, never meet.

    Args:
        inner: The store every tenant shares (any ``SessionStore``).
        tenant: The authenticated tenant.

    Raises:
        ValueError: ``tenant`` is not a non-empty string.
    """

    def __init__(self, inner: SessionStore, tenant: str) -> None:
        super().__init__()
        self.inner = inner
        self.tenant = tenant
        self._root = _tenant_root(tenant)

    def _id(self, session_id: str) -> str:
        SessionStore.validate_session_id(session_id)
        return f"{self._root}/{session_id}"

    async def get(self, session_id: str) -> AgentSession | None:
        """Return this tenant's session stored under ``session_id``, or ``None``."""
        return await self.inner.get(self._id(session_id))

    async def set(self, session_id: str, session: AgentSession) -> None:
        """Store ``session`` as this tenant's session ``session_id``."""
        await self.inner.set(self._id(session_id), session)

    async def delete(self, session_id: str) -> None:
        """Delete this tenant's session ``session_id``; an absent one is not an error."""
        await self.inner.delete(self._id(session_id))


class TenantFileStore(AgentFileStore):
    """An ``AgentFileStore`` view bound to one tenant: its root is the tenant's own folder.

    Paths follow the framework's rules (relative, forward slashes, no ``.``/``..``
    segments; anything else is a ``ValueError`` before any I/O) and live under
    ``tenants/<tenant>/`` of ``inner``, so no path reaches another tenant's files.

    Args:
        inner: The file store every tenant shares (any ``AgentFileStore``).
        tenant: The authenticated tenant.

    Raises:
        ValueError: ``tenant`` is not a non-empty string.
    """

    def __init__(self, inner: AgentFileStore, tenant: str) -> None:
        self.inner = inner
        self.tenant = tenant
        self._root = _tenant_root(tenant)

    def _path(self, path: str) -> str:
        return f"{self._root}/{normalize_relative_path(path)}"

    def _directory(self, directory: str) -> str:
        normalized = normalize_relative_path(directory, is_directory=True)
        return f"{self._root}/{normalized}" if normalized else self._root

    async def write(self, path: str, content: str, *, overwrite: bool = True) -> None:
        """Write this tenant's file; with ``overwrite=False`` an exclusive create (``FileExistsError``)."""
        try:
            await self.inner.write(self._path(path), content, overwrite=overwrite)
        except FileExistsError as err:
            raise FileExistsError(f"File already exists: {path!r}") from err

    async def read(self, path: str) -> str | None:
        """Return this tenant's file, or ``None``."""
        return await self.inner.read(self._path(path))

    async def delete(self, path: str) -> bool:
        """Delete this tenant's file; return whether it existed."""
        return await self.inner.delete(self._path(path))

    async def list_children(self, directory: str = "") -> list[FileStoreEntry]:
        """List the children of this tenant's ``directory``."""
        return await self.inner.list_children(self._directory(directory))

    async def file_exists(self, path: str) -> bool:
        """Return whether this tenant has a file at ``path``."""
        return await self.inner.file_exists(self._path(path))

    async def create_directory(self, path: str) -> None:
        """Create this tenant's directory ``path``."""
        await self.inner.create_directory(self._directory(path))

    async def find_matching_files(
        self, directory: str, regex_pattern: str, glob_pattern: str | None = None, *, recursive: bool = False
    ) -> list[str]:
        """The inner store's candidates in this tenant's ``directory`` (names relative to it)."""
        return await self.inner.find_matching_files(
            self._directory(directory), regex_pattern, glob_pattern, recursive=recursive
        )

    async def search(
        self, directory: str, regex_pattern: str, glob_pattern: str | None = None, *, recursive: bool = False
    ) -> list[FileSearchResult]:
        """Search this tenant's ``directory`` as the inner store searches (names relative to it)."""
        return await self.inner.search(self._directory(directory), regex_pattern, glob_pattern, recursive=recursive)


class TenantStores:
    """The stores of :class:`~agent_stores.core.Stores` as one authenticated tenant sees them.

    Use :meth:`Stores.tenant`. Sessions and files are :class:`TenantSessionStore` and
    :class:`TenantFileStore` views; the history provider is the backend's own in the
    tenant's namespace (``tenants/<tenant>``), so ``list_sessions`` and every admin call
    see this tenant's sessions only.

    Raises:
        ValueError: ``tenant`` is not a non-empty string.
    """

    def __init__(self, stores: Stores, tenant: str) -> None:
        self.stores = stores
        self.tenant = tenant
        self.namespace = tenant_namespace(tenant)

    def history_provider(self, source_id: str = "history", **options: Any) -> HistoryProvider:
        """Return the tenant's history provider; ``options`` as :meth:`Stores.history_provider` takes them.

        Raises:
            ValueError: ``options`` names a ``namespace`` (the tenant is the namespace).
        """
        if "namespace" in options:
            raise ValueError("a tenant's history provider has the tenant's namespace; do not pass namespace")
        return self.stores.history_provider(source_id, namespace=self.namespace, **options)

    def file_store(self, **options: Any) -> TenantFileStore:
        """Return the tenant's view of the backend's file store."""
        return TenantFileStore(self.stores.file_store(**options), self.tenant)

    def session_store(self, **options: Any) -> TenantSessionStore:
        """Return the tenant's view of the backend's session store."""
        return TenantSessionStore(self.stores.session_store(**options), self.tenant)

    def harness_kwargs(
        self,
        *,
        file_access: bool = False,
        service_history: bool = False,
        default_options: Mapping[str, Any] | None = None,
        **history_options: Any,
    ) -> dict[str, Any]:
        """:meth:`Stores.harness_kwargs` with the tenant's history and files."""
        return harness_kwargs(
            self.history_provider(**history_options),
            self.file_store(),
            file_access=file_access,
            service_history=service_history,
            default_options=default_options,
        )

    def __repr__(self) -> str:
        return f"TenantStores({self.stores!r}, tenant={self.tenant!r})"
