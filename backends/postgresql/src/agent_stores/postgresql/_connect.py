"""The PostgreSQL connector: an owned pool from a ``postgresql://`` URL, or one around your connection or pool."""

from __future__ import annotations

from dataclasses import replace
from typing import Any, ClassVar, Final

import psycopg
from psycopg_pool import AsyncConnectionPool

from agent_stores.core import MUST_EXIST, ConnectedStore, Connector

from ._database import PostgreSQLDatabase, parse_postgresql_url

__all__ = ["CONNECTOR", "DATABASE_OPTIONS", "Connectable", "PostgreSQLConnector", "PostgreSQLStore"]

#: Options of the pool an owned database opens (also URL query parameters, but ``must_exist``,
#: a keyword only).
DATABASE_OPTIONS: Final = frozenset({"pool_size", "pool_timeout", "read_timeout", MUST_EXIST})

#: What a store's constructor takes: a psycopg connection or pool, or a shared database.
Connectable = psycopg.AsyncConnection[Any] | AsyncConnectionPool[Any] | PostgreSQLDatabase


class PostgreSQLConnector(Connector[PostgreSQLDatabase]):
    """Opens :class:`PostgreSQLDatabase` handles: owned from a URL, or the one shared wrapper of your client."""

    handle_type = PostgreSQLDatabase
    options = DATABASE_OPTIONS
    name = "PostgreSQL"

    def open(self, url: str, **options: Any) -> PostgreSQLDatabase:
        """An owned database for ``postgresql://user:password@host:port/database?...`` (no I/O yet).

        With ``must_exist=True`` nothing is created: a database without the stores' tables is
        ``StoreNotFoundError`` on first use.
        """
        must_exist = options.pop(MUST_EXIST, False)
        return PostgreSQLDatabase.from_options(replace(parse_postgresql_url(url, **options), must_exist=must_exist))

    def borrow(self, client: Any, **options: Any) -> PostgreSQLDatabase:
        """The one database wrapping ``client`` (a psycopg ``AsyncConnection`` or ``AsyncConnectionPool``).

        Raises:
            TypeError: ``client`` is neither.
            ValueError: Options given: a borrowed client is configured by its owner.
        """
        if options:
            raise ValueError(f"{sorted(options)} configure an owned pool; a borrowed client is used as it is")
        return PostgreSQLDatabase.for_client(client)


CONNECTOR: Final = PostgreSQLConnector()


class PostgreSQLStore(ConnectedStore[PostgreSQLDatabase]):
    """Borrow-or-own for the PostgreSQL stores (``from_url`` comes from the core)."""

    connector: ClassVar[Connector[Any]] = CONNECTOR
