"""``RedisSessionStore``: session snapshots as Redis hashes."""

from __future__ import annotations

from typing import Unpack

from agent_stores.core import ObjectSessionStore
from agent_stores.core.files import ObjectStoreOptions

from ._connect import Connectable, RedisStore
from ._driver import RedisObjectDriver

__all__ = ["RedisSessionStore"]


class RedisSessionStore(RedisStore, ObjectSessionStore):
    """The framework's ``SessionStore`` on Redis: one hash per session under ``prefix``.

    Snapshots use ``FileSessionStore``'s JSON envelope, so they move between stores
    unchanged. Every ``get`` returns an independent copy and is one ``HMGET``; ``set`` is one
    script and last-writer-wins; a snapshot that is not JSON is moved aside to
    ``<key>.<uuid>.corrupt`` and reported as a ``ValueError`` (``CorruptRecordError``), so a
    retry starts clean. Borrowing and owning the client work as in ``RedisHistoryProvider``.

    Security posture:
        Snapshots (session state included) are stored as plaintext JSON in Redis memory (and
        its persistence files): protect the server with TLS and AUTH/ACL as described on
        ``RedisHistoryProvider``. Session ids map injectively to keys, so no id can reach
        another session's key.

    Args:
        client: The ``redis.asyncio`` client or shared connection to borrow.
        key_prefix: With a bare client, as in :class:`RedisHistoryProvider`.
        shards: With a bare client, as in :class:`RedisHistoryProvider`.
        **options: ``prefix`` and ``tenant``, as :class:`~agent_stores.core.ObjectSessionStore`
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
        super().__init__(RedisObjectDriver(self.connection), **options)
