"""``RedisHistoryProvider``: chat history in Redis lists, one atomic script per save."""

from __future__ import annotations

from typing import Unpack

from agent_stores.core import LogHistoryProvider
from agent_stores.core.history import HistoryOptions

from ._connect import Connectable, RedisStore
from ._driver import RedisLogDriver

__all__ = ["RedisHistoryProvider"]


class RedisHistoryProvider(RedisStore, LogHistoryProvider):
    """The framework's ``HistoryProvider`` on Redis, Redis Cluster or Valkey, through ``redis.asyncio``.

    Stores each message verbatim (the JSON of ``Message.to_dict()``, byte for byte what a
    ``FileHistoryProvider`` line holds) as one element of a Redis list per session, with a
    parallel list of identity digests for de-duplication. A save stores exactly what
    ``InMemoryHistoryProvider`` would (the framework's ``filter_new_messages`` decides) and is
    atomic across clients and processes: it is one registered Lua script (version check,
    append, TTL refresh, session index), so a steady conversation costs one ``EVALSHA`` per
    save. A load is one ``LRANGE`` (the newest N with ``max_messages``). A script cache
    flushed under us (``NOSCRIPT`` after a restart or failover) costs one ``EVAL`` of the
    script's text, which caches it again.
    Every key of one session shares a hash tag, so all of this works on a cluster.

    ``RedisHistoryProvider(client)`` borrows a ``redis.asyncio.Redis`` or ``RedisCluster``
    (either ``decode_responses``) or a :class:`RedisConnection` shared with other stores, and
    never closes it; :meth:`from_url` creates and owns a client (finite timeouts, retries
    with jittered backoff), closed by :meth:`aclose` or ``async with``.

    Security posture:
        Messages are stored as plaintext JSON in Redis memory (and in its RDB/AOF files when
        persistence is on): anyone who can run commands on the server reads them. Use
        ``rediss://`` for TLS on the wire, a password or an ACL user (``redis://user:pass@...``)
        limited to the key prefix (``~agent-stores:*`` does not match hash-tagged keys: allow
        ``~{agent-stores:*``) and the commands used (``EVALSHA``, ``SCRIPT LOAD``, ``LRANGE``,
        ``LLEN``, ``HGET``, ``HMGET``). Keys are derived injectively from the tenant,
        ``namespace``, ``source_id`` and the session id, so no id can reach another session's
        keys; tenants (``tenants/<tenant>/``) and ``key_prefix`` isolate applications sharing
        a server only as far as they cannot run commands of their own. Passwords never appear in errors or ``repr``.

    Args:
        client: The ``redis.asyncio`` client or shared connection to borrow.
        key_prefix: With a bare client: prefix of every key (default ``agent-stores:``).
        shards: With a bare client: index shards (default 16); see :class:`RedisConnection`.
        **options: The options of every history provider (``source_id``, ``namespace``,
            ``tenant``, ``max_messages``, ``ttl``, ``skip_excluded``, ``cache_bytes``...), as
            :class:`~agent_stores.core.LogHistoryProvider` documents them; with ``ttl`` every
            key of a session gets ``PEXPIRE`` on each save that stores messages.

    Raises:
        TypeError: ``client`` is not a ``redis.asyncio`` client or ``RedisConnection``.
        ValueError: An option is invalid.
    """

    def __init__(
        self,
        client: Connectable,
        *,
        key_prefix: str | None = None,
        shards: int | None = None,
        **options: Unpack[HistoryOptions],
    ) -> None:
        self.connection = self._connect(client, key_prefix=key_prefix, shards=shards)
        super().__init__(RedisLogDriver(self.connection), **options)
