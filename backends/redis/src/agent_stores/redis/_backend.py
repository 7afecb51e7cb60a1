"""``RedisBackend``: the ``redis://``, ``rediss://``, ``valkey://`` and ``redis+cluster://`` backend, declared."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from agent_stores.core import ConnectedBackend, Connector

from ._connect import CONNECTOR
from ._connection import RedisConnection
from ._driver import RedisLogDriver, RedisObjectDriver
from ._files import RedisAgentFileStore
from ._history import RedisHistoryProvider
from ._sessions import RedisSessionStore

__all__ = ["RedisBackend"]


class RedisBackend(ConnectedBackend[RedisConnection]):
    """All Redis stores on ONE client (a server, a cluster or Valkey).

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

    connector: ClassVar[Connector[Any]] = CONNECTOR
    history_type = RedisHistoryProvider
    file_store_type = RedisAgentFileStore
    session_store_type = RedisSessionStore
    object_driver_type = RedisObjectDriver
    log_driver_type = RedisLogDriver
    #: Redis removes an expired session's keys itself (``PEXPIRE``).
    capabilities: ClassVar[Mapping[str, Mapping[str, Any]]] = {"log_driver": {"native_expiry": True}}

    def __repr__(self) -> str:
        return f"RedisBackend({self.handle!r})"
