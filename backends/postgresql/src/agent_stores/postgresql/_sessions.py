"""``PostgreSQLSessionStore``: session snapshots as rows of a PostgreSQL table."""

from __future__ import annotations

from typing import Unpack

from agent_stores.core import ObjectSessionStore
from agent_stores.core.files import ObjectStoreOptions

from ._connect import Connectable, PostgreSQLStore
from ._driver import PostgreSQLObjectDriver

__all__ = ["PostgreSQLSessionStore"]


class PostgreSQLSessionStore(PostgreSQLStore, ObjectSessionStore):
    """The framework's ``SessionStore`` on PostgreSQL: one row per session under ``prefix``.

    Snapshots use ``FileSessionStore``'s JSON envelope, so they move between stores
    unchanged. Every ``get`` returns an independent copy; ``set`` is one statement and
    last-writer-wins; a snapshot that is not JSON is moved aside to ``<key>.<uuid>.corrupt``
    and reported as a ``ValueError`` (``CorruptRecordError``), so a retry starts clean.
    Borrowing and owning the connection work as in ``PostgreSQLHistoryProvider``.

    Security posture:
        Snapshots (session state included) are stored as plaintext JSON in the database:
        protect it as you would the sessions. Session ids map injectively to keys, so no id
        can reach another session's row; all SQL is parameterised.

    Args:
        client: The psycopg connection or pool, or the shared database, to borrow.
        **options: ``prefix`` and ``tenant``, as :class:`~agent_stores.core.ObjectSessionStore`
            documents them.
    """

    def __init__(self, client: Connectable, **options: Unpack[ObjectStoreOptions]) -> None:
        self.database = self._connect(client)
        super().__init__(PostgreSQLObjectDriver(self.database), **options)
