"""``SQLiteBackend``: the ``sqlite://`` backend of ``agent_stores.core.open_stores``, as a declaration."""

from __future__ import annotations

import os
from typing import Any, ClassVar

from agent_stores.core import ConnectedBackend, Connector

from ._connect import CONNECTOR
from ._database import SQLiteDatabase
from ._driver import SQLiteLogDriver, SQLiteObjectDriver
from ._files import SQLiteAgentFileStore
from ._history import SQLiteHistoryProvider
from ._sessions import SQLiteSessionStore

__all__ = ["SQLiteBackend"]


class SQLiteBackend(ConnectedBackend[SQLiteDatabase]):
    """All SQLite stores on ONE connection to one database file.

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

    connector: ClassVar[Connector[Any]] = CONNECTOR
    history_type = SQLiteHistoryProvider
    file_store_type = SQLiteAgentFileStore
    session_store_type = SQLiteSessionStore
    object_driver_type = SQLiteObjectDriver
    log_driver_type = SQLiteLogDriver

    def location(self) -> str:
        """``sqlite://`` and the database file's real path (one per in-memory database)."""
        options = self.handle.options
        if options is None or options.in_memory:
            return f"sqlite://:memory:{id(self.handle)}"
        return "sqlite://" + (options.path if options.path.startswith("file:") else os.path.realpath(options.path))

    def conformance_capabilities(self) -> dict[str, dict[str, Any]]:
        """The declared capabilities; an in-memory database (``sqlite://``) lives in one process."""
        declared = super().conformance_capabilities()
        declared["history"]["multi_process"] = self.url.rstrip("/") != "sqlite:"
        return declared
