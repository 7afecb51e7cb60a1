"""Owned Redis stores warn about nothing on the installed redis-py: built, used and closed, on every server kind.

CI runs this on the lock's redis-py and on the newest release (which a fresh ``pip install``
resolves), where a synchronous ``redis.retry.Retry`` handed to the asyncio client warned.
"""

from __future__ import annotations

import gc
import warnings

import pytest
from agent_framework import AgentSession, Message

from agent_stores.core import open_stores
from agent_stores.redis import RedisAgentFileStore, RedisHistoryProvider, RedisSessionStore
from agent_stores.testing.servers import Server

pytestmark = pytest.mark.asyncio


async def _use(url: str, key_prefix: str) -> None:
    async with open_stores(url, key_prefix=key_prefix) as stores:
        history = stores.history_provider(max_messages=10, ttl=3600)
        files, sessions = stores.file_store(), stores.session_store()
        await history.save_messages("s", [Message("user", ["hello"]), Message("assistant", ["hi"])])
        assert [m.text for m in await history.get_messages("s")] == ["hello", "hi"]
        await files.write("notes/a.md", "alpha\n")
        assert [r.file_name for r in await files.search("notes", "ALPHA")] == ["a.md"]
        await sessions.set("s", AgentSession(session_id="s"))
        assert await sessions.get("s") is not None
        assert await history.list_sessions() == ["s"]  # type: ignore[attr-defined]
    async with RedisHistoryProvider.from_url(url, key_prefix=key_prefix) as history:
        assert len(await history.get_messages("s")) == 2
    async with RedisAgentFileStore.from_url(url, key_prefix=key_prefix) as files:
        assert await files.read("notes/a.md") == "alpha\n"
    async with RedisSessionStore.from_url(url, key_prefix=key_prefix) as sessions:
        await sessions.delete("s")


@pytest.mark.parametrize("tuned", [True, False], ids=["as-installed", "untuned"])
@pytest.mark.parametrize("server_fixture", ["redis_single", "valkey_local", "redis_cluster"])
async def test_an_owned_store_built_used_and_closed_warns_about_nothing(
    server_fixture: str, tuned: bool, request: pytest.FixtureRequest, key_prefix: str
) -> None:
    server: Server = request.getfixturevalue(server_fixture)
    if not tuned:
        request.getfixturevalue("untuned_redis_py")
    gc.collect()  # what earlier tests left behind warns now, not inside the record below
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        await _use(server.url, key_prefix)
        gc.collect()  # an unclosed socket or client of the stores warns when collected
    assert [f"{w.category.__name__}: {w.message} ({w.filename}:{w.lineno})" for w in caught] == []
