"""``SQLiteBackend``: the ``sqlite://`` backend of ``agent_stores.core.open_stores``."""

from __future__ import annotations

from typing import Any

from ._database import SQLiteDatabase
from ._files import SQLiteAgentFileStore
from ._history import SQLiteHistoryProvider
from ._sessions import SQLiteSessionStore

__all__ = ["SQLiteBackend"]


class SQLiteBackend:
    """All three SQLite stores on ONE connection to one database file.

    ``open_stores("sqlite:///agent.db")`` builds this through the ``agent_stores.backends``
    entry point. Nothing is opened until a store is first used; :meth:`aclose` closes the
    connection, after which the stores handed out stop working.

    Args:
        url: ``sqlite:///relative/path.db``, ``sqlite:////absolute/path.db`` or ``sqlite://``
            (in-memory, private to this backend); query options as in ``SQLiteDatabase.from_url``.
        **options: ``busy_timeout``, ``synchronous``, ``journal_mode``.

    Raises:
        ValueError: The URL is malformed or an option is unknown.
    """

    def __init__(self, url: str, **options: Any) -> None:
        self.url = url
        self.database = SQLiteDatabase.from_url(url, **options)

    def history_provider(self, *, source_id: str, **options: Any) -> SQLiteHistoryProvider:
        """Return a history provider on the shared connection; ``options`` as ``SQLiteHistoryProvider`` takes them."""
        return SQLiteHistoryProvider(self.database, source_id=source_id, **options)

    def file_store(self, **options: Any) -> SQLiteAgentFileStore:
        """Return a file store on the shared connection (files under ``files/``)."""
        return SQLiteAgentFileStore(self.database, **options)

    def session_store(self, **options: Any) -> SQLiteSessionStore:
        """Return a session store on the shared connection (snapshots under ``sessions/``)."""
        return SQLiteSessionStore(self.database, **options)

    async def aclose(self) -> None:
        """Close the shared connection."""
        await self.database.aclose()

    def __repr__(self) -> str:
        return f"SQLiteBackend({self.url!r})"
