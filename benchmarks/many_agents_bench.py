"""Many agents at once on every backend: each agent loads its window and saves one turn per step.

Run: ``uv run --group bench benchmarks/many_agents_bench.py`` (``--thousand`` adds 1,000 agents,
``--backends redis,sqlite`` picks backends; ``--help`` for every option). Each agent owns one
session pre-filled with ``--session`` messages of its own (no two agents share a message);
every step loads the newest ``--window`` messages (as an agent does before a model call) and
saves one turn of 2 messages. All agents of
a row run at once on one event loop and share one store (one client, one connection pool), as
agents served by one process do.

Backends and the stores compared on each (the same server for every store of a backend):

* ``redis``: ours (``open_stores("redis://...")``), ``agent-framework-redis``'s
  ``RedisHistoryProvider`` (no read window: its ``max_messages`` deletes older messages, so each
  step loads the whole session) and openai-agents' ``RedisSession`` (``get_items(limit=window)``;
  returns dicts, builds no ``Message``); a local ``redis-server``, else a container, or
  ``$AGENT_STORES_REDIS_URL``;
* ``redis-cluster``: ours on a 3-primary local cluster (or ``$AGENT_STORES_REDIS_CLUSTER_URL``);
* ``sqlite``: ours on a database file and openai-agents' ``SQLiteSession`` on another;
* ``mongodb``: ours and openai-agents' ``MongoDBSession`` (the nx-27017 stand-in, or
  ``$AGENT_STORES_MONGODB_URL``);
* ``s3``: ours on SeaweedFS (or ``$AGENT_STORES_S3_URL``);
* ``fsspec``: ours on a local folder and the framework's ``FileHistoryProvider`` (whole session);
* ``postgresql``: ours, ``community-agent-framework-postgres``'s ``PostgresHistoryProvider`` (no
  read window: its ``max_messages`` deletes older messages, so each step loads the whole session)
  and openai-agents' ``SQLAlchemySession`` on an asyncpg engine (``get_items(limit=window)``), each
  in a database of its own with the pool it ships with (ours and the community package 10
  connections, SQLAlchemy's 5 + 10 overflow; the community package waits up to 30 s for a
  connection, as ours does, instead of its default 10 s); a new local cluster, or
  ``$AGENT_STORES_POSTGRESQL_URL``;
* ``memory`` (only when named in ``--backends``): the ceiling of a store with no I/O, ours on
  ``memory://`` (records encoded, kept in a dict, decoded on load) and the framework's
  ``InMemoryHistoryProvider`` (messages kept as objects; the newest ``--window`` of each load kept);
  each step yields to the event loop after its load and after its save, where a server's reply
  would be awaited, so every agent's window is in flight at once as on a server.

Reported per store and agent count: steps/s over the row's wall time, p50/p99 of one step's
latency (load + save), the p99 of the steps after each agent's first (a store's caches are warm
once a session was loaded: a long conversation's steps are nearly all of these), and the
client's CPU time over the row's wall time (near 100% the client's one event loop is what
saturates; well below, the server or the pool is waited for),
the share of the wall time Python's garbage collector ran and its full collections, the objects
it tracks that each agent's store keeps alive during the steps (``gc.get_objects()``, median of
counts every 0.2 s),
medians over ``--reps`` repetitions that run the stores in rotated order; the ratio to ours is
paired within each repetition, so load from other work on the machine falls on every store
alike. Per store also the client memory one more idle session costs (``tracemalloc``: the
difference between 50 and 150 sessions that each took one step, divided by 100; ``--idle``). Nothing here
asserts a speed. ``--gc-freeze`` applies the application's lever on the collector to every store
alike (``gc.freeze()`` before the steps, and optionally after each full collection; the library
never touches the collector's settings). Results go to ``benchmarks/results/many_agents.md`` and ``many_agents.json``
(see ``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
import tracemalloc
import uuid
import warnings
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _payloads import Turn, make_turns
from _subjects_redis import _cluster, _redis  # pyright: ignore[reportPrivateUsage]

DEFAULT_OUT = Path(__file__).resolve().parent / "results"
BACKENDS = ("redis", "redis-cluster", "sqlite", "mongodb", "s3", "fsspec", "postgresql")
#: Backends run only when asked for (``--backends memory``): the ceiling of a store with no I/O.
EXTRA_BACKENDS = ("memory",)
_PACKAGES = ("agent-framework-core", "agent-stores-core", "agent-stores-redis", "agent-stores-sqlite",
             "agent-stores-mongodb", "agent-stores-s3", "agent-stores-fsspec", "redis", "aiosqlite", "pymongo",
             "boto3", "fsspec", "msgspec", "agent-framework-redis", "openai-agents", "agent-stores-postgresql",
             "psycopg", "psycopg-pool", "community-agent-framework-postgres", "sqlalchemy", "asyncpg")  # fmt: skip


class Store:
    """One history store on one backend, shared by every agent of a row."""

    name = ""
    backend = ""
    requires = ""
    #: Opened with ``encryption=`` (a sealed row): its ``÷ ours`` is the ratio to the same store unsealed.
    sealed = False

    async def open(self, url: str, window: int) -> None:
        """Open on ``url``: the backend's base (a server URL or a fresh directory for file backends)."""
        raise NotImplementedError

    async def prefill(self, session_id: str, turns: Sequence[Turn]) -> None:
        raise NotImplementedError

    async def step(self, session_id: str, turn: Turn) -> int:
        """Load the window, save ``turn``; return how many messages the load returned."""
        raise NotImplementedError

    async def close(self) -> None:
        """Release what ``open`` acquired."""


class _OursBase(Store):
    """``open_stores(url).history_provider(max_messages=window)``; subclasses build the URL."""

    #: ``cache_bytes`` for every store of ours (``--cache-bytes``); None: the library's default.
    cache_bytes: int | None = None

    def _url(self, base: str) -> str:
        raise NotImplementedError

    def _options(self) -> dict[str, Any]:
        return {}

    async def open(self, url: str, window: int) -> None:
        from agent_stores.core import open_stores

        options = self._options()
        if _OursBase.cache_bytes is not None:
            options["cache_bytes"] = _OursBase.cache_bytes
        if self.sealed:
            from agent_stores.core.sealing import Keyring

            options["encryption"] = Keyring.generate()
        self._stores = open_stores(self._url(url), **options)
        self._provider: Any = self._stores.history_provider(max_messages=window)

    async def prefill(self, session_id: str, turns: Sequence[Turn]) -> None:
        await self._provider.import_messages(session_id, [m for t in turns for m in t.messages])

    async def step(self, session_id: str, turn: Turn) -> int:
        loaded = await self._provider.get_messages(session_id)
        await self._provider.save_messages(session_id, list(turn.messages))
        return len(loaded)

    async def close(self) -> None:
        await self._stores.aclose()


class Ours(_OursBase):
    name = "ours: RedisHistoryProvider"
    backend = "redis"
    requires = "agent_stores.redis"

    def _url(self, base: str) -> str:
        return base

    def _options(self) -> dict[str, Any]:
        return {"key_prefix": f"many-{uuid.uuid4().hex[:8]}:"}


class OursCluster(Ours):
    name = "ours: RedisHistoryProvider on a 3-primary cluster"
    backend = "redis-cluster"


class OursSQLite(_OursBase):
    name = "ours: SQLiteHistoryProvider"
    backend = "sqlite"
    requires = "agent_stores.sqlite"

    def _url(self, base: str) -> str:
        return f"sqlite:///{base}/ours-{uuid.uuid4().hex[:8]}.db"


class OursMongoDB(_OursBase):
    name = "ours: MongoDBHistoryProvider"
    backend = "mongodb"
    requires = "agent_stores.mongodb"

    def _url(self, base: str) -> str:
        from _subjects_mongodb import _database_url  # pyright: ignore[reportPrivateUsage]

        self._database = f"many_{uuid.uuid4().hex[:12]}"
        return _database_url(self._database)

    async def close(self) -> None:
        await super().close()
        await _drop_mongodb_database(self._database)


class OursS3(_OursBase):
    name = "ours: S3HistoryProvider"
    backend = "s3"
    requires = "agent_stores.s3"

    def _url(self, base: str) -> str:
        from _subjects_s3 import _bucket, _client, _url  # pyright: ignore[reportPrivateUsage]

        client = _client()
        bucket = _bucket(client)
        client.close()
        return _url(bucket, prefix="many")

    def _options(self) -> dict[str, Any]:
        from _subjects_s3 import _session  # pyright: ignore[reportPrivateUsage]

        return {"session": _session()}


class OursFsspec(_OursBase):
    name = "ours: FsspecHistoryProvider (local dir)"
    backend = "fsspec"
    requires = "agent_stores.fsspec"

    def _url(self, base: str) -> str:
        return f"file://{base}/ours-{uuid.uuid4().hex[:8]}"


class OursPostgreSQL(_OursBase):
    name = "ours: PostgreSQLHistoryProvider"
    backend = "postgresql"
    requires = "agent_stores.postgresql"

    def _url(self, base: str) -> str:
        from _subjects_postgresql import create_database

        self._server = base
        self._database = create_database(base, "many")
        return self._database

    async def close(self) -> None:
        from _subjects_postgresql import drop_database

        await super().close()
        drop_database(self._server, self._database)


class SealedOurs(Ours):
    name = "ours sealed: RedisHistoryProvider (AES-256-GCM)"
    sealed = True


class SealedOursCluster(OursCluster):
    name = "ours sealed: RedisHistoryProvider on a 3-primary cluster (AES-256-GCM)"
    sealed = True


class SealedOursSQLite(OursSQLite):
    name = "ours sealed: SQLiteHistoryProvider (AES-256-GCM)"
    sealed = True


class SealedOursMongoDB(OursMongoDB):
    name = "ours sealed: MongoDBHistoryProvider (AES-256-GCM)"
    sealed = True


class SealedOursS3(OursS3):
    name = "ours sealed: S3HistoryProvider (AES-256-GCM)"
    sealed = True


class SealedOursFsspec(OursFsspec):
    name = "ours sealed: FsspecHistoryProvider (local dir, AES-256-GCM)"
    sealed = True


class SealedOursPostgreSQL(OursPostgreSQL):
    name = "ours sealed: PostgreSQLHistoryProvider (AES-256-GCM)"
    sealed = True


class OursMemory(_OursBase):
    name = "ours: memory:// (no I/O)"
    backend = "memory"
    requires = "agent_stores.core"

    def _url(self, base: str) -> str:
        return "memory://"

    async def step(self, session_id: str, turn: Turn) -> int:
        loaded = await self._provider.get_messages(session_id)
        await asyncio.sleep(0)  # where a server's reply is awaited: every agent's window is in flight at once
        await self._provider.save_messages(session_id, list(turn.messages))
        await asyncio.sleep(0)
        return len(loaded)


class FrameworkInMemory(Store):
    """The framework's ``InMemoryHistoryProvider``: messages kept as objects in each session's state, no I/O.

    It has no read window; each load returns the whole session and the newest ``window`` are
    kept, so the agent holds what the other stores return.
    """

    name = "framework InMemoryHistoryProvider (no I/O)"
    backend = "memory"
    requires = "agent_framework"

    async def open(self, url: str, window: int) -> None:
        from agent_framework import InMemoryHistoryProvider

        self._window = window
        self._provider: Any = InMemoryHistoryProvider()
        self._states: dict[str, dict[str, Any]] = {}

    async def prefill(self, session_id: str, turns: Sequence[Turn]) -> None:
        state = self._states.setdefault(session_id, {})
        await self._provider.save_messages(session_id, [m for t in turns for m in t.messages], state=state)

    async def step(self, session_id: str, turn: Turn) -> int:
        state = self._states[session_id]
        loaded = (await self._provider.get_messages(session_id, state=state))[-self._window :]
        await asyncio.sleep(0)  # where a server's reply is awaited: every agent's window is in flight at once
        await self._provider.save_messages(session_id, list(turn.messages), state=state)
        await asyncio.sleep(0)
        return len(loaded)


class CommunityPostgres(Store):
    name = "community-agent-framework-postgres PostgresHistoryProvider (whole session)"
    backend = "postgresql"
    requires = "agent_framework_community_postgres"

    async def open(self, url: str, window: int) -> None:
        from agent_framework_community_postgres import PostgresPersistence

        from _subjects_postgresql import create_database

        self._server, self._database = url, create_database(url, "many")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # Its pool is ours' size (10); a statement waits for a connection as long as ours (30 s, not its 10).
            self._hub: Any = PostgresPersistence(
                application_id="many", connection_string=self._database, pool_kwargs={"timeout": 30.0}
            )
            await self._hub.open()
            await self._hub.migrate()
            self._provider: Any = self._hub.history_provider()

    async def prefill(self, session_id: str, turns: Sequence[Turn]) -> None:
        await self._provider.save_messages(session_id, [m for t in turns for m in t.messages])

    async def step(self, session_id: str, turn: Turn) -> int:
        loaded = await self._provider.get_messages(session_id)
        await self._provider.save_messages(session_id, list(turn.messages))
        return len(loaded)

    async def close(self) -> None:
        from _subjects_postgresql import drop_database

        await self._hub.close()
        drop_database(self._server, self._database)


class AgentFrameworkRedis(Store):
    name = "agent-framework-redis RedisHistoryProvider (whole session)"
    backend = "redis"
    requires = "agent_framework_redis"

    async def open(self, url: str, window: int) -> None:
        from agent_framework_redis import RedisHistoryProvider

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._provider: Any = RedisHistoryProvider(
                redis_url=url, key_prefix=f"many-{uuid.uuid4().hex[:8]}", key_format="legacy"
            )

    async def prefill(self, session_id: str, turns: Sequence[Turn]) -> None:
        await self._provider.save_messages(session_id, [m for t in turns for m in t.messages])

    async def step(self, session_id: str, turn: Turn) -> int:
        loaded = await self._provider.get_messages(session_id)
        await self._provider.save_messages(session_id, list(turn.messages))
        return len(loaded)

    async def close(self) -> None:
        await self._provider.aclose()


class _OpenAIAgentsSessions(Store):
    """openai-agents sessions, one per agent, made on first use by ``_new``; items in, items out."""

    def _open_sessions(self, window: int) -> None:
        self._window = window
        self._sessions: dict[str, Any] = {}

    def _new(self, session_id: str) -> Any:
        raise NotImplementedError

    def _session(self, session_id: str) -> Any:
        session = self._sessions.get(session_id)
        if session is None:
            session = self._sessions[session_id] = self._new(session_id)
        return session

    async def prefill(self, session_id: str, turns: Sequence[Turn]) -> None:
        await self._session(session_id).add_items([i for t in turns for i in t.items])

    async def step(self, session_id: str, turn: Turn) -> int:
        session = self._session(session_id)
        loaded = await session.get_items(limit=self._window)
        await session.add_items(list(turn.items))
        return len(loaded)


class OpenAIAgentsRedis(_OpenAIAgentsSessions):
    name = "openai-agents RedisSession"
    backend = "redis"
    requires = "agents.extensions.memory.redis_session"

    async def open(self, url: str, window: int) -> None:
        from redis.asyncio import Redis

        self._client = Redis.from_url(url)
        self._prefix = f"many-{uuid.uuid4().hex[:8]}"
        self._open_sessions(window)

    def _new(self, session_id: str) -> Any:
        from agents.extensions.memory.redis_session import RedisSession

        return RedisSession(session_id, redis_client=self._client, key_prefix=self._prefix)

    async def close(self) -> None:
        await self._client.aclose()


class OpenAIAgentsSQLite(_OpenAIAgentsSessions):
    name = "openai-agents SQLiteSession"
    backend = "sqlite"
    requires = "agents"

    async def open(self, url: str, window: int) -> None:
        self._path = Path(url) / f"openai-agents-{uuid.uuid4().hex[:8]}.db"
        self._open_sessions(window)

    def _new(self, session_id: str) -> Any:
        from agents import SQLiteSession

        return SQLiteSession(session_id, self._path)

    async def close(self) -> None:
        for session in self._sessions.values():
            session.close()


class OpenAIAgentsMongoDB(_OpenAIAgentsSessions):
    name = "openai-agents MongoDBSession"
    backend = "mongodb"
    requires = "agents.extensions.memory.mongodb_session"

    async def open(self, url: str, window: int) -> None:
        from pymongo import AsyncMongoClient

        from _subjects_mongodb import mongodb_server

        self._client: Any = AsyncMongoClient(mongodb_server())
        self._database = f"many_{uuid.uuid4().hex[:12]}"
        self._open_sessions(window)

    def _new(self, session_id: str) -> Any:
        from agents.extensions.memory.mongodb_session import MongoDBSession

        return MongoDBSession(session_id, client=self._client, database=self._database)

    async def close(self) -> None:
        await self._client.drop_database(self._database)
        await self._client.close()


class OpenAIAgentsSQLAlchemy(_OpenAIAgentsSessions):
    name = "openai-agents SQLAlchemySession (asyncpg)"
    backend = "postgresql"
    requires = "agents.extensions.memory.sqlalchemy_session"

    async def open(self, url: str, window: int) -> None:
        from sqlalchemy.ext.asyncio import create_async_engine

        from _subjects_postgresql import asyncpg_url, create_database

        self._server, self._database = url, create_database(url, "many")
        self._engine = create_async_engine(asyncpg_url(self._database))
        self._open_sessions(window)

    def _new(self, session_id: str) -> Any:
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

        return SQLAlchemySession(session_id, engine=self._engine, create_tables=True)

    async def close(self) -> None:
        from _subjects_postgresql import drop_database

        await self._engine.dispose()
        drop_database(self._server, self._database)


class FrameworkFile(Store):
    name = "framework FileHistoryProvider (whole session)"
    backend = "fsspec"
    requires = "agent_framework"

    async def open(self, url: str, window: int) -> None:
        from agent_framework import FileHistoryProvider

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ExperimentalWarning: expected, not news for a benchmark
            self._provider: Any = FileHistoryProvider(Path(url) / f"file-{uuid.uuid4().hex[:8]}")

    async def prefill(self, session_id: str, turns: Sequence[Turn]) -> None:
        await self._provider.save_messages(session_id, [m for t in turns for m in t.messages])

    async def step(self, session_id: str, turn: Turn) -> int:
        loaded = await self._provider.get_messages(session_id)
        await self._provider.save_messages(session_id, list(turn.messages))
        return len(loaded)


async def _drop_mongodb_database(name: str) -> None:
    from pymongo import AsyncMongoClient

    from _subjects_mongodb import mongodb_server

    client: Any = AsyncMongoClient(mongodb_server())
    await client.drop_database(name)
    await client.close()


#: Every store, grouped by backend; ours first on each backend (the ratios' reference).
STORES: tuple[type[Store], ...] = (
    Ours,
    SealedOurs,
    AgentFrameworkRedis,
    OpenAIAgentsRedis,
    OursCluster,
    SealedOursCluster,
    OursSQLite,
    SealedOursSQLite,
    OpenAIAgentsSQLite,
    OursMongoDB,
    SealedOursMongoDB,
    OpenAIAgentsMongoDB,
    OursS3,
    SealedOursS3,
    OursFsspec,
    SealedOursFsspec,
    FrameworkFile,
    OursPostgreSQL,
    SealedOursPostgreSQL,
    CommunityPostgres,
    OpenAIAgentsSQLAlchemy,
    OursMemory,
    FrameworkInMemory,
)
OURS = {factory.backend: factory for factory in STORES if factory.name.startswith("ours:") and not factory.sealed}


@contextlib.contextmanager
def _directory(label: str) -> Iterator[tuple[str, str]]:
    with tempfile.TemporaryDirectory(prefix=f"many-agents-{label}-") as path:
        yield path, f"a folder in {tempfile.gettempdir()}"


@contextlib.contextmanager
def _mongodb() -> Iterator[tuple[str, str]]:
    from _subjects_mongodb import SERVER, mongodb_server

    yield mongodb_server(), SERVER["description"]


@contextlib.contextmanager
def _s3() -> Iterator[tuple[str, str]]:
    from _subjects_s3 import s3_server

    server, _ = s3_server()
    yield server.url, f"{server.description} via {server.via}"


@contextlib.contextmanager
def _postgresql() -> Iterator[tuple[str, str]]:
    from _subjects_postgresql import postgresql_server

    with postgresql_server() as (url, description):
        yield url, description


#: How each backend's base URL (a server, or a fresh folder) is made for a run.
SERVERS: dict[str, Callable[[], AbstractContextManager[tuple[str, str]]]] = {
    "redis": _redis,
    "redis-cluster": _cluster,
    "sqlite": lambda: _directory("sqlite"),
    "mongodb": _mongodb,
    "s3": _s3,
    "fsspec": lambda: _directory("fsspec"),
    "postgresql": _postgresql,
    "memory": lambda: contextlib.nullcontext(("memory://", "none: in this process")),
}


@dataclass(frozen=True)
class Config:
    agents: tuple[int, ...]
    steps: int
    session: int
    window: int
    out: Path
    reps: int = 1
    backends: tuple[str, ...] = BACKENDS
    #: Session counts whose memory difference gives the cost of one idle session; empty: not measured.
    idle: tuple[int, int] | None = (50, 150)
    #: The young generation's collection threshold (``gc.set_threshold``) for the run; None: Python's default.
    gc_threshold: int | None = None
    #: Only the stores whose name contains one of these words (any case; ours always runs); empty: every store.
    stores: tuple[str, ...] = ()
    #: The decode cache's budget for ours (``cache_bytes``); None: the library's default (16 MiB).
    cache_bytes: int | None = None
    #: ``gc.freeze`` for every store alike (``_Freezer.MODES``); None: the collector as Python sets it.
    gc_freeze: str | None = None


def _missing(store: Store) -> str | None:
    import importlib

    try:
        importlib.import_module(store.requires)
    except ImportError as err:
        return f"not installed ({err.name})"
    return None


async def run_row(store: Store, url: str, agents: int, config: Config) -> dict[str, Any]:
    await store.open(url, config.window)
    try:
        sessions = [f"agent-{index}" for index in range(agents)]
        # Every agent's conversation is its own (no two agents share a message), as in a real
        # process: what one agent's load decoded does not serve the others.
        span = config.session // 2 + config.steps
        prefill = asyncio.Semaphore(20)

        async def fill(index: int) -> None:
            async with prefill:
                await store.prefill(sessions[index], make_turns(index * span, config.session // 2))

        await asyncio.gather(*(fill(index) for index in range(agents)))
        steps = [make_turns(index * span + config.session // 2, config.steps) for index in range(agents)]
        latencies: list[float] = []
        warm: list[float] = []  # the steps after each agent's first
        loaded: list[int] = []
        census = _Census(agents, midway=agents * config.steps // 2)

        async def agent(index: int) -> None:
            session_id = sessions[index]
            for number, turn in enumerate(steps[index]):
                start = time.perf_counter()
                paused = census.paused
                loaded.append(await store.step(session_id, turn))
                latency = time.perf_counter() - start - (census.paused - paused)
                latencies.append(latency)
                if number:
                    warm.append(latency)
                if len(latencies) == census.midway:
                    census.take()

        collector = _CollectorClock()
        freezer = _Freezer(config.gc_freeze)
        census.start()
        if freezer.start():
            census.rebase()  # frozen objects are not counted by gc.get_objects()
        gc.callbacks.append(collector)
        try:
            cpu = time.process_time()
            start = time.perf_counter()
            await asyncio.gather(*(agent(index) for index in range(agents)))
            wall = time.perf_counter() - start - census.paused
            cpu = time.process_time() - cpu - census.paused_cpu
        finally:
            census.stop()
            gc.callbacks.remove(collector)
            freezer.stop()
    finally:
        await store.close()
    ordered = sorted(latencies)
    warm.sort()
    return {
        "store": store.name,
        "backend": store.backend,
        "agents": agents,
        "status": "ok",
        "steps": len(latencies),
        "steps_per_s": len(latencies) / wall,
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "p99_warm_ms": warm[min(len(warm) - 1, int(len(warm) * 0.99))] * 1000 if warm else None,
        "messages_per_load": statistics.median(loaded),
        "client_cpu": cpu / wall,
        "collector": collector.seconds / wall,
        "full_collections": collector.full,
        "tracked_per_agent": census.per_agent,
    }


class _Census:
    """Counts the objects Python's collector tracks before a row's steps, then during them.

    A count is taken every ``interval`` seconds (from the event loop, between callbacks, so
    agents are caught at every point of their steps) and once when half the steps are done.
    ``per_agent`` is the median count beyond the one before the steps, divided by the agents:
    what each agent's store keeps alive for the collector to walk (windows and turns in
    flight, what the store caches). Counting takes time; ``paused`` (wall) and ``paused_cpu``
    say how much, for the caller to leave out of its timings.
    """

    def __init__(self, agents: int, *, midway: int, interval: float = 0.2) -> None:
        self.agents = agents
        self.midway = max(1, midway)
        self.interval = interval
        self.paused = 0.0
        self.paused_cpu = 0.0
        self.counts: list[int] = []
        self._before = 0
        self._timer: asyncio.TimerHandle | None = None

    @property
    def per_agent(self) -> float | None:
        return statistics.median(self.counts) / self.agents if self.counts else None

    def start(self) -> None:
        gc.collect()  # every row starts with no garbage left by the one before
        self._before = len(gc.get_objects())
        self._timer = asyncio.get_running_loop().call_later(self.interval, self._tick)

    def rebase(self) -> None:
        """Count from now: the objects alive before the steps were just frozen, out of ``gc.get_objects()``."""
        self._before = len(gc.get_objects())

    def _tick(self) -> None:
        self.take()
        self._timer = asyncio.get_running_loop().call_later(self.interval, self._tick)

    def take(self) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.counts.append(len(gc.get_objects()) - self._before)
        self.paused += time.perf_counter() - wall
        self.paused_cpu += time.process_time() - cpu

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class _Freezer:
    """The application's lever on the collector, applied alike to every store of a run (``--gc-freeze``).

    ``start``: once before the steps (after the census's collection), :func:`gc.freeze` moves
    every object alive to the permanent generation, which no collection walks: the
    interpreter's modules, the framework, the store and what the prefill left. ``each-full``:
    that, and after every full collection its survivors are frozen too, so each full collection
    walks only what was promoted since the one before. ``stop`` unfreezes everything and
    collects. None: the collector as Python sets it. The library never does either.
    """

    MODES = ("start", "each-full")

    def __init__(self, mode: str | None) -> None:
        self.mode = mode

    def start(self) -> bool:
        """Freeze as the mode says; return whether anything was frozen."""
        if self.mode is None:
            return False
        gc.freeze()
        if self.mode == "each-full":
            gc.callbacks.append(self._after_full)
        return True

    def _after_full(self, phase: str, info: dict[str, int]) -> None:
        if phase == "stop" and info["generation"] == 2:
            gc.freeze()

    def stop(self) -> None:
        if self.mode is None:
            return
        if self.mode == "each-full":
            gc.callbacks.remove(self._after_full)
        gc.unfreeze()
        gc.collect()


class _CollectorClock:
    """A ``gc.callbacks`` entry: the time Python's garbage collector ran, and how many full collections."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full = 0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
            return
        self.seconds += time.perf_counter() - self._started
        self.full += info["generation"] == 2


async def idle_session_bytes(store: Store, url: str, config: Config) -> float:
    """Client memory one more idle session costs: the traced difference between two session counts, per session."""
    assert config.idle is not None
    few, many = config.idle
    traced: dict[int, int] = {}
    turn = make_turns(0, 1)[0]
    for sessions in (few, many):
        await store.open(url, config.window)
        try:
            await store.step("warm-up", turn)  # clients, pools and caches that do not grow with sessions
            gc.collect()
            tracemalloc.start()
            try:
                baseline = tracemalloc.get_traced_memory()[0]
                for index in range(sessions):
                    await store.step(f"idle-{index}", turn)
                gc.collect()
                traced[sessions] = tracemalloc.get_traced_memory()[0] - baseline
            finally:
                tracemalloc.stop()
        finally:
            await store.close()
    return (traced[many] - traced[few]) / (many - few)


def _factories(backend: str, words: Sequence[str] = ()) -> list[type[Store]]:
    return [
        factory
        for factory in STORES
        if factory.backend == backend
        and (not words or factory is OURS[backend] or any(word in factory.name.lower() for word in words))
    ]


async def run(config: Config) -> dict[str, Any]:
    samples: dict[tuple[str, int], list[dict[str, Any]]] = {}
    missing: dict[str, str] = {}
    servers: dict[str, str] = {}
    memory: dict[str, float] = {}
    for backend in config.backends:
        try:
            server = SERVERS[backend]()
            url, description = server.__enter__()
        except Exception as err:  # a server that cannot start here: its rows report why
            for factory in _factories(backend, config.stores):
                missing[factory.name] = f"no {backend} server: {str(err) or type(err).__name__}"
            print(f"no {backend} server: {err}", file=sys.stderr, flush=True)
            continue
        try:
            servers[backend] = description
            factories = [f for f in _factories(backend, config.stores) if not _note_missing(f(), missing)]
            for rep in range(config.reps):
                for agents in config.agents:
                    shift = rep % len(factories)
                    for factory in factories[shift:] + factories[:shift]:  # rotated: noise falls on every store
                        store = factory()
                        print(
                            f"{backend} rep {rep + 1}/{config.reps}: {store.name}: {agents} agents",
                            file=sys.stderr,
                            flush=True,
                        )
                        samples.setdefault((store.name, agents), []).append(await run_row(store, url, agents, config))
            if config.idle is not None:
                for factory in factories:
                    memory[factory.name] = await idle_session_bytes(factory(), url, config)
        finally:
            server.__exit__(None, None, None)
    rows: list[dict[str, Any]] = []
    for backend in config.backends:
        for factory in _factories(backend, config.stores):
            name = factory.name
            for agents in config.agents:
                if name in missing:
                    rows.append({"store": name, "backend": backend, "agents": agents, "status": missing[name]})
                    continue
                runs = samples[(name, agents)]
                ours = samples.get((OURS[backend].name, agents), [])
                paired = [r["steps_per_s"] / o["steps_per_s"] for r, o in zip(runs, ours, strict=False)]
                rows.append(
                    {
                        "store": name,
                        "backend": backend,
                        "agents": agents,
                        "status": "ok",
                        "steps": runs[0]["steps"],
                        "steps_per_s": statistics.median(r["steps_per_s"] for r in runs),
                        "p50_ms": statistics.median(r["p50_ms"] for r in runs),
                        "p99_ms": statistics.median(r["p99_ms"] for r in runs),
                        "p99_warm_ms": _median_of(r.get("p99_warm_ms") for r in runs),
                        "messages_per_load": statistics.median(r["messages_per_load"] for r in runs),
                        "client_cpu": statistics.median(r["client_cpu"] for r in runs),
                        "collector": statistics.median(r["collector"] for r in runs),
                        "full_collections": statistics.median(r["full_collections"] for r in runs),
                        "tracked_per_agent": statistics.median(r["tracked_per_agent"] for r in runs),
                        "vs_ours": statistics.median(paired) if paired else None,
                        "idle_session_bytes": memory.get(name),
                        "samples": runs,
                    }
                )
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, python {platform.python_version()}",
        "load_average": " / ".join(f"{value:.1f}" for value in os.getloadavg()),
        "servers": servers,
        "packages": {p: _version(p) for p in _PACKAGES},
        "config": {
            "agents": list(config.agents),
            "steps": config.steps,
            "session": config.session,
            "window": config.window,
            "reps": config.reps,
            "backends": list(config.backends),
            "idle": list(config.idle) if config.idle else None,
            "gc_threshold": config.gc_threshold,
            "stores": list(config.stores),
            "cache_bytes": config.cache_bytes,
            "gc_freeze": config.gc_freeze,
        },
        "rows": rows,
    }


def _note_missing(store: Store, missing: dict[str, str]) -> bool:
    reason = _missing(store)
    if reason is not None:
        missing[store.name] = reason
    return reason is not None


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def _collector(row: dict[str, Any]) -> str:
    if row.get("collector") is None:
        return "—"  # a run recorded before the collector was measured
    return f"{row['collector']:.0%} ({row['full_collections']:.0f} full)"


def _tracked(row: dict[str, Any]) -> str:
    if row.get("tracked_per_agent") is None:
        return "—"  # a run recorded before the census
    return f"{row['tracked_per_agent']:,.0f}"


def _saturation(row: dict[str, Any]) -> str:
    return "client CPU" if row["client_cpu"] >= 0.85 else "waits (server, pool, I/O)"


def render_markdown(summary: dict[str, Any]) -> str:
    cfg = summary["config"]
    lines = [
        "# Many agents at once",
        "",
        f"- date: {summary['date']}; {summary['machine']}; load average at the end "
        f"{summary.get('load_average', 'unknown')} (other work falls on every store alike: read the ratios)",
        *(f"- {backend} server: {description}" for backend, description in summary.get("servers", {}).items()),
        "- packages: " + ", ".join(f"{k} {v}" for k, v in summary["packages"].items()),
        f"- every agent: one session pre-filled with {cfg['session']} messages of its own; {cfg['steps']} steps,"
        f" each a load of the newest {cfg['window']} messages and a save of one 2-message turn; all agents at once,"
        " one store",
        f"- {cfg.get('reps', 1)} repetitions, the stores of each backend and agent count in rotated order; medians"
        " over repetitions; steps/s ÷ ours is the median of the ratios paired within each repetition (ours on the"
        " same backend)",
        "- client CPU: the benchmark process's CPU time over the row's wall time (one event loop: near 100% it is"
        " what saturates; lower, the server or the connection pool is waited for)",
        "- collector: the share of the row's wall time Python's garbage collector ran (`gc.callbacks`), and how"
        " many full collections it made; it walks every object alive, so it grows with what each store allocates"
        " and keeps alive per step",
        "- tracked per agent: objects Python's collector tracks that were alive during the row's steps beyond"
        " those alive before them (`gc.get_objects()` every 0.2 s and once halfway, the median), divided by the"
        " agents: the windows and turns in flight and what the store caches, which the collector walks (counting's"
        " own time is left out of every timing)",
        "- ours sealed: ours opened with `encryption=Keyring` (every record AES-256-GCM sealed); its steps/s ÷ ours"
        " is the ratio to the same store unsealed (the target is 0.90x or more)",
        "- idle session: client memory one more session costs once it has taken a step and gone idle"
        + (
            f" (tracemalloc: {cfg['idle']} sessions, the difference per session)"
            if cfg.get("idle")
            else ": not measured in this run (--idle none)"
        ),
    ]
    if cfg.get("gc_threshold"):
        lines.append(
            f"- garbage collector: young-generation threshold {cfg['gc_threshold']} for every store"
            " (Python's default is 700)"
        )
    if cfg.get("gc_freeze") == "start":
        lines.append(
            "- garbage collector: `gc.freeze()` before each row's steps, every store alike (what was alive then is"
            " never walked; tracked per agent counts the rest)"
        )
    elif cfg.get("gc_freeze") == "each-full":
        lines.append(
            "- garbage collector: `gc.freeze()` before each row's steps and after each full collection, every store"
            " alike (a full collection walks only what was promoted since the last; tracked per agent counts only"
            " what is not frozen)"
        )
    if cfg.get("cache_bytes") is not None:
        lines.append(f"- ours opened with `cache_bytes={cfg['cache_bytes']}` (the library's default is 16 MiB)")
    for backend in cfg.get("backends", ["redis"]):
        rows = [r for r in summary["rows"] if r.get("backend", "redis") == backend]
        if not rows:
            continue
        lines += [
            "",
            f"## {backend}",
            "",
            "| agents | store | steps/s | p50 ms | p99 ms | p99 ms after step 1 | messages per load | client CPU |"
            " collector | tracked per agent | saturates | steps/s ÷ ours | idle session |",
            "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|",
        ]
        for row in rows:
            if row["status"] != "ok":
                lines.append(f"| {row['agents']} | {row['store']} | {row['status']} | | | | | | | | | | |")
                continue
            ratio = "—" if row.get("vs_ours") is None else f"{row['vs_ours']:.2f}x"
            idle = row.get("idle_session_bytes")
            memory = "—" if idle is None else f"{idle / 1024:,.1f} KiB"
            warm = "—" if row.get("p99_warm_ms") is None else f"{row['p99_warm_ms']:.1f}"
            lines.append(
                f"| {row['agents']} | {row['store']} | {row['steps_per_s']:,.0f} | {row['p50_ms']:.1f} | "
                f"{row['p99_ms']:.1f} | {warm} | {row['messages_per_load']:.0f} | {row['client_cpu']:.0%} | "
                f"{_collector(row)} | {_tracked(row)} | {_saturation(row)} | {ratio} | {memory} |"
            )
    return "\n".join(lines) + "\n"


def _median_of(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def parse_args(argv: Sequence[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--agents", default="1,10,100", help="agent counts, comma-separated (default 1,10,100)")
    parser.add_argument("--thousand", action="store_true", help="add a row of 1,000 agents")
    parser.add_argument("--steps", type=int, default=20, help="steps per agent (default 20)")
    parser.add_argument("--session", type=int, default=200, help="messages per session before the run (default 200)")
    parser.add_argument("--window", type=int, default=40, help="messages per load (default 40)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions, stores rotated (default 3)")
    parser.add_argument(
        "--backends", default=",".join(BACKENDS), help=f"backends, comma-separated (default {','.join(BACKENDS)})"
    )
    parser.add_argument(
        "--idle",
        default="50,150",
        help="two session counts whose memory difference gives one idle session's cost (default 50,150; 'none' skips)",
    )
    parser.add_argument(
        "--gc-threshold",
        type=int,
        help="young-generation collection threshold for the run, every store alike (default: Python's, 700)",
    )
    parser.add_argument(
        "--stores",
        default="",
        help="comma-separated words: run only the stores whose name contains one, e.g. 'sealed' for ours"
        " sealed (ours always runs; default: every store)",
    )
    parser.add_argument(
        "--cache-bytes",
        type=int,
        help="decode cache budget of our stores (cache_bytes; default: the library's, 16 MiB)",
    )
    parser.add_argument(
        "--gc-freeze",
        choices=_Freezer.MODES,
        help="the application's lever, every store alike: 'start' freezes every object alive before the steps"
        " (gc.freeze); 'each-full' also freezes the survivors of each full collection (default: neither)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results directory (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    agents = tuple(int(a) for a in str(args.agents).split(",") if a)
    if args.thousand:
        agents = (*agents, 1000)
    backends = tuple(b for b in str(args.backends).split(",") if b)
    unknown = sorted(set(backends) - set(BACKENDS) - set(EXTRA_BACKENDS))
    if unknown:
        parser.error(f"unknown backends {unknown}; choose from {', '.join(BACKENDS + EXTRA_BACKENDS)}")
    return Config(
        agents=agents,
        steps=args.steps,
        session=args.session,
        window=args.window,
        out=args.out,
        reps=args.reps,
        backends=backends,
        idle=_idle_counts(parser, str(args.idle)),
        gc_threshold=args.gc_threshold,
        stores=tuple(word.strip().lower() for word in str(args.stores or "").split(",") if word.strip()),
        cache_bytes=args.cache_bytes,
        gc_freeze=args.gc_freeze,
    )


def _idle_counts(parser: argparse.ArgumentParser, value: str) -> tuple[int, int] | None:
    if value == "none":
        return None
    counts = tuple(int(v) for v in value.split(",") if v)
    if len(counts) != 2 or not 0 <= counts[0] < counts[1]:
        parser.error(f"--idle takes two increasing session counts, got {value!r}")
    return counts[0], counts[1]


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    config = parse_args(argv)
    _OursBase.cache_bytes = config.cache_bytes
    previous = gc.get_threshold()
    if config.gc_threshold is not None:
        gc.set_threshold(config.gc_threshold, *previous[1:])
    try:
        summary = asyncio.run(run(config))
    finally:
        gc.set_threshold(*previous)
    config.out.mkdir(parents=True, exist_ok=True)
    (config.out / "many_agents.json").write_text(json.dumps(summary, indent=2) + "\n")
    (config.out / "many_agents.md").write_text(render_markdown(summary))
    print(render_markdown(summary))
    return summary


if __name__ == "__main__":
    main()
