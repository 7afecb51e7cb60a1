"""The MongoDB connector: an owned client from a URL, or a database around your pymongo client."""

from __future__ import annotations

from typing import Any, ClassVar, Final

from pymongo import AsyncMongoClient
from pymongo.asynchronous.database import AsyncDatabase

from agent_stores.core import MUST_EXIST, ConnectedStore, Connector

from ._database import CollectionNames, Document, MongoDBDatabase

__all__ = ["CONNECTOR", "DATABASE_OPTIONS", "Connectable", "MongoDBConnector", "MongoDBStore"]

#: Options of the database handle: which database and collections, the owned client's keywords,
#: and ``must_exist`` (the database must hold the stores' collections; nothing is created).
DATABASE_OPTIONS: Final = frozenset({"database", "collections", "collection_prefix", "client_options", MUST_EXIST})

#: What a store's constructor takes: a pymongo async client or database, or a shared :class:`MongoDBDatabase`.
Connectable = AsyncMongoClient[Document] | AsyncDatabase[Document] | MongoDBDatabase


def _collections(options: dict[str, Any]) -> CollectionNames | None:
    collections: CollectionNames | None = options.pop("collections", None)
    prefix = options.pop("collection_prefix", None)
    if prefix is not None:
        if collections is not None:
            raise ValueError("give collections or collection_prefix, not both")
        collections = CollectionNames.with_prefix(prefix)
    return collections


class MongoDBConnector(Connector[MongoDBDatabase]):
    """Opens :class:`MongoDBDatabase` handles: owned from a URL, or around a client you keep."""

    handle_type = MongoDBDatabase
    options = DATABASE_OPTIONS
    name = "MongoDB"

    def open(self, url: str, **options: Any) -> MongoDBDatabase:
        """A database owning a new ``AsyncMongoClient`` for ``mongodb://`` or ``mongodb+srv://`` (no I/O).

        Raises:
            ValueError: Not a MongoDB URL, or both ``collections`` and ``collection_prefix``.
        """
        collections = _collections(options)
        database = MongoDBDatabase.from_url(
            url, database=options.get("database"), collections=collections, client_options=options.get("client_options")
        )
        database.must_exist = bool(options.get(MUST_EXIST, False))
        return database

    def borrow(self, client: Any, **options: Any) -> MongoDBDatabase:
        """A database around ``client`` (an ``AsyncMongoClient`` or ``AsyncDatabase``, never closed).

        Raises:
            TypeError: ``client`` is neither (a Motor client is refused).
            ValueError: ``client_options`` (they configure an owned client), or both
                ``collections`` and ``collection_prefix``.
        """
        if "client_options" in options:
            raise ValueError("client_options configure an owned client; a borrowed client is used as it is")
        collections = _collections(options)
        database = MongoDBDatabase(client, database=options.get("database"), collections=collections)
        database.must_exist = bool(options.get(MUST_EXIST, False))
        return database


CONNECTOR: Final = MongoDBConnector()


class MongoDBStore(ConnectedStore[MongoDBDatabase]):
    """Borrow-or-own for the MongoDB stores (``from_url`` from the core)."""

    connector: ClassVar[Connector[Any]] = CONNECTOR
