"""``PostgreSQLAgentFileStore``: harness files as rows of a PostgreSQL table, with search push-down."""

from __future__ import annotations

from typing import Unpack

from agent_stores.core import ObjectAgentFileStore, plain_literal
from agent_stores.core.files import ObjectStoreOptions

from ._connect import Connectable, PostgreSQLStore
from ._driver import PostgreSQLObjectDriver

__all__ = ["PostgreSQLAgentFileStore"]


class PostgreSQLAgentFileStore(PostgreSQLStore, ObjectAgentFileStore):
    """The framework's ``AgentFileStore`` on PostgreSQL: one row per file, keyed by ``prefix`` + path.

    Paths follow the framework's rules (``_normalize_relative_path``); names are case
    sensitive and list in code-point order (``COLLATE "C"``) whatever the database's
    collation; ``create_directory`` records an empty directory; exclusive create
    (``overwrite=False``) is one ``INSERT ... ON CONFLICT DO NOTHING``, atomic across
    connections and processes (the loser gets ``FileExistsError``). Every operation is one
    statement. ``search`` narrows candidates in SQL — by key range, by depth when not
    recursive, and, when the pattern is a plain ASCII literal, to files that contain it
    ignoring case (files that are not plain ASCII are always kept) — and the base class then
    reads, scans and numbers lines as the framework does. Borrowing and owning the connection
    work as in ``PostgreSQLHistoryProvider``.

    Security posture:
        Content is stored as plaintext in the database: protect it as you would the files.
        Every key starts with ``prefix`` and no path can escape it (``..`` and rooted paths
        are rejected); all SQL is parameterised. Tenants sharing one database are isolated
        by their roots (``tenants/<tenant>/``).

    Args:
        client: The psycopg connection or pool, or the shared database, to borrow.
        **options: ``prefix`` and ``tenant``, as :class:`~agent_stores.core.ObjectAgentFileStore`
            documents them.
    """

    def __init__(self, client: Connectable, **options: Unpack[ObjectStoreOptions]) -> None:
        self.database = self._connect(client)
        self.objects = PostgreSQLObjectDriver(self.database)
        super().__init__(self.objects, **options)

    async def _candidate_keys(self, base: str, regex_pattern: str, *, recursive: bool) -> list[str]:
        """Narrow the search in one statement: key range, depth, and a literal filter (``plain_literal``)."""
        return await self.objects.find_keys(base, recursive=recursive, literal=plain_literal(regex_pattern))
