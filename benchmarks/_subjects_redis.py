"""Redis rows of the history benchmark: the raw redis-py floor, ours (single server, cluster) and peers.

Servers come from the environment (``AGENT_STORES_REDIS_URL``, ``AGENT_STORES_REDIS_CLUSTER_URL``)
or are started here through ``agent_stores.testing.servers.redis``: a local ``redis-server``
(else a container) and a 3-primary local cluster, each on free loopback ports, stopped when the
run ends. Every subject opens its own keys (a fresh key prefix or session key) on the shared server.
"""

from __future__ import annotations

import contextlib
import os
import uuid
import warnings
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import msgspec
from agent_framework import Message

from _payloads import Turn, make_turns
from _subject_base import ProviderSubject, Subject

__all__ = [
    "REDIS_FLOOR",
    "SERVER_STARTERS",
    "AgentFrameworkRedis",
    "OpenAIAgentsRedis",
    "OursRedis",
    "OursRedisCluster",
    "OursSealedRedis",
    "OursSealedRedisCluster",
    "RawRedisPy",
    "server_url",
]

REDIS_FLOOR = "raw redis-py (floor)"
_SESSION = "bench-session"
_warmup_turn = make_turns(-1, 1)[0]

#: URLs of the servers started (or found) for this run, by kind; filled by ``history_bench.run``.
_URLS: dict[str, str] = {}


def server_url(kind: str) -> str:
    """The URL of this run's server of ``kind`` (``redis`` or ``redis-cluster``)."""
    return _URLS[kind]


@contextlib.contextmanager
def _first_server(kind: str, env_var: str, paths: Sequence[Callable[[], AbstractContextManager[Any]]]) -> Any:
    """Yield ``(url, description)`` from ``$env_var``, else the first path that starts a server."""
    url = os.environ.get(env_var)
    if url:
        _URLS[kind] = url
        yield url, f"the server at ${env_var}"
        return
    from agent_stores.testing.servers import ServerUnavailable

    reasons: list[str] = []
    for start in paths:
        with contextlib.ExitStack() as stack:
            try:
                server = stack.enter_context(start())
            except ServerUnavailable as err:
                reasons.append(str(err))
                continue
            _URLS[kind] = server.url
            try:
                yield server.url, f"{server.description} via {server.via}"
            finally:
                _URLS.pop(kind, None)
            return
    raise RuntimeError("; ".join(reasons) or "no way to start one")


def _redis() -> AbstractContextManager[Any]:
    from agent_stores.testing.servers.redis import REDIS_URL_ENV, local_redis, redis_container

    # The local binary first: a container's port proxy adds latency to every row alike, and noise.
    return _first_server("redis", REDIS_URL_ENV, [local_redis, redis_container])


def _cluster() -> AbstractContextManager[Any]:
    from agent_stores.testing.servers.redis import CLUSTER_URL_ENV, local_redis_cluster

    return _first_server("redis-cluster", CLUSTER_URL_ENV, [local_redis_cluster])


#: How ``history_bench`` starts each kind of server a subject names in ``server``.
SERVER_STARTERS: dict[str, Callable[[], AbstractContextManager[Any]]] = {"redis": _redis, "redis-cluster": _cluster}


def _prefix() -> str:
    return f"bench-{uuid.uuid4().hex[:12]}:"


def _messages(turns: Sequence[Turn]) -> list[Message]:
    return [m for turn in turns for m in turn.messages]


class RawRedisPy(Subject):
    """The floor: the same work on ``redis.asyncio`` with no abstraction, as a careful user writes it.

    Per turn: ``to_dict`` + msgspec encode, one ``RPUSH`` of both payloads (one round trip).
    Load: one ``LRANGE`` of the session, msgspec decode, ``Message.from_dict``.
    """

    name = REDIS_FLOOR
    floor = REDIS_FLOOR
    server = "redis"
    requires = ("redis",)

    async def open(self, directory: Path) -> None:
        from redis.asyncio import Redis

        self._encode = msgspec.json.Encoder().encode
        self._decode = msgspec.json.Decoder().decode
        self._client = Redis.from_url(server_url("redis"))
        prefix = _prefix()
        self._key = f"{prefix}{_SESSION}"
        await self._client.rpush(f"{prefix}warmup", *(self._encode(m.to_dict()) for m in _warmup_turn.messages))

    async def _push(self, messages: Sequence[Message]) -> None:
        await self._client.rpush(self._key, *(self._encode(m.to_dict()) for m in messages))

    async def save(self, turn: Turn) -> None:
        await self._push(turn.messages)

    async def load(self) -> int:
        payloads = await self._client.lrange(self._key, 0, -1)  # pyright: ignore[reportUnknownMemberType]
        return len([Message.from_dict(self._decode(p)) for p in payloads])

    async def prefill(self, turns: Sequence[Turn]) -> None:
        messages = _messages(turns)
        for start in range(0, len(messages), 1000):
            await self._push(messages[start : start + 1000])

    async def close(self) -> None:
        await self._client.delete(self._key)
        await self._client.aclose()


class OursRedis(ProviderSubject):
    """``agent_stores.redis.RedisHistoryProvider`` through ``open_stores("redis://...")``."""

    name = "ours: RedisHistoryProvider"
    floor = REDIS_FLOOR
    server = "redis"
    requires = ("agent_stores.redis:RedisHistoryProvider",)

    def _url(self) -> str:
        return server_url("redis")

    async def open(self, directory: Path) -> None:
        from agent_stores.core import open_stores

        self._stores = open_stores(self._url(), key_prefix=_prefix(), **self.sealing())
        self.provider = self._stores.history_provider()
        await self._save("bench-warmup", _warmup_turn.messages)

    async def _prefill_batch(self, turns: Sequence[Turn]) -> None:
        await self.provider.import_messages(_SESSION, _messages(turns))  # type: ignore[attr-defined]

    async def close(self) -> None:
        await self.provider.delete_session(_SESSION)  # type: ignore[attr-defined]
        await self._stores.aclose()


class OursRedisCluster(OursRedis):
    """Ours on a 3-primary Redis Cluster (``redis+cluster://``), compared with the single-server floor."""

    name = "ours: RedisHistoryProvider on a 3-primary cluster"
    server = "redis-cluster"

    def _url(self) -> str:
        return server_url("redis-cluster")


class OursSealedRedis(OursRedis):
    """Ours on the single server through ``open_stores(..., encryption=Keyring)``: sealed records."""

    name = "ours: sealed RedisHistoryProvider (AES-256-GCM)"
    plain = OursRedis.name


class OursSealedRedisCluster(OursRedisCluster):
    """Ours on the 3-primary cluster, sealed."""

    name = "ours: sealed RedisHistoryProvider on a 3-primary cluster (AES-256-GCM)"
    plain = OursRedisCluster.name


class AgentFrameworkRedis(ProviderSubject):
    """``agent-framework-redis``'s ``RedisHistoryProvider`` (the framework's official Redis provider)."""

    name = "agent-framework-redis RedisHistoryProvider"
    floor = REDIS_FLOOR
    server = "redis"
    requires = ("agent_framework_redis:RedisHistoryProvider",)
    rereads_history = True  # every save loads and de-duplicates the whole list
    max_history = 10_000
    max_history_reason = "every save reads and parses the whole list: pre-filling 100k takes minutes"

    async def open(self, directory: Path) -> None:
        from agent_framework_redis import RedisHistoryProvider

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self.provider = RedisHistoryProvider(
                redis_url=server_url("redis"), key_prefix=_prefix().rstrip(":"), key_format="legacy"
            )
        await self._save("bench-warmup", _warmup_turn.messages)

    async def close(self) -> None:
        await self.provider.clear(_SESSION)  # type: ignore[attr-defined]
        await self.provider.aclose()  # type: ignore[attr-defined]


class OpenAIAgentsRedis(Subject):
    """``openai-agents``' ``RedisSession`` with the equivalent input items."""

    name = "openai-agents RedisSession"
    floor = REDIS_FLOOR
    server = "redis"
    requires = ("agents.extensions.memory.redis_session",)

    async def open(self, directory: Path) -> None:
        from agents.extensions.memory.redis_session import RedisSession

        prefix = _prefix().rstrip(":")
        warmup = RedisSession.from_url("bench-warmup", url=server_url("redis"), key_prefix=prefix)
        await warmup.add_items(list(_warmup_turn.items))  # type: ignore[arg-type]
        await warmup.close()
        self._session = RedisSession.from_url(_SESSION, url=server_url("redis"), key_prefix=prefix)

    async def save(self, turn: Turn) -> None:
        await self._session.add_items(list(turn.items))  # type: ignore[arg-type]

    async def load(self) -> int:
        return len(await self._session.get_items())

    async def _prefill_batch(self, turns: Sequence[Turn]) -> None:
        await self._session.add_items([item for turn in turns for item in turn.items])  # type: ignore[misc]

    async def close(self) -> None:
        await self._session.clear_session()
        await self._session.close()
