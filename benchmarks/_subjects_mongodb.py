"""MongoDB subjects of the history benchmark: the raw pymongo floor, ours, openai-agents' ``MongoDBSession``.

The server is ``$AGENT_STORES_MONGODB_URL`` when set, else the nx-27017 stand-in started once
on a loopback port for the whole run (it is NOT MongoDB: a SQLite-backed reimplementation of the
wire protocol, so the absolute numbers say little about MongoDB; the ratios compare the three
clients on one server). Which server ran is printed once and recorded in :data:`SERVER`.
Every subject gets a database of its own per repetition, dropped at close.
"""

from __future__ import annotations

import atexit
import os
import sys
import tempfile
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec
from agent_framework import Message

from _payloads import Turn, make_turns
from _subject_base import SESSION_ID, ProviderSubject, Subject, messages_of

__all__ = ["SERVER", "MongoDBOurs", "MongoDBOursSealed", "OpenAIAgentsMongoDB", "RawPymongo", "mongodb_server"]

_WARMUP_SESSION_ID = "bench-warmup"
_warmup_turn = make_turns(-1, 1)[0]
_PREFILL_MESSAGES = 500  # messages per prefill call (one batch document of ours)

#: What the MongoDB subjects ran against: filled by :func:`mongodb_server` on first use.
SERVER: dict[str, str] = {}
_started: list[Any] = []


def mongodb_server() -> str:
    """Return the benchmark server's URL (no database); start the stand-in once when no URL is given."""
    if "url" in SERVER:
        return SERVER["url"]
    url = os.environ.get("AGENT_STORES_MONGODB_URL")
    if url:
        SERVER.update(url=url, description="the server at $AGENT_STORES_MONGODB_URL")
    else:
        from agent_stores.testing.servers.mongodb import NX27017Process

        process = NX27017Process(Path(tempfile.mkdtemp(prefix="agent-stores-bench-nx27017-")))
        process.start()
        _started.append(process)
        atexit.register(process.stop)
        SERVER.update(url=f"mongodb://127.0.0.1:{process.port}/", description=process.description)
    print(f"MongoDB benchmark subjects run against: {SERVER['description']}", file=sys.stderr)
    return SERVER["url"]


def _database_url(database: str) -> str:
    base = mongodb_server()
    scheme, _, rest = base.partition("://")
    hosts, _, tail = rest.partition("/")
    _, question, query = tail.partition("?")
    return f"{scheme}://{hosts}/{database}" + (f"?{query}" if question else "")


def _fresh_database() -> str:
    return f"bench_{uuid.uuid4().hex[:12]}"


class RawPymongo(Subject):
    """The floor: the same work on pymongo's ``AsyncMongoClient`` with no abstraction.

    Per turn: ``to_dict`` + msgspec encode, one ``insert_many`` of 2 documents (session id, a
    sequence number kept in this process, the payload). Load: one ``find`` on the
    (session, seq) index sorted by seq, msgspec decode, ``Message.from_dict``.
    """

    name = "raw pymongo (floor)"
    floor = "raw pymongo (floor)"
    requires = ("pymongo",)

    async def open(self, directory: Path) -> None:
        from pymongo import AsyncMongoClient

        self._encode = msgspec.json.Encoder().encode
        self._decode = msgspec.json.Decoder().decode
        self._name = _fresh_database()
        self._client: Any = AsyncMongoClient(mongodb_server())
        self._messages = self._client[self._name]["messages"]
        await self._messages.create_index([("session_id", 1), ("seq", 1)], unique=True)
        self._seq = 0
        await self._insert(_WARMUP_SESSION_ID, _warmup_turn.messages)

    async def _insert(self, session_id: str, messages: Sequence[Message]) -> None:
        docs: list[dict[str, Any]] = []
        for message in messages:
            self._seq += 1
            docs.append({"session_id": session_id, "seq": self._seq, "payload": self._encode(message.to_dict())})
        await self._messages.insert_many(docs)

    async def save(self, turn: Turn) -> None:
        await self._insert(SESSION_ID, turn.messages)

    async def load(self) -> int:
        docs = await self._messages.find({"session_id": SESSION_ID}, {"payload": 1, "_id": 0}).sort("seq", 1).to_list()
        return len([Message.from_dict(self._decode(doc["payload"])) for doc in docs])

    async def prefill(self, turns: Sequence[Turn]) -> None:
        messages = messages_of(turns)
        for start in range(0, len(messages), _PREFILL_MESSAGES):
            await self._insert(SESSION_ID, messages[start : start + _PREFILL_MESSAGES])

    async def close(self) -> None:
        await self._client.drop_database(self._name)
        await self._client.close()


class MongoDBOurs(ProviderSubject):
    """``agent_stores.mongodb.MongoDBHistoryProvider`` through ``open_stores("mongodb://…/db")``."""

    name = "ours: MongoDBHistoryProvider"
    floor = "raw pymongo (floor)"
    requires = ("agent_stores.mongodb:MongoDBHistoryProvider",)

    async def open(self, directory: Path) -> None:
        from agent_stores.core import open_stores

        self._name = _fresh_database()
        self._stores = open_stores(_database_url(self._name), **self.sealing())
        self.provider = self._stores.history_provider()
        await self._save(_WARMUP_SESSION_ID, _warmup_turn.messages)

    async def prefill(self, turns: Sequence[Turn]) -> None:
        messages = messages_of(turns)
        for start in range(0, len(messages), _PREFILL_MESSAGES):
            await self.provider.import_messages(SESSION_ID, messages[start : start + _PREFILL_MESSAGES])  # type: ignore[attr-defined]

    async def close(self) -> None:
        from pymongo import AsyncMongoClient

        await self._stores.aclose()
        client: Any = AsyncMongoClient(mongodb_server())
        await client.drop_database(self._name)
        await client.close()


class MongoDBOursSealed(MongoDBOurs):
    """Ours through ``open_stores(..., encryption=Keyring)``: sealed records."""

    name = "ours: sealed MongoDBHistoryProvider (AES-256-GCM)"
    plain = MongoDBOurs.name


class OpenAIAgentsMongoDB(Subject):
    """``openai-agents``' ``MongoDBSession`` (``openai-agents[mongodb]``), with the equivalent input items."""

    name = "openai-agents MongoDBSession"
    floor = "raw pymongo (floor)"
    requires = ("agents.extensions.memory.mongodb_session:MongoDBSession",)

    async def open(self, directory: Path) -> None:
        from agents.extensions.memory.mongodb_session import MongoDBSession
        from pymongo import AsyncMongoClient

        self._name = _fresh_database()
        self._client: Any = AsyncMongoClient(mongodb_server())
        warmup = MongoDBSession(_WARMUP_SESSION_ID, client=self._client, database=self._name)
        await warmup.add_items(list(_warmup_turn.items))  # type: ignore[arg-type]
        self._session = MongoDBSession(SESSION_ID, client=self._client, database=self._name)

    async def save(self, turn: Turn) -> None:
        await self._session.add_items(list(turn.items))  # type: ignore[arg-type]

    async def load(self) -> int:
        return len(await self._session.get_items())

    async def _prefill_batch(self, turns: Sequence[Turn]) -> None:
        await self._session.add_items([item for turn in turns for item in turn.items])  # type: ignore[misc]

    async def close(self) -> None:
        await self._client.drop_database(self._name)
        await self._client.close()
