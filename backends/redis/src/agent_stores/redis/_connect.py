"""What the Redis stores accept as their client, and ``from_url`` for stores that own one."""

from __future__ import annotations

from typing import Any, Final, Self, cast

from agent_stores.core._lifecycle import OwnedResource

from ._connection import RedisClient, RedisConnection

__all__ = ["CONNECTION_OPTIONS", "Connectable", "OwnedOpeners", "as_connection"]

#: Keyword options of ``from_url`` that configure the shared connection rather than the store.
CONNECTION_OPTIONS: Final = frozenset({"key_prefix", "shards"})

#: What a store's constructor borrows: a ready ``redis.asyncio`` client or a shared connection.
Connectable = RedisClient | RedisConnection

# Store keyword arguments: everything else given to from_url is the client's.
_STORE_OPTIONS: Final = frozenset(
    {
        "source_id",
        "namespace",
        "max_messages",
        "ttl",
        "skip_excluded",
        "prefix",
        "load_messages",
        "store_inputs",
        "store_context_messages",
        "store_context_from",
        "store_outputs",
    }
)


def as_connection(client: Connectable, *, key_prefix: str | None = None, shards: int | None = None) -> RedisConnection:
    """Return the connection a store runs on; a bare client is wrapped (and still borrowed).

    Raises:
        TypeError: ``client`` is neither a ``redis.asyncio`` client nor a ``RedisConnection``.
        ValueError: ``key_prefix``/``shards`` are given with a ``RedisConnection`` (it has its own).
    """
    if isinstance(client, RedisConnection):
        if key_prefix is not None or shards is not None:
            raise ValueError("key_prefix and shards belong to the RedisConnection; set them there")
        return client
    options: dict[str, Any] = {}
    if key_prefix is not None:
        options["key_prefix"] = key_prefix
    if shards is not None:
        options["shards"] = shards
    return RedisConnection(client, **options)


def split_options(options: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Split ``from_url`` options into (connection and client options, store options)."""
    store = {k: v for k, v in options.items() if k in _STORE_OPTIONS}
    connection = {k: v for k, v in options.items() if k not in _STORE_OPTIONS}
    return connection, store


class OwnedOpeners(OwnedResource):
    """``from_url`` for a store whose constructor borrows a client or connection."""

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Self:
        """Open a store that owns a new client for ``url``.

        URL forms: ``redis://[[user]:password@]host[:port][/db]``, ``rediss://`` (TLS),
        ``valkey://``, ``redis+cluster://host:port[,host:port...]``; see
        :func:`~agent_stores.redis.parse_redis_url`. ``options`` are the store's own keyword
        arguments, ``key_prefix`` and ``shards``, and the client's (``socket_timeout``,
        ``retry``, ``decode_responses``, ``ssl_ca_certs``, ...). Nothing connects until first
        use; ``aclose()`` (or ``async with``) closes the client.

        Raises:
            ValueError: The URL is malformed or an option is invalid.
        """
        connection_options, store_options = split_options(options)
        connection = RedisConnection.from_url(url, **connection_options)
        store: Self = cast(Any, cls)(connection, **store_options)  # every store's constructor borrows a connection
        store._adopt(connection, owned=True)
        return store
