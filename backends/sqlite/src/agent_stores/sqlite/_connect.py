"""What the SQLite stores accept as their database, and the options an owned connection takes."""

from __future__ import annotations

from typing import Any, Final

import aiosqlite

from ._database import SQLiteDatabase

__all__ = ["DATABASE_OPTIONS", "as_database", "split_options"]

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
