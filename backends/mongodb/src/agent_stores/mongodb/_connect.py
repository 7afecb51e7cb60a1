"""What the MongoDB stores accept as their database, and how ``from_url`` opens an owned one."""

from __future__ import annotations

from typing import Any, Final, Self, cast

from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from agent_stores.core._lifecycle import OwnedResource

from ._database import CollectionNames, Document, MongoDBDatabase

__all__ = ["DATABASE_OPTIONS", "Connectable", "OwnedOpeners", "as_database", "split_options"]

#: Keyword options of ``from_url`` that configure the owned client and database, not the store.
DATABASE_OPTIONS: Final = frozenset({"database", "collections", "collection_prefix", "client_options"})

#: What a store's constructor borrows: a pymongo async client or database, or a shared :class:`MongoDBDatabase`.
Connectable = AsyncMongoClient[Document] | AsyncDatabase[Document] | MongoDBDatabase


def as_database(connection: Connectable) -> MongoDBDatabase:
    """Return the database a store runs on; a client or ``AsyncDatabase`` is wrapped (and still borrowed).

    Raises:
        TypeError: ``connection`` is none of the accepted types (Motor clients included).
    """
    if isinstance(connection, MongoDBDatabase):
        return connection
    return MongoDBDatabase(connection)


def database_from_options(url: str, options: dict[str, Any]) -> MongoDBDatabase:
    """Open an owned :class:`MongoDBDatabase` for ``url`` from the ``DATABASE_OPTIONS`` in ``options``.

    Raises:
        ValueError: The URL is not a MongoDB URL, or both ``collections`` and ``collection_prefix`` are given.
    """
    collections: CollectionNames | None = options.get("collections")
    prefix = options.get("collection_prefix")
    if prefix is not None:
        if collections is not None:
            raise ValueError("give collections or collection_prefix, not both")
        collections = CollectionNames.with_prefix(prefix)
    return MongoDBDatabase.from_url(
        url, database=options.get("database"), collections=collections, client_options=options.get("client_options")
    )


def split_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split ``options`` into (database options, store options)."""
    database = {k: v for k, v in options.items() if k in DATABASE_OPTIONS}
    store = {k: v for k, v in options.items() if k not in DATABASE_OPTIONS}
    return database, store


class OwnedOpeners(OwnedResource):
    """``from_url`` for a store whose constructor borrows a client or database."""

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Self:
        """Open a store that owns its client for ``url`` (``mongodb://host/db``, ``mongodb+srv://host/db``).

        ``options`` are the database's (``database``, ``collection_prefix`` or ``collections``,
        ``client_options``: keyword arguments for ``AsyncMongoClient``) and the store's own
        keyword arguments. Nothing is opened until first use; ``aclose()`` (or ``async with``)
        closes the client.

        Raises:
            ValueError: The URL is not a MongoDB URL or an option is invalid.
        """
        database_options, store_options = split_options(options)
        database = database_from_options(url, database_options)
        store: Self = cast(Any, cls)(database, **store_options)  # every store's constructor borrows a database
        store._adopt(database, owned=True)
        return store
