"""agent-stores backend for Redis, Redis Cluster and Valkey: history, harness files and sessions.

::

    from agent_stores.redis import RedisHistoryProvider

    async with RedisHistoryProvider.from_url("redis://localhost:6379/0", max_messages=200) as history:
        ...

or borrow a client you configured (``RedisHistoryProvider(redis.asyncio.Redis(...))``), or every
store on one client: ``agent_stores.core.open_stores("redis+cluster://10.0.0.1:7000,10.0.0.2:7000")``.
"""

from ._backend import RedisBackend
from ._connection import (
    DEFAULT_KEY_PREFIX,
    DEFAULT_SHARDS,
    DEFAULT_TIMEOUT,
    RedisClient,
    RedisConnection,
    RedisURL,
    parse_redis_url,
)
from ._driver import RedisLogDriver, RedisObjectDriver
from ._files import RedisAgentFileStore
from ._history import RedisHistoryProvider
from ._sessions import RedisSessionStore

__all__ = [
    "DEFAULT_KEY_PREFIX",
    "DEFAULT_SHARDS",
    "DEFAULT_TIMEOUT",
    "RedisAgentFileStore",
    "RedisBackend",
    "RedisClient",
    "RedisConnection",
    "RedisHistoryProvider",
    "RedisLogDriver",
    "RedisObjectDriver",
    "RedisSessionStore",
    "RedisURL",
    "parse_redis_url",
]
