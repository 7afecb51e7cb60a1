"""``PostgreSQLBackend``: the ``postgresql://`` backend of ``agent_stores.core.open_stores``, as a declaration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from agent_stores.core import ConnectedBackend, Connector

from ._connect import CONNECTOR
from ._database import PostgreSQLDatabase
from ._driver import PostgreSQLLogDriver, PostgreSQLObjectDriver
from ._files import PostgreSQLAgentFileStore
from ._history import PostgreSQLHistoryProvider
from ._schema import SCHEMA_VERSION
from ._sessions import PostgreSQLSessionStore

__all__ = ["PostgreSQLBackend"]


class PostgreSQLBackend(ConnectedBackend[PostgreSQLDatabase]):
    """All PostgreSQL stores on ONE connection pool to one database.

    ``open_stores("postgresql://user:password@host/database")`` (or ``postgres://``) builds
    this through the ``agent_stores.backends`` entry point. Nothing connects until a store is
    first used; :meth:`aclose` closes the pool, after which the stores handed out stop working.

    Args:
        url: ``postgresql://user:password@host:port/database?...``: libpq's own query
            parameters (``sslmode``, ``sslrootcert``, ``connect_timeout``...) and this
            backend's ``pool_size``, ``pool_timeout`` and ``read_timeout``.
        **options: ``pool_size``, ``pool_timeout``, ``read_timeout``, ``must_exist``.

    Raises:
        ValueError: The URL is malformed or an option is unknown.
    """

    connector: ClassVar[Connector[Any]] = CONNECTOR
    history_type = PostgreSQLHistoryProvider
    file_store_type = PostgreSQLAgentFileStore
    session_store_type = PostgreSQLSessionStore
    object_driver_type = PostgreSQLObjectDriver
    log_driver_type = PostgreSQLLogDriver
    #: Object keys of any length: the primary key is a digest of the key and listings use an
    #: index of its first characters (migration 4), so 4,000-byte paths (``long_names``) and the
    #: object driver's 8,192-byte keys are held and listed in order.
    capabilities: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "files": {"long_names": True},
        "object_driver": {"max_key_bytes": 8192},
    }
    #: The schema version this release writes (``agent-stores migrate-schema`` reports it).
    schema_version: ClassVar[int] = SCHEMA_VERSION

    async def migrate_schema(self) -> list[int]:
        """Apply the migrations the database lacks now (``agent-stores migrate-schema``); return their numbers."""
        return await self.handle.migrate()
