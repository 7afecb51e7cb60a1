"""agent-stores backend for SQLite: history, harness files and sessions in one database file.

::

    from agent_stores.sqlite import SQLiteHistoryProvider

    async with SQLiteHistoryProvider.from_url("sqlite:///agent.db", max_messages=200) as history:
        ...

or every store on one connection: ``agent_stores.core.open_stores("sqlite:///agent.db")``.
"""

from ._backend import SQLiteBackend
from ._database import DEFAULT_BUSY_TIMEOUT, SCHEMA_VERSION, SQLiteDatabase, SQLiteOptions, parse_sqlite_url
from ._driver import SQLiteLogDriver, SQLiteObjectDriver
from ._files import SQLiteAgentFileStore
from ._history import SQLiteHistoryProvider
from ._sessions import SQLiteSessionStore

__all__ = [
    "DEFAULT_BUSY_TIMEOUT",
    "SCHEMA_VERSION",
    "SQLiteAgentFileStore",
    "SQLiteBackend",
    "SQLiteDatabase",
    "SQLiteHistoryProvider",
    "SQLiteLogDriver",
    "SQLiteObjectDriver",
    "SQLiteOptions",
    "SQLiteSessionStore",
    "parse_sqlite_url",
]
