"""``SQLiteHistoryProvider``: chat history in a SQLite database, one indexed row per message."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Unpack

from agent_stores.core import LogHistoryProvider
from agent_stores.core.history import HistoryOptions

from ._connect import Connectable, SQLiteStore
from ._driver import SQLiteLogDriver

__all__ = ["SQLiteHistoryProvider"]


class SQLiteHistoryProvider(SQLiteStore, LogHistoryProvider):
    """The framework's ``HistoryProvider`` on SQLite, through aiosqlite.

    Stores each message verbatim (the JSON of ``Message.to_dict()``, byte for byte what a
    ``FileHistoryProvider`` line holds) in ``agent_stores_messages``, and per session one row
    of ``agent_stores_logs`` with its length, version and expiry. A save stores exactly what
    ``InMemoryHistoryProvider`` would (the framework's ``filter_new_messages`` decides) and is
    atomic across connections and processes: it is one conditional ``INSERT`` (a steady
    conversation costs one statement, one thread hop, per save). A load is one indexed query;
    with ``max_messages`` it reads only the newest N rows. Admin calls (``count_messages``,
    ``delete_session``, ``list_sessions``, ``iter_sessions``, ``export_messages``,
    ``import_messages``, ``purge_expired``) are indexed statements, never a scan of other
    sessions.

    ``SQLiteHistoryProvider(connection)`` borrows an open ``aiosqlite.Connection`` (opened with
    ``isolation_level=None``; see :class:`SQLiteDatabase` for what it must satisfy) or a
    :class:`SQLiteDatabase` shared with other stores, and never closes it.
    :meth:`from_url` and :meth:`from_path` open and own their connection (WAL, a busy timeout,
    ``synchronous=NORMAL``), closed by :meth:`aclose` or ``async with``.

    Security posture:
        Messages are stored as plaintext JSON in the database file (and its ``-wal`` file). A
        file the stores create is ``0600`` (``file_mode`` to choose), an existing file keeps its
        mode; use disk encryption as you would for the conversations themselves. Keys are
        derived injectively from the tenant, ``namespace``, ``source_id`` and the session id,
        so no id can reach another session's rows; tenants sharing one file are isolated by
        their root (``tenants/<tenant>/``), but anyone who can open the file reads every
        tenant. All SQL is parameterised; ids never become SQL text.

    Args:
        connection: The aiosqlite connection or shared database to borrow.
        clock: Seconds since the epoch, for expiry (tests pass a fake one).
        **options: The options of every history provider (``source_id``, ``namespace``,
            ``tenant``, ``max_messages``, ``ttl``, ``skip_excluded``, ``cache_bytes``...), as
            :class:`~agent_stores.core.LogHistoryProvider` documents them. Expired rows are
            removed when the session is written again or by :meth:`purge_expired`.

    Raises:
        TypeError: ``connection`` is not an ``aiosqlite.Connection`` or ``SQLiteDatabase``.
        ValueError: An option is invalid. A borrowed connection not in autocommit mode is a
            ``ValueError`` on first use.
    """

    def __init__(
        self, connection: Connectable, *, clock: Callable[[], float] = time.time, **options: Unpack[HistoryOptions]
    ) -> None:
        self.database = self._connect(connection)
        super().__init__(SQLiteLogDriver(self.database, clock=clock), **options)
