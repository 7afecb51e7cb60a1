"""Tenant views: one authenticated tenant's stores, every kind under ``tenants/<tenant>/``.

A hosted application must never use a session id a client sent as a storage key as it is:
the client could name another user's session. Bind the stores to the tenant your
authentication established, then use the client's session key only inside that view::

    tenant_stores = stores.tenant(user.tenant_id)        # from authentication, never from the request
    sessions = tenant_stores.session_store()
    session = await sessions.get(client_key) or AgentSession(session_id=client_key)
    agent = create_harness_agent(client, **tenant_stores.harness_kwargs())

A view is the backend's own stores with ``tenant=``: the key layout
(:mod:`agent_stores.core.keys`) puts everything they write — history, files, sessions, todos,
checkpoints — under the tenant's root, so no session key, path or namespace given to one
tenant's view can name, list, overwrite or delete anything of another tenant's. The unscoped
stores see all of it (an administrator's view), so never hand them ids that came from a client.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from agent_framework import AgentFileStore, HistoryProvider, SessionStore

from .checkpoints import ObjectCheckpointStorage
from .harness import harness_kwargs
from .keys import tenant_root
from .todos import ObjectTodoStore

__all__ = ["TenantStores"]


class _ScopedStores(Protocol):
    """What a tenant view needs of :class:`~agent_stores.core.Stores`: every store, scoped by ``tenant``."""

    def history_provider(self, source_id: str = "history", *, tenant: str | None = None, **options: Any) -> Any: ...
    def file_store(self, *, tenant: str | None = None, **options: Any) -> AgentFileStore: ...
    def session_store(self, *, tenant: str | None = None, **options: Any) -> SessionStore: ...
    def todo_store(self, *, tenant: str | None = None, **options: Any) -> ObjectTodoStore: ...
    def checkpoint_storage(self, *, tenant: str | None = None, **options: Any) -> ObjectCheckpointStorage: ...


class TenantStores:
    """The stores of :class:`~agent_stores.core.Stores` as one authenticated tenant sees them.

    Use :meth:`Stores.tenant <agent_stores.core.Stores.tenant>`. Every store it hands out is
    the backend's own, built with ``tenant=``; options are the unscoped store's (a
    ``namespace`` divides the tenant's history, todos and checkpoints further).

    Raises:
        ValueError: ``tenant`` is not a non-empty string.
    """

    def __init__(self, stores: _ScopedStores, tenant: str) -> None:
        self.root = tenant_root(tenant)
        self.stores = stores
        self.tenant = tenant

    def history_provider(self, source_id: str = "history", **options: Any) -> HistoryProvider:
        """Return the tenant's history provider; ``options`` as :meth:`Stores.history_provider` takes them."""
        return self.stores.history_provider(source_id, tenant=self.tenant, **options)

    def file_store(self, **options: Any) -> AgentFileStore:
        """Return the tenant's file store."""
        return self.stores.file_store(tenant=self.tenant, **options)

    def session_store(self, **options: Any) -> SessionStore:
        """Return the tenant's session store."""
        return self.stores.session_store(tenant=self.tenant, **options)

    def todo_store(self, **options: Any) -> ObjectTodoStore:
        """Return the tenant's harness todo store."""
        return self.stores.todo_store(tenant=self.tenant, **options)

    def checkpoint_storage(self, **options: Any) -> ObjectCheckpointStorage:
        """Return the tenant's workflow checkpoint storage."""
        return self.stores.checkpoint_storage(tenant=self.tenant, **options)

    def harness_kwargs(
        self,
        *,
        file_access: bool = False,
        service_history: bool = False,
        default_options: Mapping[str, Any] | None = None,
        **history_options: Any,
    ) -> dict[str, Any]:
        """:meth:`Stores.harness_kwargs` with the tenant's history, files and todo list."""
        return harness_kwargs(
            self.history_provider(**history_options),
            self.file_store(),
            todos=self.todo_store(),
            file_access=file_access,
            service_history=service_history,
            default_options=default_options,
        )

    def __repr__(self) -> str:
        return f"TenantStores({self.stores!r}, tenant={self.tenant!r})"
