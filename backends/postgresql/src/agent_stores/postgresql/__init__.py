"""agent-stores backend for PostgreSQL: history, harness files and sessions in one database (psycopg 3).

::

    from agent_stores.postgresql import PostgreSQLHistoryProvider

    async with PostgreSQLHistoryProvider.from_url("postgresql://app@db/agents", max_messages=200) as history:
        ...

or every store on one pool: ``agent_stores.core.open_stores("postgresql://app@db/agents")``.
"""

from ._backend import PostgreSQLBackend
from ._database import (
    DEFAULT_POOL_SIZE,
    DEFAULT_POOL_TIMEOUT,
    PostgreSQLDatabase,
    PostgreSQLOptions,
    migrate_schema,
    parse_postgresql_url,
)
from ._driver import PostgreSQLLogDriver, PostgreSQLObjectDriver
from ._files import PostgreSQLAgentFileStore
from ._history import PostgreSQLHistoryProvider
from ._schema import SCHEMA_VERSION
from ._sessions import PostgreSQLSessionStore

__all__ = [
    "DEFAULT_POOL_SIZE",
    "DEFAULT_POOL_TIMEOUT",
    "SCHEMA_VERSION",
    "PostgreSQLAgentFileStore",
    "PostgreSQLBackend",
    "PostgreSQLDatabase",
    "PostgreSQLHistoryProvider",
    "PostgreSQLLogDriver",
    "PostgreSQLObjectDriver",
    "PostgreSQLOptions",
    "PostgreSQLSessionStore",
    "migrate_schema",
    "parse_postgresql_url",
]
