"""The stores the history benchmark compares, each behind the same small interface.

Every subject stores one session's turns in a fresh directory: ``open`` (not timed, includes a
warm-up write to another session so schema setup and connection opening are not measured),
``save`` (one turn, as an agent saves after a run), ``load`` (the whole session), ``prefill``
(history before a timed save, as fast as the store allows) and ``close``.
"""

from __future__ import annotations

import importlib
import importlib.util
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
from agent_framework import AgentSession, FileHistoryProvider, HistoryProvider, InMemoryHistoryProvider, Message

from _payloads import Turn, make_turns

__all__ = ["SERVER_STARTERS", "SESSION_ID", "SUBJECTS", "Subject", "unavailable_reason"]

SESSION_ID = "bench-session"
_WARMUP_SESSION_ID = "bench-warmup"
_PREFILL_BATCH = 1000  # messages per prefill call
_FLOOR_SYNCHRONOUS = "NORMAL"  # the floor's PRAGMA synchronous; see the results header

_warmup_turn = make_turns(-1, 1)[0]


class Subject:
    """One store under test. Subclasses set ``name`` and implement the hooks."""

    name = ""
    #: The floor row this subject's ratios are computed against (the floor names itself).
    floor = "raw aiosqlite (floor)"
    #: The kind of server the subject needs (``redis``, ``redis-cluster``), started by the run; ``None``: none.
    server: str | None = None
    #: Largest history (messages) ``prefill`` reaches in reasonable time; ``None`` means any.
    max_history: int | None = None
    #: Why ``max_history`` is set, for the results.
    max_history_reason = ""
    #: Every save reads the whole stored history, so its cost grows with the session. Such stores
    #: are interleaved with each other, not with the rest: a slow store in the rotation evicts the
    #: CPU caches and makes every other store's operations measurably slower.
    rereads_history = False
    #: Modules (``module`` or ``module:attribute``) the subject needs beyond the default environment.
    requires: tuple[str, ...] = ()

    async def open(self, directory: Path) -> None:
        raise NotImplementedError

    async def save(self, turn: Turn) -> None:
        raise NotImplementedError

    async def load(self) -> int:
        """Load the session; return how many messages came back."""
        raise NotImplementedError

    async def prefill(self, turns: Sequence[Turn]) -> None:
        for start in range(0, len(turns), _PREFILL_BATCH // 2):
            await self._prefill_batch(turns[start : start + _PREFILL_BATCH // 2])

    async def _prefill_batch(self, turns: Sequence[Turn]) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        """Release what ``open`` acquired."""


def _messages(turns: Sequence[Turn]) -> list[Message]:
    return [m for turn in turns for m in turn.messages]


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
        await self._insert(_WARMUP_SESSION_ID, _warmup_turn.messages)

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
        await self._insert(SESSION_ID, _messages(turns))

    async def close(self) -> None:
        await self._db.close()


class _ProviderSubject(Subject):
    """A framework ``HistoryProvider``, called as an agent calls it."""

    provider: HistoryProvider

    def _state(self) -> dict[str, Any] | None:
        return None

    async def _save(self, session_id: str, messages: Sequence[Message]) -> None:
        await self.provider.save_messages(session_id, messages, state=self._state())

    async def save(self, turn: Turn) -> None:
        await self._save(SESSION_ID, turn.messages)

    async def load(self) -> int:
        return len(await self.provider.get_messages(SESSION_ID, state=self._state()))

    async def _prefill_batch(self, turns: Sequence[Turn]) -> None:
        await self._save(SESSION_ID, _messages(turns))


class OursSQLite(_ProviderSubject):
    """``agent_stores.sqlite.SQLiteHistoryProvider`` through ``open_stores("sqlite:///...")``."""

    name = "ours: SQLiteHistoryProvider"
    requires = ("agent_stores.sqlite:SQLiteHistoryProvider",)

    async def open(self, directory: Path) -> None:
        from agent_stores.core import open_stores

        self._stores = open_stores(f"sqlite:///{directory / 'ours.db'}")
        self.provider = self._stores.history_provider()
        await self._save(_WARMUP_SESSION_ID, _warmup_turn.messages)

    async def _prefill_batch(self, turns: Sequence[Turn]) -> None:
        await self.provider.import_messages(SESSION_ID, _messages(turns))  # type: ignore[attr-defined]

    async def close(self) -> None:
        await self._stores.aclose()


class CoreInProcess(_ProviderSubject):
    """The core's ``LogHistoryProvider`` on the in-process ``MemoryLogDriver``: our rules, no I/O."""

    name = "core in-process (no I/O)"

    async def open(self, directory: Path) -> None:
        from agent_stores.core import LogHistoryProvider
        from agent_stores.core.memory import MemoryLogDriver

        self.provider = LogHistoryProvider(MemoryLogDriver())
        await self._save(_WARMUP_SESSION_ID, _warmup_turn.messages)

    async def _prefill_batch(self, turns: Sequence[Turn]) -> None:
        await self.provider.import_messages(SESSION_ID, _messages(turns))  # type: ignore[attr-defined]


class FrameworkFile(_ProviderSubject):
    """The framework's ``FileHistoryProvider`` (JSON Lines, one file per session)."""

    name = "framework FileHistoryProvider"
    rereads_history = True
    max_history = 10_000
    max_history_reason = "every save re-reads and re-parses the whole file: pre-filling 100k takes minutes"

    async def open(self, directory: Path) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ExperimentalWarning: expected, not news for a benchmark
            self.provider = FileHistoryProvider(directory / "file-history")
        await self._save(_WARMUP_SESSION_ID, _warmup_turn.messages)


class FrameworkInMemory(_ProviderSubject):
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
        state["messages"] = [*state.get("messages", []), *_messages(turns)]


class OpenAIAgentsSQLite(Subject):
    """``openai-agents``' ``SQLiteSession`` on a file database, with the equivalent input items."""

    name = "openai-agents SQLiteSession"
    requires = ("agents",)

    async def open(self, directory: Path) -> None:
        from agents import SQLiteSession

        path = directory / "openai-agents.db"
        warmup = SQLiteSession(_WARMUP_SESSION_ID, path)
        await warmup.add_items(list(_warmup_turn.items))  # type: ignore[arg-type]
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


# Imported here, after Subject and _ProviderSubject exist: the Redis rows subclass them.
from _subjects_mongodb import MongoDBOurs, OpenAIAgentsMongoDB, RawPymongo  # noqa: E402 - they subclass the above
from _subjects_redis import (  # noqa: E402
    SERVER_STARTERS,
    AgentFrameworkRedis,
    OpenAIAgentsRedis,
    OursRedis,
    OursRedisCluster,
    RawRedisPy,
)

#: Every subject, each floor before the rows compared with it; the order rotates between repetitions.
SUBJECTS: tuple[Callable[[], Subject], ...] = (
    RawAiosqlite,
    OursSQLite,
    CoreInProcess,
    FrameworkFile,
    FrameworkInMemory,
    OpenAIAgentsSQLite,
    RawRedisPy,
    OursRedis,
    OursRedisCluster,
    AgentFrameworkRedis,
    OpenAIAgentsRedis,
    RawPymongo,
    MongoDBOurs,
    OpenAIAgentsMongoDB,
    lambda: importlib.import_module("_subjects_s3").RawBoto3(),
    lambda: importlib.import_module("_subjects_s3").OursS3(),
    lambda: importlib.import_module("_subjects_fsspec").OursFsspecLocal(),
)


def unavailable_reason(subject: Subject, servers: dict[str, str] | None = None) -> str | None:
    """Return why ``subject`` cannot run here (a package or its server is missing), or ``None``.

    ``servers`` maps each server kind that could not be started to the reason.
    """
    if subject.server is not None and servers and subject.server in servers:
        return f"no {subject.server} server: {servers[subject.server]}"
    for requirement in subject.requires:
        module, _, name = requirement.partition(":")
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return f"not installed ({module}); run with `uv run --group bench`"
        if name and not hasattr(importlib.import_module(module), name):
            return f"not available yet ({module} has no {name})"
    return None
