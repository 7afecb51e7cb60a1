"""``RedisHistoryProvider``: chat history in Redis lists, one atomic script per save."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from agent_stores.core import LogHistoryProvider

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
        ``LLEN``, ``HGET``, ``HMGET``). Keys are derived injectively from ``namespace``,
        ``source_id`` and the session id, so no id can reach another session's keys;
        ``namespace`` (or ``key_prefix``) isolates tenants sharing a server only as far as
        they cannot run commands of their own. Passwords never appear in errors or ``repr``.

    Args:
        client: The ``redis.asyncio`` client or shared connection to borrow.
        source_id: Provider id; part of every key, so two providers never share history.
        namespace: Tenant or application prefix; isolation is total.
        max_messages: Load only the newest N messages; the window never starts with a tool
            result or approval response whose request lies outside it.
        ttl: Sliding expiry (seconds or ``timedelta``): every key of a session gets
            ``PEXPIRE`` on each save that stores messages, so Redis removes the session that
            long after its last save; a later save starts a fresh history.
        skip_excluded: Omit messages whose ``additional_properties["_excluded"]`` is truthy.
        key_prefix: With a bare client: prefix of every key (default ``agent-stores:``).
        shards: With a bare client: index shards (default 16); see :class:`RedisConnection`.
        **kwargs: ``load_messages``, ``store_inputs``, ``store_context_messages``,
            ``store_context_from``, ``store_outputs`` as in ``HistoryProvider``.

    Raises:
        TypeError: ``client`` is not a ``redis.asyncio`` client or ``RedisConnection``.
        ValueError: ``source_id`` is empty, ``max_messages`` is not a positive int, or ``ttl``
            is not positive.
    """

    def __init__(
        self,
        client: Connectable,
        *,
        source_id: str = "history",
        namespace: str = "",
        max_messages: int | None = None,
        ttl: float | timedelta | None = None,
        skip_excluded: bool = False,
        key_prefix: str | None = None,
        shards: int | None = None,
        **kwargs: Any,
    ) -> None:
        self.connection = self._connect(client, key_prefix=key_prefix, shards=shards)
        super().__init__(
            RedisLogDriver(self.connection),
            source_id=source_id,
            namespace=namespace,
            max_messages=max_messages,
            ttl=ttl,
            skip_excluded=skip_excluded,
            **kwargs,
        )
