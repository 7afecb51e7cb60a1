"""``MongoDBAgentFileStore``: harness files as MongoDB documents, with search push-down."""

from __future__ import annotations

from typing import Unpack

from agent_stores.core import ObjectAgentFileStore, plain_literal
from agent_stores.core.files import ObjectStoreOptions

from ._connect import Connectable, MongoDBStore
from ._object_driver import MongoDBObjectDriver

__all__ = ["MongoDBAgentFileStore"]


class MongoDBAgentFileStore(MongoDBStore, ObjectAgentFileStore):
    """The framework's ``AgentFileStore`` on MongoDB: one document per file, ``_id`` = ``prefix`` + path.

    Paths follow the framework's rules (``_normalize_relative_path``); names are case
    sensitive; ``create_directory`` records an empty directory (a marker document ``<dir>/``);
    exclusive create (``overwrite=False``) is an insert that the unique ``_id`` index decides,
    atomic across processes (the loser gets ``FileExistsError``). Listing is a range query on
    ``_id``. ``search`` narrows candidates in one query — the key range, an anchored escaped
    ``$regex`` on the key (direct children only unless recursive) and, for a plain ASCII
    literal pattern, a case-insensitive ``$regex`` on the content of plain ASCII files — and
    the base class then reads, scans and numbers lines as the framework does. A file larger
    than MongoDB's 16 MiB document limit is a ``ValueError`` before anything is written.
    Borrowing and owning the client work as in ``MongoDBHistoryProvider``.

    Security posture:
        Content is stored as plaintext in the database; protect it with authentication, TLS
        and roles as for the history provider (``readWrite`` on the database). Every key
        starts with ``prefix`` and no path can escape it (``..`` and rooted paths are
        rejected); paths are string values in queries, and patterns pushed into ``$regex``
        are escaped. Tenants sharing a collection are isolated by their roots (``tenants/<tenant>/``).

    Args:
        connection: The client, database or shared :class:`MongoDBDatabase` to borrow.
        **options: ``prefix`` and ``tenant``, as :class:`~agent_stores.core.ObjectAgentFileStore`
            documents them.
    """

    def __init__(self, connection: Connectable, **options: Unpack[ObjectStoreOptions]) -> None:
        self.database = self._connect(connection)
        self.objects = MongoDBObjectDriver(self.database)
        super().__init__(self.objects, **options)

    async def _candidate_keys(self, base: str, regex_pattern: str, *, recursive: bool) -> list[str]:
        """Narrow the search in one query: key range and depth, and a literal filter (``plain_literal``)."""
        return await self.objects.find_keys(base, recursive=recursive, literal=plain_literal(regex_pattern))
