"""``MongoDBHistoryProvider``: chat history in MongoDB, one document per saved batch of messages."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Unpack

from agent_stores.core import LogHistoryProvider
from agent_stores.core.history import HistoryOptions

from ._connect import Connectable, MongoDBStore
from ._log_driver import MongoDBLogDriver

__all__ = ["MongoDBHistoryProvider"]


class MongoDBHistoryProvider(MongoDBStore, LogHistoryProvider):
    """The framework's ``HistoryProvider`` on MongoDB, through pymongo's native ``AsyncMongoClient``.

    Stores each message verbatim (the JSON of ``Message.to_dict()``, byte for byte what a
    ``FileHistoryProvider`` line holds). Each save that stores messages is ONE batch document,
    inserted whole or not at all and claimed by a unique index on (session, incarnation,
    sequence number), so concurrent writers in any number of processes never lose, double or
    split a save, and no multi-document transaction is needed (a standalone server works). A
    save stores exactly what ``InMemoryHistoryProvider`` would (the framework's
    ``filter_new_messages`` decides). A save is one write command (the batch, then the
    session's head check, run in order by the server) and a load one indexed query (two the
    first time a process reads a session); with ``max_messages`` only the newest batches are
    read. See :class:`MongoDBLogDriver` for the design.

    ``MongoDBHistoryProvider(client)`` borrows an ``AsyncMongoClient`` (its default database,
    else ``"agent_stores"``), an ``AsyncDatabase``, or a :class:`MongoDBDatabase` shared with
    other stores, and never closes it. :meth:`from_url` creates and owns a client, closed by
    :meth:`aclose` or ``async with``.

    Security posture:
        Messages are stored as plaintext JSON (BSON binary) in the database: protect it with
        MongoDB authentication and role-based access, TLS on the wire (``tls=true`` in the URL,
        always on for ``mongodb+srv``), and encryption at rest where the deployment offers it.
        The stores need ``find``, ``insert``, ``update``, ``remove`` and ``createIndex`` on
        their collections (the built-in ``readWrite`` role on the database covers them).
        Keys are derived injectively from the tenant, ``namespace``, ``source_id`` and the
        session id and are only ever used as string values in queries, never as field names or
        operators, so no id can reach another session's documents or inject a query. Tenants
        sharing a database are isolated by their roots (``tenants/<tenant>/``); anyone with
        read access to the collections reads every tenant.

    Args:
        connection: The client, database or shared :class:`MongoDBDatabase` to borrow.
        clock: Seconds since the epoch, for expiry (tests pass a fake one).
        **options: The options of every history provider (``source_id``, ``namespace``,
            ``tenant``, ``max_messages``, ``ttl``, ``skip_excluded``, ``cache_bytes``...), as
            :class:`~agent_stores.core.LogHistoryProvider` documents them. An expired session
            reads as empty at once (exact to the millisecond); MongoDB's TTL monitor removes
            its head within about a minute, and its message documents go with
            :meth:`purge_expired` (schedule it) or with the next save to the session.

    Raises:
        TypeError: ``connection`` is not an ``AsyncMongoClient``, ``AsyncDatabase`` or ``MongoDBDatabase``.
        ValueError: An option is invalid; on save, a batch that would exceed MongoDB's 16 MiB
            document limit.
        StoreUnavailableError: The server cannot be reached within the client's server selection timeout.
    """

    def __init__(
        self, connection: Connectable, *, clock: Callable[[], float] = time.time, **options: Unpack[HistoryOptions]
    ) -> None:
        self.database = self._connect(connection)
        super().__init__(MongoDBLogDriver(self.database, clock=clock), **options)
