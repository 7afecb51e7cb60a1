"""``MongoDBBackend``: the ``mongodb://`` and ``mongodb+srv://`` backend of ``agent_stores.core.open_stores``."""

from __future__ import annotations

from typing import Any

from ._connect import database_from_options, split_options
from ._database import redact
from ._files import MongoDBAgentFileStore
from ._history import MongoDBHistoryProvider
from ._sessions import MongoDBSessionStore

__all__ = ["MongoDBBackend"]


class MongoDBBackend:
    """All three MongoDB stores on ONE owned ``AsyncMongoClient``.

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

    def __init__(self, url: str, **options: Any) -> None:
        database_options, unknown = split_options(options)
        if unknown:
            raise ValueError(
                f"unknown MongoDB backend options {sorted(unknown)}; known: client_options, collection_prefix, "
                "collections, database"
            )
        self.url = url
        self.database = database_from_options(url, database_options)

    def history_provider(self, *, source_id: str, **options: Any) -> MongoDBHistoryProvider:
        """Return a history provider on the shared client; ``options`` as ``MongoDBHistoryProvider`` takes them."""
        return MongoDBHistoryProvider(self.database, source_id=source_id, **options)

    def file_store(self, **options: Any) -> MongoDBAgentFileStore:
        """Return a file store on the shared client (files under ``files/``)."""
        return MongoDBAgentFileStore(self.database, **options)

    def session_store(self, **options: Any) -> MongoDBSessionStore:
        """Return a session store on the shared client (snapshots under ``sessions/``)."""
        return MongoDBSessionStore(self.database, **options)

    async def aclose(self) -> None:
        """Close the shared client."""
        await self.database.aclose()

    def __repr__(self) -> str:
        return f"MongoDBBackend({redact(self.url)!r})"
