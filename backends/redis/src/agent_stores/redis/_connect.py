"""The Redis connector: an owned connection from a URL, or one around your ``redis.asyncio`` client."""

from __future__ import annotations

from typing import Any, ClassVar, Final

from agent_stores.core import MUST_EXIST, ConnectedStore, Connector

from ._connection import RedisClient, RedisConnection

__all__ = ["CONNECTOR", "Connectable", "RedisConnector", "RedisStore"]

#: What a store's constructor takes: a ready ``redis.asyncio`` client or a shared connection.
Connectable = RedisClient | RedisConnection


class RedisConnector(Connector[RedisConnection]):
    """Opens :class:`RedisConnection` handles; every option no store takes is the client's.

    ``key_prefix`` and ``shards`` are the connection's; any other option a store does not take
    (``socket_timeout``, ``retry``, ``decode_responses``, ``ssl_ca_certs``, ...) goes to the
    ``redis.asyncio`` client, which refuses what it does not know. ``must_exist`` is accepted
    and changes nothing: a Redis database always exists, and reads create no key.
    """

    handle_type = RedisConnection
    options = frozenset({"key_prefix", "shards", MUST_EXIST})
    open_ended = True
    name = "Redis"

    def open(self, url: str, **options: Any) -> RedisConnection:
        """A connection owning a new client for ``redis://``, ``rediss://``, ``valkey://`` or ``redis+cluster://``."""
        options.pop(MUST_EXIST, None)
        return RedisConnection.from_url(url, **options)

    def borrow(self, client: Any, **options: Any) -> RedisConnection:
        """A connection around ``client`` (never closed), with ``key_prefix`` and ``shards``.

        Raises:
            TypeError: ``client`` is not a ``redis.asyncio`` client.
            ValueError: An option other than ``key_prefix`` and ``shards``, or an invalid one.
        """
        options.pop(MUST_EXIST, None)
        unknown = sorted(set(options) - self.options)
        if unknown:
            raise ValueError(f"{unknown} configure an owned client; a borrowed client is used as it is")
        return RedisConnection(client, **options)


CONNECTOR: Final = RedisConnector()


class RedisStore(ConnectedStore[RedisConnection]):
    """Borrow-or-own for the Redis stores (``from_url`` from the core)."""

    connector: ClassVar[Connector[Any]] = CONNECTOR
