"""``PostgreSQLHistoryProvider``: chat history in PostgreSQL, one indexed row per message."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Unpack

from agent_stores.core import LogHistoryProvider
from agent_stores.core.history import HistoryOptions

from ._connect import Connectable, PostgreSQLStore
from ._driver import PostgreSQLLogDriver

__all__ = ["PostgreSQLHistoryProvider"]


class PostgreSQLHistoryProvider(PostgreSQLStore, LogHistoryProvider):
    """The framework's ``HistoryProvider`` on PostgreSQL, through psycopg 3.

    Stores each message verbatim (the JSON of ``Message.to_dict()``, byte for byte what a
    ``FileHistoryProvider`` line holds) in ``agent_stores_messages``, and per session one row of
    ``agent_stores_logs`` with its length, version and expiry. A save stores exactly what
    ``InMemoryHistoryProvider`` would and is atomic across connections and processes: one call
    of a function that checks the log's version on its locked row and inserts the batch (one
    round trip per save; a save to a session this provider has not written yet checks the
    stored tail in the same call, see ``agent_stores.core.unseen``, and needs a second only when
    the batch overlaps what is stored). A load is one indexed query; with ``max_messages`` it reads only the
    newest N rows. Admin calls are indexed statements, never a scan of other sessions.

    ``PostgreSQLHistoryProvider(client)`` borrows a ``psycopg.AsyncConnection`` (autocommit),
    an ``AsyncConnectionPool`` or a :class:`PostgreSQLDatabase` shared with other stores, and
    never closes it. :meth:`from_url` opens and owns a pool, closed by :meth:`aclose` or
    ``async with``. No statement is prepared on the server and no session state is used, so a
    transaction-mode pooler (PgBouncer) may sit in between.

    Security posture:
        Messages are stored as plaintext JSON in the database: protect it (roles, TLS with
        ``sslmode=verify-full``, disk encryption) as you would the conversations. Keys are
        derived injectively from the tenant, ``namespace``, ``source_id`` and the session id,
        so no id can reach another session's rows; tenants sharing one database are isolated
        by their root (``tenants/<tenant>/``), but any role that can read the tables reads
        every tenant. All SQL is parameterised; ids never become SQL text.

    Args:
        client: The psycopg connection or pool, or the shared database, to borrow.
        clock: Seconds since the epoch, for expiry (tests pass a fake one).
        **options: The options of every history provider (``source_id``, ``namespace``,
            ``tenant``, ``max_messages``, ``ttl``, ``skip_excluded``, ``cache_bytes``...), as
            :class:`~agent_stores.core.LogHistoryProvider` documents them. Expired rows are
            removed when the session is written again or by :meth:`purge_expired`.

    Raises:
        TypeError: ``client`` is not a psycopg connection or pool or a ``PostgreSQLDatabase``.
        ValueError: An option is invalid. A borrowed connection not in autocommit mode is a
            ``ValueError`` on first use.
    """

    def __init__(
        self, client: Connectable, *, clock: Callable[[], float] = time.time, **options: Unpack[HistoryOptions]
    ) -> None:
        self.database = self._connect(client)
        super().__init__(PostgreSQLLogDriver(self.database, clock=clock), **options)
