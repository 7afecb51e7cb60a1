"""``RedisAgentFileStore``: harness files as Redis hashes, with search narrowed on the server."""

from __future__ import annotations

from typing import Unpack

from agent_stores.core import ObjectAgentFileStore, plain_literal
from agent_stores.core.files import ObjectStoreOptions

from ._connect import Connectable, RedisStore
from ._driver import RedisObjectDriver

__all__ = ["RedisAgentFileStore"]


class RedisAgentFileStore(RedisStore, ObjectAgentFileStore):
    """The framework's ``AgentFileStore`` on Redis: one hash per file, keyed by ``prefix`` + path.

    Paths follow the framework's rules (``_normalize_relative_path``); names are case
    sensitive and may be long (Redis keys go to 512 MB); ``create_directory`` records an empty
    directory; exclusive create (``overwrite=False``) is one script that writes only if the
    key is absent, atomic across clients and processes (the loser gets ``FileExistsError``).
    Every operation is one round trip; listing is exact and ordered through per-shard sorted
    sets (no ``KEYS``/``SCAN``). ``search`` narrows candidates on the server — by key range,
    by depth when not recursive, and, when the pattern is a plain ASCII literal, to files that
    contain it ignoring case (files that are not plain ASCII are always kept) — and the base
    class then reads, scans and numbers lines as the framework does. Borrowing and owning the
    client work as in ``RedisHistoryProvider``.

    Security posture:
        Content is stored as plaintext in Redis memory (and its persistence files): anyone
        who can run commands on the server reads it. Use TLS (``rediss://``) and AUTH/ACL as
        described on ``RedisHistoryProvider``. Every key starts with ``prefix`` and no path
        can escape it (``..`` and rooted paths are rejected); paths are never glob patterns.
        Tenants sharing a server are isolated by their roots (``tenants/<tenant>/``).

    Args:
        client: The ``redis.asyncio`` client or shared connection to borrow.
        key_prefix: With a bare client, as in :class:`RedisHistoryProvider`.
        shards: With a bare client, as in :class:`RedisHistoryProvider`.
        **options: ``prefix`` and ``tenant``, as :class:`~agent_stores.core.ObjectAgentFileStore`
            documents them.
    """

    def __init__(
        self,
        client: Connectable,
        *,
        key_prefix: str | None = None,
        shards: int | None = None,
        **options: Unpack[ObjectStoreOptions],
    ) -> None:
        self.connection = self._connect(client, key_prefix=key_prefix, shards=shards)
        self.objects = RedisObjectDriver(self.connection)
        super().__init__(self.objects, **options)

    async def _candidate_keys(self, base: str, regex_pattern: str, *, recursive: bool) -> list[str]:
        """Narrow the search on the server: key range, depth, and a literal filter (``plain_literal``)."""
        return await self.objects.find_keys(base, recursive=recursive, literal=plain_literal(regex_pattern))
