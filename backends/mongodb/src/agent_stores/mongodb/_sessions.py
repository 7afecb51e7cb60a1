"""``MongoDBSessionStore``: session snapshots as MongoDB documents."""

from __future__ import annotations

from typing import Unpack

from agent_stores.core import ObjectSessionStore
from agent_stores.core.files import ObjectStoreOptions

from ._connect import Connectable, MongoDBStore
from ._object_driver import MongoDBObjectDriver

__all__ = ["MongoDBSessionStore"]


class MongoDBSessionStore(MongoDBStore, ObjectSessionStore):
    """The framework's ``SessionStore`` on MongoDB: one document per session, ``_id`` = ``prefix`` + key.

    Snapshots use ``FileSessionStore``'s JSON envelope, so they move between stores unchanged.
    Every document carries a version (a fresh ObjectId per write) for compare-and-set; ``set``
    is one replace and last-writer-wins; every ``get`` returns an independent copy; a snapshot
    that is not JSON is moved aside to ``<key>.<uuid>.corrupt`` and reported as a
    ``ValueError`` (``CorruptRecordError``), so a retry starts clean. Borrowing and owning the
    client work as in ``MongoDBHistoryProvider``.

    Security posture:
        Snapshots (session state included) are stored as plaintext JSON in the database:
        protect it as for the history provider. Session ids map injectively to keys and are
        only string values in queries, so no id can reach another session's document.

    Args:
        connection: The client, database or shared :class:`MongoDBDatabase` to borrow.
        **options: ``prefix`` and ``tenant``, as :class:`~agent_stores.core.ObjectSessionStore`
            documents them.
    """

    def __init__(self, connection: Connectable, **options: Unpack[ObjectStoreOptions]) -> None:
        self.database = self._connect(connection)
        super().__init__(MongoDBObjectDriver(self.database), **options)
