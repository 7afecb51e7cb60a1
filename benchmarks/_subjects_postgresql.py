"""PostgreSQL rows of the history benchmark: the raw psycopg floor, ours and two peers.

The server is ``$AGENT_STORES_POSTGRESQL_URL`` when set, else a new local cluster (Debian's
``postgresql`` binaries, ``agent_stores.testing.servers.postgresql``) on a free loopback port,
stopped when the run ends. Every subject gets a database of its own (made from ``template0``,
dropped at close), so no store finds another's tables or rows.

Peers: ``community-agent-framework-postgres``'s ``PostgresHistoryProvider`` (psycopg 3, its own
pool, schema made by its ``migrate()``) and openai-agents' ``SQLAlchemySession`` on an asyncpg
engine (``postgresql+asyncpg://``); both are in the ``bench`` dependency group.
"""

from __future__ import annotations

import contextlib
import uuid
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import msgspec
from agent_framework import Message

from _payloads import Turn
from _subject_base import SESSION_ID, WARMUP_SESSION_ID, WARMUP_TURN, ProviderSubject, Subject, messages_of
from _subjects_redis import _first_server, server_url  # pyright: ignore[reportPrivateUsage]

__all__ = [
    "POSTGRESQL_FLOOR",
    "CommunityPostgres",
    "OpenAIAgentsSQLAlchemy",
    "OursPostgreSQL",
    "OursSealedPostgreSQL",
    "RawPsycopg",
    "asyncpg_url",
    "create_database",
    "drop_database",
    "postgresql_server",
]

POSTGRESQL_FLOOR = "raw psycopg (floor)"
_PREFILL_MESSAGES = 1000  # messages per prefill call


def postgresql_server() -> contextlib.AbstractContextManager[tuple[str, str]]:
    """Yield ``(url, description)``: ``$AGENT_STORES_POSTGRESQL_URL``, else a new local cluster."""
    from agent_stores.testing.servers.postgresql import POSTGRESQL_URL_ENV, local_postgresql

    return _first_server("postgresql", POSTGRESQL_URL_ENV, [local_postgresql])


def _with_database(url: str, database: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{database}"))


def create_database(server: str, prefix: str = "bench") -> str:
    """Make a new empty database on ``server``; return its URL."""
    import psycopg

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')  # pyright: ignore[reportArgumentType]
    return _with_database(server, name)


def drop_database(server: str, url: str) -> None:
    """Drop the database ``url`` names from ``server`` (closing whatever is still connected to it)."""
    import psycopg

    name = urlsplit(url).path.lstrip("/")
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')  # pyright: ignore[reportArgumentType]


def asyncpg_url(url: str) -> str:
    """``url`` for SQLAlchemy's asyncpg dialect."""
    return "postgresql+asyncpg://" + url.split("://", 1)[1]


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ExperimentalWarning: expected, not news for a benchmark
        yield


class RawPsycopg(Subject):
    """The floor: the same work on one psycopg 3 ``AsyncConnection`` with no abstraction.

    Connected as ours connects (autocommit, no server-side prepared statements: pooler-safe).
    Per turn: ``to_dict`` + msgspec encode, one ``INSERT ... SELECT unnest(...)`` of both
    payloads (one round trip). Load: one ``SELECT`` on the (session, id) index, binary results,
    msgspec decode, ``Message.from_dict``.
    """

    name = POSTGRESQL_FLOOR
    floor = POSTGRESQL_FLOOR
    server = "postgresql"
    requires = ("psycopg",)

    async def open(self, directory: Path) -> None:
        import psycopg

        self._encode = msgspec.json.Encoder().encode
        self._decode = msgspec.json.Decoder().decode
        self._url = create_database(server_url("postgresql"))
        self._db: Any = await psycopg.AsyncConnection.connect(self._url, autocommit=True, prepare_threshold=None)
        await self._db.execute(
            "CREATE TABLE messages (id bigserial PRIMARY KEY, session_id text NOT NULL, payload bytea NOT NULL)"
        )
        await self._db.execute("CREATE INDEX messages_session ON messages (session_id, id)")
        await self._insert(WARMUP_SESSION_ID, WARMUP_TURN.messages)

    async def _insert(self, session_id: str, messages: Sequence[Message]) -> None:
        payloads = [self._encode(m.to_dict()) for m in messages]
        await self._db.execute(
            "INSERT INTO messages (session_id, payload) SELECT %s, unnest(%s::bytea[])", (session_id, payloads)
        )

    async def save(self, turn: Turn) -> None:
        await self._insert(SESSION_ID, turn.messages)

    async def load(self) -> int:
        cursor = await self._db.execute(
            "SELECT payload FROM messages WHERE session_id = %s ORDER BY id", (SESSION_ID,), binary=True
        )
        return len([Message.from_dict(self._decode(row[0])) for row in await cursor.fetchall()])

    async def prefill(self, turns: Sequence[Turn]) -> None:
        messages = messages_of(turns)
        for start in range(0, len(messages), _PREFILL_MESSAGES):
            await self._insert(SESSION_ID, messages[start : start + _PREFILL_MESSAGES])

    async def close(self) -> None:
        await self._db.close()
        drop_database(server_url("postgresql"), self._url)


class OursPostgreSQL(ProviderSubject):
    """``agent_stores.postgresql.PostgreSQLHistoryProvider`` through ``open_stores("postgresql://…")``."""

    name = "ours: PostgreSQLHistoryProvider"
    floor = POSTGRESQL_FLOOR
    server = "postgresql"
    requires = ("agent_stores.postgresql:PostgreSQLHistoryProvider",)

    async def open(self, directory: Path) -> None:
        from agent_stores.core import open_stores

        self._url = create_database(server_url("postgresql"))
        self._stores = open_stores(self._url, **self.sealing())
        self.provider = self._stores.history_provider()
        await self._save(WARMUP_SESSION_ID, WARMUP_TURN.messages)

    async def prefill(self, turns: Sequence[Turn]) -> None:
        messages = messages_of(turns)
        for start in range(0, len(messages), _PREFILL_MESSAGES):
            await self.provider.import_messages(SESSION_ID, messages[start : start + _PREFILL_MESSAGES])  # type: ignore[attr-defined]

    async def close(self) -> None:
        await self._stores.aclose()
        drop_database(server_url("postgresql"), self._url)


class OursSealedPostgreSQL(OursPostgreSQL):
    """Ours through ``open_stores(..., encryption=Keyring)``: sealed records."""

    name = "ours: sealed PostgreSQLHistoryProvider (AES-256-GCM)"
    plain = OursPostgreSQL.name


class CommunityPostgres(ProviderSubject):
    """``community-agent-framework-postgres``'s ``PostgresHistoryProvider`` (from its ``PostgresPersistence``)."""

    name = "community-agent-framework-postgres PostgresHistoryProvider"
    floor = POSTGRESQL_FLOOR
    server = "postgresql"
    requires = ("agent_framework_community_postgres:PostgresPersistence",)

    async def open(self, directory: Path) -> None:
        from agent_framework_community_postgres import PostgresPersistence

        self._url = create_database(server_url("postgresql"))
        with _quiet():
            self._hub: Any = PostgresPersistence(application_id="bench", connection_string=self._url)
            await self._hub.open()
            await self._hub.migrate()
            self.provider = self._hub.history_provider()
        await self._save(WARMUP_SESSION_ID, WARMUP_TURN.messages)

    async def close(self) -> None:
        await self._hub.close()
        drop_database(server_url("postgresql"), self._url)


class OpenAIAgentsSQLAlchemy(Subject):
    """openai-agents' ``SQLAlchemySession`` on an asyncpg engine, with the equivalent input items."""

    name = "openai-agents SQLAlchemySession (asyncpg)"
    floor = POSTGRESQL_FLOOR
    server = "postgresql"
    requires = ("agents.extensions.memory.sqlalchemy_session:SQLAlchemySession", "asyncpg")

    async def open(self, directory: Path) -> None:
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession
        from sqlalchemy.ext.asyncio import create_async_engine

        self._url = create_database(server_url("postgresql"))
        self._engine = create_async_engine(asyncpg_url(self._url))
        warmup = SQLAlchemySession(WARMUP_SESSION_ID, engine=self._engine, create_tables=True)
        await warmup.add_items(list(WARMUP_TURN.items))  # type: ignore[arg-type]
        self._session = SQLAlchemySession(SESSION_ID, engine=self._engine, create_tables=True)

    async def save(self, turn: Turn) -> None:
        await self._session.add_items(list(turn.items))  # type: ignore[arg-type]

    async def load(self) -> int:
        return len(await self._session.get_items())

    async def _prefill_batch(self, turns: Sequence[Turn]) -> None:
        await self._session.add_items([item for turn in turns for item in turn.items])  # type: ignore[misc]

    async def close(self) -> None:
        await self._engine.dispose()
        drop_database(server_url("postgresql"), self._url)
