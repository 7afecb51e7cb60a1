"""``RedisBackend``: the ``redis://``, ``rediss://``, ``valkey://`` and ``redis+cluster://`` backend."""

from __future__ import annotations

from typing import Any

from ._connection import RedisConnection
from ._files import RedisAgentFileStore
from ._history import RedisHistoryProvider
from ._sessions import RedisSessionStore

__all__ = ["RedisBackend"]


class RedisBackend:
    """All three Redis stores on ONE client (a server, a cluster or Valkey).

    ``open_stores("redis://localhost:6379/0")`` builds this through the
    ``agent_stores.backends`` entry point. Nothing connects until a store is first used;
    :meth:`aclose` closes the client, after which the stores handed out stop working.

    Args:
        url: ``redis://[[user]:password@]host[:port][/db]``, ``rediss://`` (TLS),
            ``valkey://``, ``redis+cluster://host:port[,host:port...]``; query options as in
            :func:`~agent_stores.redis.parse_redis_url`.
        **options: The client's options (``socket_timeout``, ``retry``, ``ssl_ca_certs``...),
            ``key_prefix`` and ``shards``.

    Raises:
        ValueError: The URL is malformed or an option is unknown.
    """

    def __init__(self, url: str, **options: Any) -> None:
        self.connection = RedisConnection.from_url(url, **options)

    def history_provider(self, *, source_id: str, **options: Any) -> RedisHistoryProvider:
        """Return a history provider on the shared client; ``options`` as ``RedisHistoryProvider`` takes them."""
        return RedisHistoryProvider(self.connection, source_id=source_id, **options)

    def file_store(self, **options: Any) -> RedisAgentFileStore:
        """Return a file store on the shared client (files under ``files/``)."""
        return RedisAgentFileStore(self.connection, **options)

    def session_store(self, **options: Any) -> RedisSessionStore:
        """Return a session store on the shared client (snapshots under ``sessions/``)."""
        return RedisSessionStore(self.connection, **options)

    async def aclose(self) -> None:
        """Close the shared client."""
        await self.connection.aclose()

    def __repr__(self) -> str:
        return f"RedisBackend({self.connection!r})"
