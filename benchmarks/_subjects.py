"""The stores the history benchmark compares, each behind the same small interface.

Every subject stores one session's turns in a fresh directory: ``open`` (not timed, includes a
warm-up write to another session so schema setup and connection opening are not measured),
``save`` (one turn, as an agent saves after a run), ``load`` (the whole session), ``prefill``
(history before a timed save, as fast as the store allows) and ``close``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
from agent_framework import AgentSession, FileHistoryProvider, InMemoryHistoryProvider, Message

from _payloads import Turn
from _subject_base import (
    SESSION_ID,
    WARMUP_SESSION_ID,
    WARMUP_TURN,
    ProviderSubject,
    Subject,
    messages_of,
    unavailable_reason,
)
from _subjects_fsspec import OursFsspecLocal, OursSealedFsspecLocal
from _subjects_mongodb import MongoDBOurs, MongoDBOursSealed, OpenAIAgentsMongoDB, RawPymongo
from _subjects_postgresql import (
    CommunityPostgres,
    OpenAIAgentsSQLAlchemy,
    OursPostgreSQL,
    OursSealedPostgreSQL,
    RawPsycopg,
    postgresql_server,
)
from _subjects_redis import SERVER_STARTERS as REDIS_SERVER_STARTERS
from _subjects_redis import (
    AgentFrameworkRedis,
    OpenAIAgentsRedis,
    OursRedis,
    OursRedisCluster,
    OursSealedRedis,
    OursSealedRedisCluster,
    RawRedisPy,
)
from _subjects_s3 import OursS3, OursSealedS3, RawBoto3

__all__ = ["SERVER_STARTERS", "SESSION_ID", "SUBJECTS", "Subject", "unavailable_reason"]

#: How ``history_bench`` starts each kind of server a subject names in ``server``.
SERVER_STARTERS: dict[str, Callable[[], Any]] = {**REDIS_SERVER_STARTERS, "postgresql": postgresql_server}

_FLOOR_SYNCHRONOUS = "NORMAL"  # the floor's PRAGMA synchronous; see the results header


class RawAiosqlite(Subject):
    """The SQLite floor: the same work on ``aiosqlite`` with no abstraction.

    Per turn: ``to_dict`` + msgspec encode, one ``executemany`` of 2 rows, ``commit``. Load: one
    indexed ``SELECT`` of the session, msgspec decode, ``Message.from_dict``.
    """

    name = "raw aiosqlite (floor)"
    floor = "raw aiosqlite (floor)"
    requires = ("aiosqlite",)

    async def open(self, directory: Path) -> None:
        import aiosqlite

        self._encode = msgspec.json.Encoder().encode
        self._decode = msgspec.json.Decoder().decode
        self._db = await aiosqlite.connect(directory / "floor.db")
        await self._db.execute("PRAGMA journal_mode=WAL")
        await self._db.execute(f"PRAGMA synchronous={_FLOOR_SYNCHRONOUS}")
        await self._db.execute(
            "CREATE TABLE messages (id INTEGER PRIMARY KEY, session_id TEXT NOT NULL, payload BLOB NOT NULL)"
        )
        await self._db.execute("CREATE INDEX messages_session ON messages (session_id, id)")
        await self._db.commit()
        await self._insert(WARMUP_SESSION_ID, WARMUP_TURN.messages)

    async def _insert(self, session_id: str, messages: Sequence[Message]) -> None:
        rows = [(session_id, self._encode(m.to_dict())) for m in messages]
        await self._db.executemany("INSERT INTO messages (session_id, payload) VALUES (?, ?)", rows)
        await self._db.commit()

    async def save(self, turn: Turn) -> None:
        await self._insert(SESSION_ID, turn.messages)

    async def load(self) -> int:
        rows = await self._db.execute_fetchall(
            "SELECT payload FROM messages WHERE session_id = ? ORDER BY id", (SESSION_ID,)
        )
        return len([Message.from_dict(self._decode(row[0])) for row in rows])

    async def prefill(self, turns: Sequence[Turn]) -> None:
        await self._insert(SESSION_ID, messages_of(turns))

    async def close(self) -> None:
        await self._db.close()


class OursSQLite(ProviderSubject):
    """``agent_stores.sqlite.SQLiteHistoryProvider`` through ``open_stores("sqlite:///...")``."""

    name = "ours: SQLiteHistoryProvider"
    requires = ("agent_stores.sqlite:SQLiteHistoryProvider",)

    async def open(self, directory: Path) -> None:
        from agent_stores.core import open_stores

        self._stores = open_stores(f"sqlite:///{directory / 'ours.db'}", **self.sealing())
        self.provider = self._stores.history_provider()
        await self._save(WARMUP_SESSION_ID, WARMUP_TURN.messages)

    async def _prefill_batch(self, turns: Sequence[Turn]) -> None:
        await self.provider.import_messages(SESSION_ID, messages_of(turns))  # type: ignore[attr-defined]

    async def close(self) -> None:
        await self._stores.aclose()


class OursSealedSQLite(OursSQLite):
    """``SQLiteHistoryProvider``'s database through ``open_stores(..., encryption=Keyring)``: sealed records."""

    name = "ours: sealed SQLite (AES-256-GCM)"
    plain = OursSQLite.name


class CoreInProcess(ProviderSubject):
    """The core's ``LogHistoryProvider`` on the in-process ``MemoryLogDriver``: our rules, no I/O."""

    name = "core in-process (no I/O)"

    async def open(self, directory: Path) -> None:
        from agent_stores.core import LogHistoryProvider
        from agent_stores.core.memory import MemoryLogDriver

        self.provider = LogHistoryProvider(MemoryLogDriver())
        await self._save(WARMUP_SESSION_ID, WARMUP_TURN.messages)

    async def _prefill_batch(self, turns: Sequence[Turn]) -> None:
        await self.provider.import_messages(SESSION_ID, messages_of(turns))  # type: ignore[attr-defined]


class FrameworkFile(ProviderSubject):
    """The framework's ``FileHistoryProvider`` (JSON Lines, one file per session)."""

    name = "framework FileHistoryProvider"
    rereads_history = True
    max_history = 10_000
    max_history_reason = "every save re-reads and re-parses the whole file: pre-filling 100k takes minutes"

    async def open(self, directory: Path) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ExperimentalWarning: expected, not news for a benchmark
            self.provider = FileHistoryProvider(directory / "file-history")
        await self._save(WARMUP_SESSION_ID, WARMUP_TURN.messages)


class FrameworkInMemory(ProviderSubject):
    """The framework's ``InMemoryHistoryProvider``: the history lives in ``session.state``."""

    name = "framework InMemoryHistoryProvider"
    rereads_history = True  # filter_new_messages hashes every stored message on each save

    async def open(self, directory: Path) -> None:
        self.provider = InMemoryHistoryProvider()
        self._session = AgentSession(session_id=SESSION_ID)

    def _state(self) -> dict[str, Any]:
        return self._session.state.setdefault(self.provider.source_id, {})

    async def prefill(self, turns: Sequence[Turn]) -> None:
        # What save_messages would leave in the state, without re-hashing the history per batch.
        state = self._state()
        state["messages"] = [*state.get("messages", []), *messages_of(turns)]


class OpenAIAgentsSQLite(Subject):
    """``openai-agents``' ``SQLiteSession`` on a file database, with the equivalent input items."""

    name = "openai-agents SQLiteSession"
    requires = ("agents",)

    async def open(self, directory: Path) -> None:
        from agents import SQLiteSession

        path = directory / "openai-agents.db"
        warmup = SQLiteSession(WARMUP_SESSION_ID, path)
        await warmup.add_items(list(WARMUP_TURN.items))  # type: ignore[arg-type]
        warmup.close()
        self._session = SQLiteSession(SESSION_ID, path)

    async def save(self, turn: Turn) -> None:
        await self._session.add_items(list(turn.items))  # type: ignore[arg-type]

    async def load(self) -> int:
        return len(await self._session.get_items())

    async def _prefill_batch(self, turns: Sequence[Turn]) -> None:
        await self._session.add_items([item for turn in turns for item in turn.items])  # type: ignore[misc]

    async def close(self) -> None:
        self._session.close()


#: Every subject, each floor before the rows compared with it; the order rotates between repetitions.
SUBJECTS: tuple[Callable[[], Subject], ...] = (
    RawAiosqlite,
    OursSQLite,
    OursSealedSQLite,
    CoreInProcess,
    FrameworkFile,
    FrameworkInMemory,
    OpenAIAgentsSQLite,
    RawRedisPy,
    OursRedis,
    OursSealedRedis,
    OursRedisCluster,
    OursSealedRedisCluster,
    AgentFrameworkRedis,
    OpenAIAgentsRedis,
    RawPymongo,
    MongoDBOurs,
    MongoDBOursSealed,
    OpenAIAgentsMongoDB,
    RawBoto3,
    OursS3,
    OursSealedS3,
    OursFsspecLocal,
    OursSealedFsspecLocal,
    RawPsycopg,
    OursPostgreSQL,
    OursSealedPostgreSQL,
    CommunityPostgres,
    OpenAIAgentsSQLAlchemy,
)
