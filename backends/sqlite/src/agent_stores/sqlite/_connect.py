"""The SQLite connector: an owned database from a ``sqlite://`` URL, or one around your connection."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Final, Self

import aiosqlite

from agent_stores.core import MUST_EXIST, ConnectedStore, Connector, route_options

from ._database import SQLiteDatabase, parse_sqlite_url

__all__ = ["CONNECTOR", "DATABASE_OPTIONS", "Connectable", "SQLiteConnector", "SQLiteStore"]

#: Options of the database an owned connection is opened with (also URL query parameters, but
#: ``must_exist``, a keyword only).
DATABASE_OPTIONS: Final = frozenset({"busy_timeout", "synchronous", "journal_mode", "file_mode", MUST_EXIST})

#: What a store's constructor takes: a ready aiosqlite connection or a shared database.
Connectable = aiosqlite.Connection | SQLiteDatabase


class SQLiteConnector(Connector[SQLiteDatabase]):
    """Opens :class:`SQLiteDatabase` handles: owned from a URL, or the one shared wrapper of a borrowed connection."""

    handle_type = SQLiteDatabase
    options = DATABASE_OPTIONS
    name = "SQLite"

    def open(self, url: str, **options: Any) -> SQLiteDatabase:
        """An owned database for ``sqlite:///path.db``, ``sqlite:////abs.db`` or ``sqlite://`` (in-memory).

        With ``must_exist=True`` the file is opened without being created (see :class:`SQLiteOptions`).
        """
        must_exist = options.pop(MUST_EXIST, False)
        return SQLiteDatabase.from_options(replace(parse_sqlite_url(url, **options), must_exist=must_exist))

    def borrow(self, client: Any, **options: Any) -> SQLiteDatabase:
        """The one database wrapping ``client`` (an ``aiosqlite.Connection``), shared by every store on it.

        Raises:
            TypeError: ``client`` is not an ``aiosqlite.Connection``.
            ValueError: Options given: a borrowed connection is configured by its owner.
        """
        if options:
            raise ValueError(f"{sorted(options)} configure an owned connection; a borrowed one is used as it is")
        return SQLiteDatabase.for_connection(client)


CONNECTOR: Final = SQLiteConnector()


class SQLiteStore(ConnectedStore[SQLiteDatabase]):
    """Borrow-or-own for the SQLite stores: ``from_url`` (from the core) and ``from_path``."""

    connector: ClassVar[Connector[Any]] = CONNECTOR

    @classmethod
    def from_path(cls, path: str | Path, **options: Any) -> Self:
        """Open a store that owns its connection to the database file ``path``; options as ``from_url``.

        Raises:
            ValueError: An option is unknown or invalid.
        """
        store, database = route_options(cls, cls.connector, options)
        return cls.owning(SQLiteDatabase.from_path(path, **database), **store)
