"""``MongoDBHistoryProvider``: chat history in MongoDB, one document per saved batch of messages."""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from agent_stores.core import LogHistoryProvider

from ._connect import Connectable, MongoDBStore
from ._driver import MongoDBLogDriver

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
        Keys are derived injectively from ``namespace``, ``source_id`` and the session id and
        are only ever used as string values in queries, never as field names or operators, so
        no id can reach another session's documents or inject a query. ``namespace`` isolates
        tenants sharing a database; anyone with read access to the collections reads every tenant.

    Args:
        connection: The client, database or shared :class:`MongoDBDatabase` to borrow.
        source_id: Provider id; part of every key, so two providers never share history.
        namespace: Tenant or application prefix; isolation is total.
        max_messages: Load only the newest N messages; the window never starts with a tool
            result or approval response whose request lies outside it.
        ttl: Sliding expiry (seconds or ``timedelta``): a session expires this long after the
            last save that stored messages, then reads as empty (exact to the millisecond);
            a later save starts a fresh history. MongoDB's TTL monitor removes the expired
            session's head within about a minute; its message documents are removed by
            :meth:`purge_expired` (schedule it), or at once by a save to the session that
            comes before the monitor.
        skip_excluded: Omit messages whose ``additional_properties["_excluded"]`` is truthy.
        clock: Seconds since the epoch, for expiry (tests pass a fake one).
        **kwargs: ``load_messages``, ``store_inputs``, ``store_context_messages``,
            ``store_context_from``, ``store_outputs`` as in ``HistoryProvider``.

    Raises:
        TypeError: ``connection`` is not an ``AsyncMongoClient``, ``AsyncDatabase`` or ``MongoDBDatabase``.
        ValueError: ``source_id`` is empty, ``max_messages`` is not a positive int, or ``ttl``
            is not positive; on save, a batch that would exceed MongoDB's 16 MiB document limit.
        StoreUnavailableError: The server cannot be reached within the client's server selection timeout.
    """

    def __init__(
        self,
        connection: Connectable,
        *,
        source_id: str = "history",
        namespace: str = "",
        max_messages: int | None = None,
        ttl: float | timedelta | None = None,
        skip_excluded: bool = False,
        clock: Callable[[], float] = time.time,
        **kwargs: Any,
    ) -> None:
        self.database = self._connect(connection)
        super().__init__(
            MongoDBLogDriver(self.database, clock=clock),
            source_id=source_id,
            namespace=namespace,
            max_messages=max_messages,
            ttl=ttl,
            skip_excluded=skip_excluded,
            **kwargs,
        )
