"""``MongoDBBackend``: the ``mongodb://`` and ``mongodb+srv://`` backend of ``open_stores``, as a declaration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from agent_stores.core import ConnectedBackend, Connector

from ._connect import CONNECTOR
from ._database import MongoDBDatabase
from ._files import MongoDBAgentFileStore
from ._history import MongoDBHistoryProvider
from ._log_driver import MongoDBLogDriver
from ._object_driver import MongoDBObjectDriver
from ._sessions import MongoDBSessionStore

__all__ = ["MongoDBBackend"]


class MongoDBBackend(ConnectedBackend[MongoDBDatabase]):
    """All MongoDB stores on ONE owned ``AsyncMongoClient``.

    ``open_stores("mongodb://host/agents")`` builds this through the ``agent_stores.backends``
    entry point. Nothing is opened until a store is first used; :meth:`aclose` closes the
    client, after which the stores handed out stop working.

    Args:
        url: ``mongodb://[user:password@]host[:port][,...]/[database][?options]`` or
            ``mongodb+srv://[user:password@]host/[database][?options]``.
        **options: ``database``, ``collection_prefix`` or ``collections``, ``client_options``
            (keyword arguments for ``AsyncMongoClient``).

    Raises:
        ValueError: The URL is not a MongoDB URL or an option is unknown.
    """

    connector: ClassVar[Connector[Any]] = CONNECTOR
    history_type = MongoDBHistoryProvider
    file_store_type = MongoDBAgentFileStore
    session_store_type = MongoDBSessionStore
    object_driver_type = MongoDBObjectDriver
    log_driver_type = MongoDBLogDriver
    #: MongoDB's TTL monitor removes an expired session's head itself. ``delete_if_version``
    #: claims the batch slot an append at the version needs (see ``docs/backends/mongodb.md``).
    capabilities: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "log_driver": {"native_expiry": True, "conditional_delete": True}
    }
