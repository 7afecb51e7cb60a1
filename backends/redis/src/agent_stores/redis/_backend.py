"""``RedisBackend``: the ``redis://``, ``rediss://``, ``valkey://`` and ``redis+cluster://`` backend, declared."""

from __future__ import annotations

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

    def conformance_capabilities(self) -> dict[str, dict[str, Any]]:
        """The core's adapters (see ``ConnectedBackend``), with this backend's history, files and drivers."""
        return {
            **super().conformance_capabilities(),
            "history": {
                "windowed_load": True,
                "skip_excluded": True,
                "concurrent_instances": True,
                "multi_process": True,
                "admin": True,
                "ttl": True,
            },
            "files": {
                "case_sensitive": True,
                "empty_directories": True,
                "atomic_create_across_instances": True,
                "rejects_file_directory_conflicts": False,
                "long_names": True,
            },
            "log_driver": {"ttl": True, "native_expiry": True, "concurrent_instances": True},
            "object_driver": {"atomic_create_across_instances": True, "atomic_if_version_across_instances": True},
        }

    def __repr__(self) -> str:
        return f"RedisBackend({self.handle!r})"
