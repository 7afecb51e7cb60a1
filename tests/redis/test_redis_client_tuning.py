"""The owned client's cheaper connections: the same safety and the same bytes on the wire as redis-py's own.

An owned client checks a pooled connection for unread data from what it has already received
(no zero-timeout read per command) and packs commands with hiredis, on the redis-py releases
that tuning is tested on (``TESTED_REDIS_PY``); on any other it keeps redis-py's own
connections. These tests hold the tuning to what redis-py's own connections guarantee (a
connection left with an unread reply or closed by the server is never used for the next
command, every command goes out byte for byte as redis-py's packer writes it) and check which
releases get it. ``test_redis_conformance.py`` runs the suites on the untuned path too.
"""

from __future__ import annotations

import asyncio
import logging
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import redis
import redis._parsers
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio import Redis, RedisCluster
from redis.asyncio.connection import AbstractConnection, Connection, DefaultParser
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from agent_stores.redis import RedisConnection, _tuning
from agent_stores.redis._tuning import TESTED_REDIS_PY, tune_pool, tuning_unavailable
from agent_stores.testing.servers import Server

LOCK = Path(__file__).resolve().parents[2] / "uv.lock"

#: Why the tuning is off with the installed redis-py (``None``: it is on). On a release it is not
#: tested on, the tests of the tuned connections have nothing to test and say so.
OFF = tuning_unavailable()
needs_tuning = pytest.mark.skipif(OFF is not None, reason=f"the client tuning is off: {OFF}")


def _release(version: str) -> tuple[int, int]:
    major, minor = version.split(".")[:2]
    return int(major), int(minor)


@pytest_asyncio.fixture
async def owned(redis_single: Server) -> AsyncIterator[Redis]:
    # No retries: a command sent on a dead connection fails instead of being repeated on a new one.
    connection = RedisConnection.from_url(redis_single.url, retry=Retry(NoBackoff(), 0))
    client = connection.client
    assert isinstance(client, Redis)
    yield client
    await connection.aclose()


# -- which releases are tuned ----------------------------------------------------------------------


async def _received(connection: AbstractConnection) -> None:
    """Wait until what the server sent (a reply, or its close) has reached the connection's stream."""
    stream = connection._reader  # pyright: ignore[reportPrivateUsage]
    assert stream is not None
    if not (stream._buffer or stream.at_eof()):  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]
        # asyncio's own wait for data or end of file: woken by the transport, not a timer
        await asyncio.wait_for(stream._wait_for_data("_received"), 30)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]


def test_the_locked_redis_py_is_a_release_the_tuning_is_tested_on() -> None:
    locked = re.search(r'\nname = "redis"\nversion = "([^"]+)"', LOCK.read_text(encoding="utf-8"))
    assert locked is not None
    assert _release(locked[1]) in TESTED_REDIS_PY


def test_the_installed_redis_py_is_tuned_exactly_when_it_is_a_tested_release() -> None:
    if _release(redis.__version__) in TESTED_REDIS_PY:
        assert OFF is None  # hiredis is installed and every internal the tuning needs is there
    else:
        assert OFF is not None and f"redis-py {redis.__version__} is not a release it is tested on" in OFF


@pytest.mark.parametrize("version", ["7.0.1", "7.2.0", "8.0.0", "9.0.0", "10.1.0b1", "unknown"])
def test_a_release_the_tuning_is_not_tested_on_keeps_redis_py_s_connections(
    version: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(_tuning, "REDIS_PY_VERSION", version)
    with caplog.at_level(logging.DEBUG, logger="agent_stores.redis"):
        connection = RedisConnection.from_url("redis://127.0.0.1:6379/0")
    pool = connection.client.connection_pool
    assert pool.connection_class is Connection
    assert pool.connection_kwargs.get("parser_class", DefaultParser) is DefaultParser  # pyright: ignore[reportUnknownMemberType]
    assert [r.getMessage() for r in caplog.records] == [
        f"the owned client keeps redis-py's own connections: redis-py {version} is not a release it is tested "
        f"on ({', '.join(f'{a}.{b}' for a, b in sorted(TESTED_REDIS_PY))})"
    ]


@needs_tuning
@pytest.mark.parametrize("version", sorted(f"{a}.{b}.0" for a, b in TESTED_REDIS_PY))
def test_a_release_the_tuning_is_tested_on_gets_the_tuned_connections(
    version: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_tuning, "REDIS_PY_VERSION", version)
    pool = RedisConnection.from_url("redis://127.0.0.1:6379/0").client.connection_pool
    assert pool.connection_class is not Connection and issubclass(pool.connection_class, Connection)
    assert pool.connection_kwargs["parser_class"].__name__ == "PollingHiredisParser"  # pyright: ignore[reportUnknownMemberType]


@needs_tuning
@pytest.mark.asyncio
async def test_an_owned_cluster_client_packs_with_hiredis_on_every_node_it_finds(redis_cluster: Server) -> None:
    connection = RedisConnection.from_url(redis_cluster.url)
    try:
        client = connection.client
        assert isinstance(client, RedisCluster)
        await connection.run("ping", connection.send("PING"))  # the client learns the cluster's nodes
        nodes = client.get_nodes()
        assert len(nodes) >= 3
        for node in nodes:
            assert node.connection_class is not Connection and issubclass(node.connection_class, Connection)
    finally:
        await connection.aclose()


def test_an_owned_cluster_client_on_an_untested_release_keeps_redis_py_s_connections(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_tuning, "REDIS_PY_VERSION", "99.0.0")
    client = RedisConnection.from_url("redis+cluster://127.0.0.1:7000").client
    assert isinstance(client, RedisCluster)
    assert client.connection_kwargs["connection_class"] is Connection
    assert all(node.connection_class is Connection for node in client.get_nodes())


def test_without_the_internals_it_needs_the_client_keeps_redis_py_s_connections(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # A redis-py without the parser class the tuned connections build on.
    monkeypatch.delattr(redis._parsers, "_AsyncHiredisParser")  # pyright: ignore[reportPrivateUsage]
    monkeypatch.delitem(sys.modules, "agent_stores.redis._hiredis", raising=False)
    with caplog.at_level(logging.DEBUG, logger="agent_stores.redis"):
        pool = RedisConnection.from_url("redis://127.0.0.1:6379/0").client.connection_pool
    assert pool.connection_class is Connection
    assert "parser_class" not in pool.connection_kwargs  # pyright: ignore[reportUnknownMemberType]
    [record] = caplog.records
    assert "the owned client keeps redis-py's own connections" in record.getMessage()
    if OFF is None:
        message = record.getMessage()
        assert "lacks an internal it needs (ImportError: cannot import name '_AsyncHiredisParser'" in message


# -- the tuned connections keep redis-py's guarantees --------------------------------------------------


@needs_tuning
@pytest.mark.asyncio
async def test_a_connection_left_with_an_unread_reply_is_not_used_for_the_next_command(owned: Redis) -> None:
    from agent_stores.redis._hiredis import PollingHiredisParser

    pool = owned.connection_pool
    stale = await pool.get_connection()
    assert isinstance(stale._parser, PollingHiredisParser)  # pyright: ignore[reportPrivateUsage]
    await stale.send_command("ECHO", "left behind")
    await _received(stale)
    await pool.release(stale)
    assert await owned.echo("fresh") == b"fresh"  # pyright: ignore[reportUnknownMemberType]
    assert await owned.echo("again") == b"again"  # pyright: ignore[reportUnknownMemberType]


@needs_tuning
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
    tune_pool(pool)  # on a release the tuning is tested on (these tests need it)
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


@needs_tuning
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


@needs_tuning
def test_another_text_encoding_is_packed_by_redis_py() -> None:
    tuned = _tuned_connection(encoding="latin-1")
    assert b"".join(tuned.pack_command("SET", "k", "é")) == b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\n\xe9\r\n"
