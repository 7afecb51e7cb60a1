"""The owned client's cheaper connections: the same safety and the same bytes on the wire as redis-py's own.

An owned client checks a pooled connection for unread data from what it has already received
(no zero-timeout read per command) and packs commands with hiredis. These tests hold it to
what redis-py's own connections guarantee: a connection left with an unread reply or closed by
the server is never used for the next command, and every command goes out byte for byte as
redis-py's packer writes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
import redis
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio import Redis
from redis.asyncio.connection import AbstractConnection, Connection
from redis.backoff import NoBackoff
from redis.retry import Retry

from agent_stores.redis import RedisConnection
from agent_stores.redis._tuning import PollingHiredisParser, tune_pool
from agent_stores.testing.servers import Server


@pytest_asyncio.fixture
async def owned(redis_single: Server) -> AsyncIterator[Redis]:
    # No retries: a command sent on a dead connection fails instead of being repeated on a new one.
    connection = RedisConnection.from_url(redis_single.url, retry=Retry(NoBackoff(), 0))
    client = connection.client
    assert isinstance(client, Redis)
    yield client
    await connection.aclose()


#: redis-py 8 checks pooled connections itself, and skips the check while its maintenance
#: notifications are on ("auto", its default over RESP3): a connection left with an unread reply
#: is handed out again (a plain redis-py 8.1 client does the same). Strict, so a redis-py that
#: checks again fails here and the mark comes off.
_REDIS_PY_8 = int(redis.__version__.split(".")[0]) >= 8
_NO_CHECK = pytest.mark.xfail(_REDIS_PY_8, strict=True, reason="redis-py 8 skips this check (maint. notifications)")


async def _received(connection: AbstractConnection) -> None:
    """Wait until what the server sent (a reply, or its close) has reached the connection's stream."""
    stream = connection._reader  # pyright: ignore[reportPrivateUsage]
    assert stream is not None
    if not (stream._buffer or stream.at_eof()):  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
        # asyncio's own wait for data or end of file: woken by the transport, not a timer
        await asyncio.wait_for(stream._wait_for_data("_received"), 30)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]


@_NO_CHECK
@pytest.mark.asyncio
async def test_a_connection_left_with_an_unread_reply_is_not_used_for_the_next_command(owned: Redis) -> None:
    pool = owned.connection_pool
    stale = await pool.get_connection()
    assert isinstance(stale._parser, PollingHiredisParser)  # pyright: ignore[reportPrivateUsage]
    await stale.send_command("ECHO", "left behind")
    await _received(stale)
    await pool.release(stale)
    assert await owned.echo("fresh") == b"fresh"  # pyright: ignore[reportUnknownMemberType]
    assert await owned.echo("again") == b"again"  # pyright: ignore[reportUnknownMemberType]


@_NO_CHECK
@pytest.mark.asyncio
async def test_a_connection_the_server_closed_is_replaced_before_the_next_command(
    owned: Redis, redis_single: Server
) -> None:
    assert await owned.ping()  # pyright: ignore[reportUnknownMemberType]
    client_id = await owned.client_id()  # pyright: ignore[reportUnknownMemberType]
    (pooled,) = owned.connection_pool._available_connections  # pyright: ignore[reportPrivateUsage]
    admin = Redis.from_url(redis_single.url)
    try:
        assert await admin.client_kill_filter(_id=client_id) == 1  # pyright: ignore[reportUnknownMemberType]
    finally:
        await admin.aclose()
    await _received(pooled)
    assert await owned.ping()  # pyright: ignore[reportUnknownMemberType]
    assert await owned.client_id() != client_id  # pyright: ignore[reportUnknownMemberType]


@pytest.mark.asyncio
async def test_a_borrowed_client_keeps_its_own_connections(redis_single: Server) -> None:
    client = Redis.from_url(redis_single.url)
    RedisConnection(client)
    assert client.connection_pool.connection_class is Connection
    assert "parser_class" not in client.connection_pool.connection_kwargs  # pyright: ignore[reportUnknownMemberType]
    await client.aclose()


def _tuned_connection(**kwargs: Any) -> Connection:
    pool = Redis(**kwargs).connection_pool
    tune_pool(pool)
    connection = pool.make_connection()
    assert type(connection) is not Connection
    return connection


_argument = st.one_of(
    st.text(),
    st.binary(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True),
    st.booleans(),
    st.memoryviews() if hasattr(st, "memoryviews") else st.binary().map(memoryview),
)


@given(
    name=st.sampled_from(["EVALSHA", "LRANGE", "SET", "CONFIG GET", "SCRIPT LOAD", "eval"]),
    args=st.lists(_argument, max_size=12),
)
def test_commands_are_packed_byte_for_byte_as_redis_py_packs_them(name: str, args: list[Any]) -> None:
    tuned, plain = _tuned_connection(), Connection()
    try:
        expected = b"".join(bytes(part) for part in plain.pack_command(name, *args))
    except Exception as err:  # redis-py refuses it (a bool, a lone surrogate): so must the tuned connection
        with pytest.raises(type(err)):
            tuned.pack_command(name, *args)
        return
    assert b"".join(bytes(part) for part in tuned.pack_command(name, *args)) == expected


def test_another_text_encoding_is_packed_by_redis_py() -> None:
    tuned = _tuned_connection(encoding="latin-1")
    assert b"".join(tuned.pack_command("SET", "k", "é")) == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n\xe9\r\n"
