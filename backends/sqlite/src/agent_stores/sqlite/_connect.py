"""What the SQLite stores accept as their database, and the options an owned connection takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final, Self, cast

import aiosqlite

from agent_stores.core._lifecycle import OwnedResource

from ._database import SQLiteDatabase

__all__ = ["DATABASE_OPTIONS", "OwnedOpeners", "as_database", "split_options"]

#: Keyword options of ``from_url`` / ``from_path`` that configure the owned connection.
DATABASE_OPTIONS: Final = frozenset({"busy_timeout", "synchronous", "journal_mode"})

#: What a store's constructor borrows: a ready aiosqlite connection or a shared database.
Connectable = aiosqlite.Connection | SQLiteDatabase


def as_database(connection: Connectable) -> SQLiteDatabase:
    """Return the database a store runs on; a bare connection is wrapped (and still borrowed).

    Every store given the same connection shares one wrapper, so schema setup and the
    transaction lock are per connection.

    Raises:
        TypeError: ``connection`` is neither an ``aiosqlite.Connection`` nor a ``SQLiteDatabase``.
    """
    if isinstance(connection, SQLiteDatabase):
        return connection
    return SQLiteDatabase.for_connection(connection)


def split_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split ``options`` into (connection options, store options)."""
    database = {k: v for k, v in options.items() if k in DATABASE_OPTIONS}
    store = {k: v for k, v in options.items() if k not in DATABASE_OPTIONS}
    return database, store


class OwnedOpeners(OwnedResource):
    """``from_url`` / ``from_path`` for a store whose constructor borrows a connection or database."""

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Self:
        """Open a store that owns its connection to ``url`` (``sqlite:///path.db``, ``sqlite://``).

        ``options`` are the connection's (``busy_timeout``, ``synchronous``, ``journal_mode``;
        also accepted as URL query parameters) and the store's own keyword arguments. Nothing
        is opened until first use; ``aclose()`` (or ``async with``) closes the connection.

        Raises:
            ValueError: The URL is malformed or an option is invalid.
        """
        database_options, store_options = split_options(options)
        return cls._owning(SQLiteDatabase.from_url(url, **database_options), store_options)

    @classmethod
    def from_path(cls, path: str | Path, **options: Any) -> Self:
        """Open a store that owns its connection to the database file ``path``; options as :meth:`from_url`."""
        database_options, store_options = split_options(options)
        return cls._owning(SQLiteDatabase.from_path(path, **database_options), store_options)

    @classmethod
    def _owning(cls, database: SQLiteDatabase, options: dict[str, Any]) -> Self:
        store: Self = cast(Any, cls)(database, **options)  # every store's constructor borrows a database
        store._adopt(database, owned=True)
        return store
