"""Redis backend behaviour beyond the conformance suites: URLs, ownership, round trips, faults, listing."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any, NoReturn, cast

import pytest
import pytest_asyncio
from agent_framework import Message
from redis import Redis as SyncRedis
from redis.asyncio import Redis, RedisCluster
from redis.asyncio.cluster import ClusterNode
from redis.exceptions import NoPermissionError

from agent_stores.core import CorruptRecordError, LogRecord, StoreConflictError, StoreUnavailableError, open_stores
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.redis import (
    DEFAULT_TIMEOUT,
    RedisAgentFileStore,
    RedisBackend,
    RedisConnection,
    RedisHistoryProvider,
    RedisLogDriver,
    RedisObjectDriver,
    RedisSessionStore,
    parse_redis_url,
)
from agent_stores.testing import eventually
from agent_stores.testing.servers import Server, ServerUnavailable, is_required
from agent_stores.testing.servers.redis import LocalRedis, local_redis_cluster, server_binary, valkey_binary

pytestmark = pytest.mark.asyncio

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "redis_quickstart.py"

#: What the README's security posture tells users to allow (the commands the client sends and the scripts run).
ACL_COMMANDS = (
    "+evalsha +eval +ping +lrange +llen +hget +hmget +get +set +del +pttl +pexpire +persist +rpush"
    " +zscore +zadd +zrem +zrangebylex +zrangebyscore +hset +hdel +time"
)


def _msg(text: str, message_id: str | None = None) -> Message:
    return Message("user", [text], message_id=message_id)


@pytest_asyncio.fixture
async def client(redis_single: Server) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_single.url)
    yield client
    await client.aclose()


@pytest.fixture
def connection(client: Redis, key_prefix: str) -> RedisConnection:
    return RedisConnection(client, key_prefix=key_prefix)


# -- URLs ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "nodes", "cluster", "tls", "db"),
    [
        ("redis://localhost", (("localhost", 6379),), False, False, 0),
        ("redis://h:7000/3", (("h", 7000),), False, False, 3),
        ("rediss://h:6380/0", (("h", 6380),), False, True, 0),
        ("valkey://h", (("h", 6379),), False, False, 0),
        ("redis+cluster://a:7000,b:7001", (("a", 7000), ("b", 7001)), True, False, 0),
        ("rediss+cluster://a:7000", (("a", 7000),), True, True, 0),
        ("redis://[::1]:7000", (("::1", 7000),), False, False, 0),
    ],
)
async def test_url_forms(url: str, nodes: Any, cluster: bool, tls: bool, db: int) -> None:
    parsed = parse_redis_url(url)
    assert (parsed.nodes, parsed.cluster, parsed.tls, parsed.db) == (nodes, cluster, tls, db)


async def test_url_credentials_options_and_redaction() -> None:
    parsed = parse_redis_url("redis://app:s%40cret@h:1/2?socket_timeout=0.5&key_prefix=x:&shards=4")
    assert (parsed.username, parsed.password) == ("app", "s@cret")
    assert dict(parsed.options) == {"socket_timeout": 0.5}
    assert (parsed.key_prefix, parsed.shards) == ("x:", 4)
    assert "s@cret" not in repr(parsed) and "cret" not in parsed.address
    assert parse_redis_url("redis://:pw@h").username is None


@pytest.mark.parametrize(
    "url",
    [
        "http://h",
        "redis://a:1,b:2",
        "redis+cluster://a:1/0",
        "redis://h/x",
        "redis://h:99999",
        "redis://h?nope=1",
        "redis://h?socket_timeout=fast",
    ],
)
async def test_bad_urls_are_value_errors(url: str) -> None:
    with pytest.raises(ValueError):
        parse_redis_url(url)


async def test_unknown_client_option_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="client option"):
        RedisHistoryProvider.from_url("redis://127.0.0.1:1/0", no_such_option=1)


async def test_bad_key_prefix_and_shards(client: Redis) -> None:
    with pytest.raises(ValueError):
        RedisConnection(client, key_prefix="a{b")
    with pytest.raises(ValueError):
        RedisConnection(client, shards=0)
    with pytest.raises(TypeError):
        RedisConnection(object())  # type: ignore[arg-type]


# -- open_stores and ownership --------------------------------------------------------------------


async def test_open_stores_gives_all_three_stores_on_one_client(redis_single: Server, key_prefix: str) -> None:
    async with open_stores(f"{redis_single.url}?key_prefix={key_prefix}") as stores:
        assert isinstance(stores.backend, RedisBackend)
        history = stores.history_provider()
        files, sessions = stores.file_store(), stores.session_store()
        assert isinstance(history, RedisHistoryProvider)
        assert isinstance(files, RedisAgentFileStore) and isinstance(sessions, RedisSessionStore)
        assert history.connection is files.connection is sessions.connection
        await history.save_messages("s", [_msg("hi")])
        await files.write("a.txt", "x")
        assert [m.text for m in await history.get_messages("s")] == ["hi"]
        assert await files.read("a.txt") == "x"


async def test_must_exist_is_accepted_and_a_read_creates_no_key(redis_single: Server, key_prefix: str) -> None:
    """A Redis database always exists, and reads write nothing: ``must_exist`` changes nothing there."""
    async with open_stores(redis_single.url, key_prefix=key_prefix, must_exist=True) as stores:
        assert await stores.history_provider().get_messages("s") == []
        assert await stores.file_store().list_children("") == []
        assert await stores.session_store().get("s") is None
    client: Redis = Redis.from_url(redis_single.url)
    try:
        assert [key async for key in client.scan_iter(match=f"{key_prefix}*")] == []
    finally:
        await client.aclose()


async def test_valkey_scheme_reaches_the_same_backend(redis_single: Server, key_prefix: str) -> None:
    url = redis_single.url.replace("redis://", "valkey://", 1)
    async with open_stores(url, key_prefix=key_prefix) as stores:
        assert isinstance(stores.backend, RedisBackend)
        await stores.history_provider().save_messages("s", [_msg("hi")])


async def test_borrowed_client_is_never_closed(client: Redis, key_prefix: str) -> None:
    async with RedisHistoryProvider(client, key_prefix=key_prefix) as history:
        await history.save_messages("s", [_msg("hi")])
    assert await client.ping()


async def test_owned_client_is_closed_and_warns_when_forgotten(redis_single: Server, key_prefix: str) -> None:
    history = RedisHistoryProvider.from_url(redis_single.url, key_prefix=key_prefix)
    await history.save_messages("s", [_msg("hi")])
    await history.aclose()
    forgotten = RedisHistoryProvider.from_url(redis_single.url)
    with pytest.warns(ResourceWarning):
        forgotten.__del__()
    await forgotten.aclose()


async def test_owned_client_keeps_a_deadline_per_operation_unless_given_a_socket_timeout(redis_single: Server) -> None:
    # redis-py's socket_timeout costs a task per send on Python 3.11: an owned client has none at
    # the socket, and the funnel keeps one deadline per operation instead
    async with RedisHistoryProvider.from_url(redis_single.url) as history:
        assert history.connection.timeout == DEFAULT_TIMEOUT
        assert history.connection.client.connection_pool.connection_kwargs.get("socket_timeout") is None
    async with RedisHistoryProvider.from_url(f"{redis_single.url}?socket_timeout=2") as history:
        assert history.connection.timeout is None
        assert history.connection.client.connection_pool.connection_kwargs["socket_timeout"] == 2
    async with RedisHistoryProvider.from_url(redis_single.url, socket_timeout=3) as history:
        assert history.connection.timeout is None
    borrowed = Redis.from_url(redis_single.url)
    assert RedisConnection(borrowed).timeout is None
    await borrowed.aclose()


async def test_operation_past_its_deadline_is_unavailable_and_the_next_gets_its_own_reply(
    redis_single: Server, key_prefix: str
) -> None:
    connection = RedisConnection(Redis.from_url(redis_single.url), key_prefix=key_prefix, owned=True, timeout=0.2)
    other = Redis.from_url(redis_single.url)
    key, empty = f"{key_prefix}late", f"{key_prefix}empty"
    try:
        await connection.run("ping", connection.send("PING"))  # one pooled connection, reused below
        with pytest.raises(StoreUnavailableError, match="unavailable"):
            # the server answers only once the list gets an element (below), long after the deadline
            await connection.run("wait", connection.send("BLPOP", empty, 60))
        # the cancelled command's connection was closed, so its late reply reaches no one
        assert await connection.run("push", connection.send("RPUSH", key, b"mine")) == 1
        assert await connection.run("read", connection.send("LRANGE", key, 0, -1)) == [b"mine"]
        await other.rpush(empty, b"late")  # the pop answers now if it still waits: its reply is sent before ours
        assert await connection.run("read", connection.send("LRANGE", key, 0, -1)) == [b"mine"]
    finally:
        await other.delete(key, empty)
        await other.aclose()
        await connection.aclose()


async def test_a_stalled_server_fails_a_save_at_its_deadline_with_nothing_half_written(tmp_path: Path) -> None:
    # The client has no socket timeout: only the deadline ends a command the server never answers.
    binary = server_binary() or valkey_binary()
    if binary is None:
        _skip_unless_required("needs a local redis-server or valkey-server to stop (SIGSTOP)")
    server = LocalRedis(binary, tmp_path)
    server.start()
    process = server.process
    assert process is not None
    connection = RedisConnection(Redis.from_url(server.url), key_prefix="p:", owned=True, timeout=0.5)
    history = RedisHistoryProvider(connection)
    admin = Redis.from_url(server.url)
    try:
        await history.save_messages("s", [_msg("one")])
        process.send_signal(signal.SIGSTOP)
        try:
            with pytest.raises(StoreUnavailableError, match="unavailable") as caught:
                await history.save_messages("s", [_msg("two"), _msg("three")])
            assert isinstance(caught.value.__cause__, TimeoutError)
            assert process.poll() is None  # failed while the server was still stopped, not after
        finally:
            process.send_signal(signal.SIGCONT)
        # The script either ran whole or not at all: both of the log's lists agree, and the log
        # reads as before the save or with all of it.
        texts = [m.text for m in await history.get_messages("s")]
        assert texts in (["one"], ["one", "two", "three"])
        for payloads in await admin.keys("*m:*"):  # pyright: ignore[reportUnknownVariableType]
            digests = payloads.replace(b"m:", b"d:", 1)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            assert await admin.llen(payloads) == await admin.llen(digests)  # pyright: ignore[reportUnknownArgumentType, reportGeneralTypeIssues]
        await history.save_messages("s", [_msg("four")])
        assert [m.text for m in await history.get_messages("s")][-1] == "four"
    finally:
        process.send_signal(signal.SIGCONT)
        await admin.aclose()
        await connection.aclose()
        server.stop()


async def test_operations_waiting_on_a_busy_client_do_not_time_out_once_the_server_has_answered(
    redis_single: Server, key_prefix: str
) -> None:
    # The deadline bounds the server, not the client: here the server holds every command
    # (CLIENT PAUSE, well within the deadline) while the process is kept busy (the event loop
    # blocked, as a pipeline of many large replies or a thousand agents keep it) far past the
    # deadline. Every reply has arrived by then: no operation may fail for the client's delay.
    connection = RedisConnection(Redis.from_url(redis_single.url), key_prefix=key_prefix, owned=True, timeout=1.0)
    history = RedisHistoryProvider(connection)
    admin = SyncRedis.from_url(redis_single.url)
    sessions = [f"s{n}" for n in range(200)]
    try:
        await asyncio.gather(*(history.save_messages(s, [_msg(s)]) for s in sessions))
        await asyncio.gather(*(history.get_messages(s) for s in sessions))  # connections open for the loads
        admin.execute_command("CLIENT", "PAUSE", "400", "ALL")
        loads = [asyncio.ensure_future(history.get_messages(s)) for s in sessions]
        await asyncio.sleep(0.1)  # the loads go out and wait for the paused server
        time.sleep(2.5)  # noqa: ASYNC251  # the process is busy: the loop reads no reply until the deadline has long passed
        windows = await asyncio.gather(*loads)
        assert [[m.text for m in window] for window in windows] == [[s] for s in sessions]
    finally:
        admin.close()
        await connection.aclose()


async def test_owned_client_sends_a_command_again_on_a_new_connection_when_its_connection_drops(
    redis_single: Server, key_prefix: str
) -> None:
    # The default retry is the asyncio client's own Retry: given a synchronous one, redis-py 7
    # retried nothing, and redis-py 8 warned.
    admin = Redis.from_url(redis_single.url)
    key = f"{key_prefix}wake"
    name = f"waiter-{key_prefix}"  # every connection the client opens names itself
    connection = RedisConnection.from_url(redis_single.url, key_prefix=key_prefix, client_name=name)

    async def blocked() -> list[int]:
        """The ids of our client's connections blocked in BLPOP."""
        clients = await admin.client_list()  # pyright: ignore[reportUnknownMemberType]
        return [int(c["id"]) for c in clients if c.get("cmd") == "blpop" and c.get("name") == name]

    try:
        waiting = asyncio.ensure_future(connection.client.blpop([key], 0))  # pyright: ignore[reportUnknownMemberType, reportArgumentType]
        async with asyncio.timeout(60):  # nothing signals a client blocking: ask the server until it shows
            while not (first := await blocked()):  # noqa: ASYNC110
                await asyncio.sleep(0.01)
            assert await admin.client_kill_filter(_id=first[0]) == 1  # pyright: ignore[reportUnknownMemberType]
            # the client connects again and sends the BLPOP again
            while await blocked() in ([], first):
                if waiting.done():
                    pytest.fail(f"the command was not sent again: {waiting.exception()!r}")
                await asyncio.sleep(0.01)
            await admin.rpush(key, b"woken")  # pyright: ignore[reportUnknownMemberType]
            assert list(await waiting) == [key.encode(), b"woken"]
    finally:
        await connection.aclose()
        await admin.delete(key)
        await admin.aclose()


# -- one round trip per operation -----------------------------------------------------------------


async def _command_counts(client: Redis) -> dict[str, int]:
    stats: dict[str, Any] = await client.info("commandstats")  # pyright: ignore[reportUnknownMemberType]
    return {name.removeprefix("cmdstat_"): int(value["calls"]) for name, value in stats.items()}


async def test_steady_save_is_one_evalsha_and_load_one_lrange(
    client: Redis, redis_single: Server, key_prefix: str
) -> None:
    async with RedisHistoryProvider.from_url(redis_single.url, key_prefix=key_prefix, max_messages=20) as history:
        await history.save_messages("s", [_msg("one"), _msg("two")])  # first save reads the tail
        before = await _command_counts(client)
        await history.save_messages("s", [_msg("three"), _msg("four")])
        middle = await _command_counts(client)
        assert len(await history.get_messages("s")) == 4
        after = await _command_counts(client)
    save = {k: middle.get(k, 0) - before.get(k, 0) for k in middle if middle.get(k, 0) != before.get(k, 0)}
    load = {k: after.get(k, 0) - middle.get(k, 0) for k in after if after.get(k, 0) != middle.get(k, 0)}
    # commandstats also counts the commands a script runs; the client sent one EVALSHA and nothing else
    assert save["evalsha"] == 1 and "eval" not in save and save["info"] == 1
    assert {k: v for k, v in save.items() if k in {"lrange", "get", "hmget", "hget", "zadd"}} == {"get": 1}
    assert load == {"lrange": 1, "info": 1}


async def test_an_append_declares_every_key_it_may_touch_and_repeats_nothing(
    client: Redis, connection: RedisConnection, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = RedisLogDriver(connection)
    sent: list[tuple[int, int]] = []
    script = connection.log_append
    call = type(script).__call__

    async def recording(self: Any, keys: Any, args: Any) -> Any:
        if self is script:
            sent.append((len(keys), len(args)))
        return await call(self, keys, args)

    monkeypatch.setattr(type(script), "__call__", recording)
    one, two = [LogRecord("d1", b"1")], [LogRecord("d2", b"2"), LogRecord("d3", b"3")]
    version = await driver.append("log", one, expected_version=None, session_id="s")
    version = await driver.append("log", two, expected_version=version, session_id="s")
    version = await driver.append("log", one, expected_version=version, session_id="s", ttl=60)
    version = await driver.append("log", one, expected_version=version, session_id="s")
    # creating: the log's three keys and its shard's three (index, expiry, sessions), then the
    # expected version, the TTL, the log key, the epoch and the session id; a steady append: the
    # log's keys, the expected version and the TTL; a TTL set: the shard's keys and the log key
    # too; the TTL dropped: asked again with the shard's keys. Each record's digest and payload once.
    assert sent == [(6, 5 + 2 * 1), (3, 2 + 2 * 2), (6, 3 + 2 * 1), (3, 2 + 2 * 1), (6, 3 + 2 * 1)]
    assert await driver.read("log") == [b"1", b"2", b"3", b"1", b"1"]
    m, d, v, _, expiry, _ = connection.log_keys("log")
    assert [await client.pttl(k) for k in (m, d, v)] == [-1, -1, -1]  # pyright: ignore[reportUnknownMemberType]
    assert await client.zscore(expiry, "log") is None  # pyright: ignore[reportUnknownMemberType]
    assert [info.session_id for info in await driver.list_logs("")] == ["s"]
    assert version == f"{version.rpartition(':')[0]}:5"


async def test_flushed_script_cache_is_reloaded(client: Redis, key_prefix: str) -> None:
    history = RedisHistoryProvider(client, key_prefix=key_prefix)
    await history.save_messages("s", [_msg("one")])
    await client.script_flush()
    await history.save_messages("s", [_msg("two")])
    assert [m.text for m in await history.get_messages("s")] == ["one", "two"]


# -- many callers, few connections --------------------------------------------------------------


async def _server_stats(client: Redis) -> tuple[int, int]:
    """Commands the server ran and reads it made from its clients' sockets, so far."""
    stats: dict[str, Any] = await client.info("stats")  # pyright: ignore[reportUnknownMemberType]
    return int(stats["total_commands_processed"]), int(stats["total_reads_processed"])


async def test_concurrent_agents_share_pipelines_and_each_gets_its_own_reply(
    client: Redis, redis_single: Server, key_prefix: str
) -> None:
    agents, steps = 60, 3
    async with RedisHistoryProvider.from_url(redis_single.url, key_prefix=key_prefix, max_messages=4) as history:
        await history.get_messages("warm-up")  # the first connection, outside the count

        async def agent(n: int) -> list[str]:
            for step in range(steps):
                await history.get_messages(f"agent-{n}")
                await history.save_messages(f"agent-{n}", [_msg(f"{n}: question {step}"), _msg(f"{n}: answer {step}")])
            return [m.text for m in await history.get_messages(f"agent-{n}")]

        commands_before, reads_before = await _server_stats(client)
        windows = await asyncio.gather(*(agent(n) for n in range(agents)))
        commands_after, reads_after = await _server_stats(client)
    expected = [[f"{n}: {part} {step}" for step in (1, 2) for part in ("question", "answer")] for n in range(agents)]
    assert windows == expected
    # each agent sent at least a load and a save per step and a last load: alone, each command
    # costs the server a socket read (about 600 here); pipelined, one read serves many (about 40)
    issued = agents * (2 * steps + 1)
    reads = reads_after - reads_before
    assert commands_after - commands_before >= issued
    assert reads <= issued / 4, f"{issued} commands or more took {reads} socket reads"


async def test_a_server_error_in_a_pipeline_belongs_to_its_command(client: Redis, connection: RedisConnection) -> None:
    history = RedisHistoryProvider(connection)
    await client.set(connection.log_payloads(history.keys.history(history.source_id, "taken")), b"someone else's")
    sessions = ["taken", *(f"s{n}" for n in range(20))]
    outcomes = await asyncio.gather(
        *(history.save_messages(s, [_msg(f"hello {s}")]) for s in sessions), return_exceptions=True
    )
    assert isinstance(outcomes[0], CorruptRecordError)
    assert outcomes[1:] == [None] * 20
    loads = await asyncio.gather(*(history.get_messages(s) for s in sessions), return_exceptions=True)
    assert isinstance(loads[0], CorruptRecordError)
    assert [[m.text for m in cast(list[Message], got)] for got in loads[1:]] == [[f"hello s{n}"] for n in range(20)]


async def test_a_flushed_script_cache_is_reloaded_by_concurrent_saves(
    client: Redis, connection: RedisConnection
) -> None:
    history = RedisHistoryProvider(connection)
    await asyncio.gather(*(history.save_messages(f"s{n}", [_msg("one")]) for n in range(30)))
    await client.script_flush()
    await asyncio.gather(*(history.save_messages(f"s{n}", [_msg("two")]) for n in range(30)))
    loads = await asyncio.gather(*(history.get_messages(f"s{n}") for n in range(30)))
    assert [[m.text for m in got] for got in loads] == [["one", "two"]] * 30


async def _blocked_on_the_server(client: Redis) -> None:
    """Wait until the server reports a client blocked in a command (polled, within a generous bound)."""
    async with asyncio.timeout(30):
        while not int((await client.info("clients"))["blocked_clients"]):  # pyright: ignore[reportUnknownMemberType]  # noqa: ASYNC110 - the server's state, reported by no event
            await asyncio.sleep(0.01)


async def test_closing_fails_the_pipelined_commands_in_flight(client: Redis, key_prefix: str) -> None:
    connection = RedisConnection(client, key_prefix=key_prefix)
    empty = f"{key_prefix}empty"
    # the first goes alone; the other four, issued while it is in flight, go in one pipeline. It
    # blocks until the test pushes a value (at most 10 s), however slowly a busy machine polls.
    calls = [asyncio.ensure_future(connection.run("wait", connection.send("BLPOP", empty, 10))) for _ in range(5)]
    await _blocked_on_the_server(client)  # the first is in flight, the others wait behind it
    await connection.aclose()
    await client.rpush(empty, "x")  # pyright: ignore[reportUnknownMemberType]
    outcomes = await asyncio.gather(*calls, return_exceptions=True)
    assert outcomes[0] is not None and not isinstance(outcomes[0], BaseException), outcomes  # the server's answer
    assert all(isinstance(outcome, StoreUnavailableError) for outcome in outcomes[1:]), outcomes
    assert await client.ping()  # a borrowed client stays open


# -- versions -------------------------------------------------------------------------------------


async def test_versions_never_repeat_after_delete_and_rewrite(connection: RedisConnection) -> None:
    driver = RedisLogDriver(connection)
    record = [LogRecord("d1", b"{}")]
    first = await driver.append("k", record, expected_version=None, session_id="s")
    assert await driver.delete("k")
    second = await driver.append("k", record, expected_version=None, session_id="s")
    assert first != second and (await driver.tail("k", 1)).version == second
    with pytest.raises(StoreConflictError):
        await driver.append("k", record, expected_version=first, session_id="s")
    assert await driver.length("k") == 1


async def test_native_expiry_on_the_servers_clock(client: Redis, connection: RedisConnection) -> None:
    """The Redis backend's one test on the real clock: Redis expires logs by itself, and the driver follows.

    The suites' expiry clauses run on a fake clock, which Redis's own expiry (``PEXPIRE``, by
    the server's clock) cannot follow. Here short-lived logs are written and the test polls,
    within a generous bound, until Redis has removed their keys. Then an expired log is absent
    for every read; written again it gets a new version, and a writer holding the old one
    conflicts; a session written again without ttl stays listed (its expired incarnation's
    expiry entry must not remove the live log); ``purge_expired`` counts the one log that stayed
    expired, once, and keeps the live logs in the index.
    """
    driver = RedisLogDriver(connection)
    expiring = RedisHistoryProvider(connection, source_id="chat", ttl=0.05)
    forever = RedisHistoryProvider(connection, source_id="chat")
    await driver.append("gone", [LogRecord("d", b"1")], expected_version=None, session_id="g", ttl=0.05)
    old = await driver.append("again", [LogRecord("d", b"1")], expected_version=None, session_id="a", ttl=0.05)
    await driver.append("kept", [LogRecord("d", b"1")], expected_version=None, session_id="k", ttl=600)
    await driver.append("plain", [LogRecord("d", b"1")], expected_version=None, session_id="p")
    await expiring.save_messages("s", [_msg("first life")])
    native = [*connection.log_keys("gone")[:3], *connection.log_keys("again")[:3]]

    async def removed() -> bool:
        return await client.exists(*native) == 0 and await expiring.get_messages("s") == []

    await eventually(removed, what="Redis removes the keys of the expired logs by itself")
    assert await driver.tail("gone", 5) == (0, [], None)
    assert await driver.read("gone") == [] and await driver.length("gone") == 0
    new = await driver.append("again", [LogRecord("d", b"2")], expected_version=None, session_id="a")
    assert new != old and await driver.read("again") == [b"2"]
    with pytest.raises(StoreConflictError):
        await driver.append("again", [LogRecord("d", b"3")], expected_version=old, session_id="a")
    await forever.save_messages("s", [_msg("second life")])
    assert await driver.purge_expired() == 1  # "gone"; "again" and the session were written again
    assert await driver.purge_expired() == 0
    assert sorted(info.session_id for info in await driver.list_logs("")) == ["a", "k", "p", "s"]
    assert [m.text for m in await forever.get_messages("s")] == ["second life"]


async def test_ttl_is_native_and_refreshed(client: Redis, connection: RedisConnection) -> None:
    driver = RedisLogDriver(connection)
    await driver.append("k", [LogRecord("d", b"1")], expected_version=None, session_id="s", ttl=100)
    keys = connection.log_keys("k")[:3]
    assert all(0 < ttl <= 100_000 for ttl in [await client.pttl(key) for key in keys])
    version = (await driver.tail("k", 0)).version
    await driver.append("k", [LogRecord("e", b"2")], expected_version=version, session_id="s", ttl=None)
    assert [await client.pttl(key) for key in keys] == [-1, -1, -1]


# -- wrong types ----------------------------------------------------------------------------------


async def test_key_of_wrong_type_is_a_clear_error_and_nothing_is_overwritten(
    client: Redis, connection: RedisConnection
) -> None:
    history = RedisHistoryProvider(connection)
    key = history.keys.history(history.source_id, "s")
    payloads = connection.log_payloads(key)
    await client.set(payloads, b"someone else's")
    with pytest.raises(CorruptRecordError, match="another type"):
        await history.save_messages("s", [_msg("hi")])
    with pytest.raises(CorruptRecordError):
        await history.get_messages("s")
    assert await client.get(payloads) == b"someone else's"
    assert not await client.exists(connection.log_keys(key)[2])  # no epoch was created

    files = RedisAgentFileStore(connection)
    object_key = connection.object_keys("files/a.txt")[0]
    await client.rpush(object_key, b"x")
    with pytest.raises(CorruptRecordError):
        await files.write("a.txt", "hello")
    assert await client.lrange(object_key, 0, -1) == [b"x"]


def _skip_unless_required(reason: str) -> NoReturn:
    """Skip with ``reason``, or fail when ``AGENT_STORES_REQUIRE`` names redis (CI must not skip)."""
    if is_required("redis"):
        pytest.fail(f"{reason}, and AGENT_STORES_REQUIRE requires redis", pytrace=False)
    pytest.skip(reason)


# -- the server going away and coming back ------------------------------------------------------


async def test_unreachable_server_is_unavailable_then_recovers(tmp_path: Path) -> None:
    binary = server_binary() or valkey_binary()
    if binary is None:
        _skip_unless_required("needs a local redis-server or valkey-server to stop and restart")
    server = LocalRedis(binary, tmp_path)
    server.start()
    try:
        url = f"redis://user:hunter2@127.0.0.1:{server.port}/0"
        # the server has no ACL user: connect without credentials, but show that errors never carry them
        history = RedisHistoryProvider.from_url(server.url, key_prefix="p:", socket_timeout=1, socket_connect_timeout=1)
        await history.save_messages("s", [_msg("before")])
        server.stop()
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError) as caught:
            await history.save_messages("s", [_msg("during")])
        assert time.monotonic() - started < 10
        assert f"127.0.0.1:{server.port}" in str(caught.value)
        assert caught.value.__cause__ is not None
        with pytest.raises(StoreUnavailableError):
            await history.get_messages("s")
        server.start()  # same port, empty (no persistence)
        await history.save_messages("s", [_msg("after")])
        assert [m.text for m in await history.get_messages("s")] == ["after"]
        await history.aclose()

        secret = RedisHistoryProvider.from_url(url, socket_timeout=1, socket_connect_timeout=1)
        server.stop()
        with pytest.raises(StoreUnavailableError) as caught:
            await secret.get_messages("s")
        assert "hunter2" not in str(caught.value) and "hunter2" not in repr(secret.connection)
        await secret.aclose()
    finally:
        server.stop()


# -- listing -------------------------------------------------------------------------------------


async def test_list_sessions_is_ordered_and_paged_across_shards(connection: RedisConnection) -> None:
    history = RedisHistoryProvider(connection)
    ids = sorted(f"session-{i:03d}" for i in range(45))
    for session_id in reversed(ids):
        await history.save_messages(session_id, [_msg("x")])
    assert await history.list_sessions(limit=1000) == ids
    paged = [s async for s in history.iter_sessions(page_size=7)]
    assert paged == ids
    assert await history.list_sessions(after=ids[10], limit=3) == ids[11:14]


_KEYS = [
    "a",
    "a/",
    "a/b",
    "a/b/c",
    "a/b/d",
    "a/c",
    "a-b",
    "a0",
    "b/é",
    "b/z",
    "b/zz/y",
    "c",
    "é/x",
    "\U0001f600",
    "",
    "x/y/z/w",
]


async def test_object_listing_matches_the_reference_driver(connection: RedisConnection) -> None:
    ours, reference = RedisObjectDriver(connection), MemoryObjectDriver()
    for key in _KEYS:
        await ours.put(key, b"1")
        await reference.put(key, b"1")
    entries = sorted({*_KEYS, "a/b/", "b/zz/", "x/", "x/y/", "é/", "a/", "b/", "zzz"})
    for prefix in ("", "a", "a/", "a/b/", "b/", "x/y/", "nothing/"):
        for delimiter in ("/", None, "b"):
            for limit in (None, 1, 2, 3, 100):
                for after in (None, *entries):
                    expected = await reference.list(prefix, delimiter=delimiter, after=after, limit=limit)
                    got = await ours.list(prefix, delimiter=delimiter, after=after, limit=limit)
                    assert got == expected, (prefix, delimiter, after, limit)


async def test_search_narrows_candidates_on_the_server(connection: RedisConnection) -> None:
    files = RedisAgentFileStore(connection)
    await files.write("d/hit.txt", "has Needle inside")
    await files.write("d/miss.txt", "nothing here")
    await files.write("d/unicode.txt", "ünïcode")
    await files.write("d/sub/deep.txt", "needle deep")
    await files.create_directory("d/empty")
    candidates = await files._candidate_keys("files/d/", "needle", recursive=False)  # pyright: ignore[reportPrivateUsage]
    assert candidates == ["files/d/hit.txt", "files/d/unicode.txt"]
    recursive = await files._candidate_keys("files/d/", "needle", recursive=True)  # pyright: ignore[reportPrivateUsage]
    assert recursive == ["files/d/hit.txt", "files/d/sub/deep.txt", "files/d/unicode.txt"]
    every = await files._candidate_keys("files/d/", "need.e", recursive=False)  # pyright: ignore[reportPrivateUsage]
    assert every == ["files/d/hit.txt", "files/d/miss.txt", "files/d/unicode.txt"]
    results = await files.search("d", "needle", recursive=True)
    assert sorted(r.file_name for r in results) == ["hit.txt", "sub/deep.txt"]


async def test_cluster_keys_of_one_session_share_a_slot(connection: RedisConnection) -> None:
    tags = {key[: key.index("}") + 1] for key in connection.log_keys("ns/src/a-session")}
    assert len(tags) == 1
    assert connection.object_keys("files/x")[0].split("}")[0] == connection.object_keys("files/x")[1].split("}")[0]


async def test_cluster_end_to_end(redis_cluster: Server) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    async with open_stores(redis_cluster.url, key_prefix=prefix) as stores:
        history = stores.history_provider(max_messages=3)
        for i in range(20):
            await history.save_messages(f"s{i}", [_msg("a"), _msg("b"), _msg("c"), _msg("d")])
        assert len(await history.get_messages("s3")) == 3
        assert await history.list_sessions(limit=100) == sorted(f"s{i}" for i in range(20))  # type: ignore[attr-defined]


async def _log_slot(client: RedisCluster, prefix: str) -> tuple[int, ClusterNode]:
    """The slot of the one log a store with ``prefix`` holds, and the primary that owns it."""
    for node in client.get_primaries():
        keys = await client.execute_command("KEYS", f"{{{prefix}log*m:*", target_nodes=node)  # pyright: ignore[reportUnknownMemberType]
        if keys:
            return client.keyslot(keys[0]), node  # pyright: ignore[reportUnknownArgumentType]
    raise AssertionError("the store wrote no log")


async def _calls(client: RedisCluster, node: ClusterNode, command: str) -> int:
    stats: Any = await client.execute_command("INFO", "commandstats", target_nodes=node)  # pyright: ignore[reportUnknownMemberType]
    return int(stats.get(f"cmdstat_{command}", {}).get("calls", 0))


async def test_a_cluster_store_follows_its_slot_to_another_primary_while_it_runs(redis_cluster: Server) -> None:
    # Resharding under a running store, as redis-cli --cluster reshard does it: the slot is first
    # migrating (keys moved answer ASK), then owned by the other primary (MOVED). The store keeps
    # saving and loading throughout, nothing lost or repeated, and once it has learnt the new
    # owner it sends there directly rather than being redirected on every command.
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    admin = RedisCluster.from_url(redis_cluster.url.replace("redis+cluster://", "redis://").split(",")[0])

    async def on(node: ClusterNode, *args: Any) -> Any:
        return await admin.execute_command(*args, target_nodes=node)  # pyright: ignore[reportUnknownMemberType]

    async with RedisHistoryProvider.from_url(redis_cluster.url, key_prefix=prefix, shards=1) as history:
        await history.save_messages("s", [_msg("one"), _msg("two")])
        await admin.initialize()
        slot, source = await _log_slot(admin, prefix)
        target = next(node for node in admin.get_primaries() if node.name != source.name)
        source_id = await on(source, "CLUSTER", "MYID")
        target_id = await on(target, "CLUSTER", "MYID")
        await on(target, "CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        await on(source, "CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        # the log's own keys move first; the shard's index stays behind: a load and a steady save
        # of the log are answered ASK by the source and run on the target
        keys: list[bytes] = await on(source, "CLUSTER", "GETKEYSINSLOT", slot, 100)
        log_keys = [key for key in keys if not key.endswith((b"index", b"expiry", b"sessions"))]
        assert len(log_keys) == 3, log_keys
        await on(source, "MIGRATE", target.host, target.port, "", 0, 5000, "KEYS", *log_keys)
        assert [m.text for m in await history.get_messages("s")] == ["one", "two"]
        await history.save_messages("s", [_msg("three")])
        # the rest of the slot moves and the target owns it
        while rest := await on(source, "CLUSTER", "GETKEYSINSLOT", slot, 100):
            await on(source, "MIGRATE", target.host, target.port, "", 0, 5000, "KEYS", *rest)
        for node in admin.get_primaries():
            await on(node, "CLUSTER", "SETSLOT", slot, "NODE", target_id)
        await history.save_messages("s", [_msg("four")])
        assert [m.text for m in await history.get_messages("s")] == ["one", "two", "three", "four"]
        assert await history.list_sessions() == ["s"]  # type: ignore[attr-defined]
        before = await _calls(admin, source, "evalsha")
        for n in range(5):
            await history.save_messages("s", [_msg(f"more {n}")])
        assert await _calls(admin, source, "evalsha") == before  # sent to the new owner, no longer redirected
        assert [m.text for m in await history.get_messages("s")][-6:] == ["four", *(f"more {n}" for n in range(5))]
    await admin.aclose()


async def test_concurrent_agents_on_a_cluster_each_get_their_own_replies(redis_cluster: Server) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    async with open_stores(redis_cluster.url, key_prefix=prefix) as stores:
        history = stores.history_provider(max_messages=4)

        async def agent(n: int) -> list[str]:
            for step in range(3):
                await history.get_messages(f"agent-{n}")
                await history.save_messages(f"agent-{n}", [_msg(f"{n}: question {step}"), _msg(f"{n}: answer {step}")])
            return [m.text for m in await history.get_messages(f"agent-{n}")]

        windows = await asyncio.gather(*(agent(n) for n in range(40)))
        client: Any = history.connection.client  # type: ignore[attr-defined]
        await client.execute_command("SCRIPT FLUSH", target_nodes="primaries")  # pipelined saves load it again
        await asyncio.gather(*(history.save_messages(f"agent-{n}", [_msg(f"{n}: last")]) for n in range(40)))
        lasts = await asyncio.gather(*(history.get_messages(f"agent-{n}") for n in range(40)))
    expected = [[f"{n}: {part} {step}" for step in (1, 2) for part in ("question", "answer")] for n in range(40)]
    assert windows == expected
    assert [[m.text for m in got][-1] for got in lasts] == [f"{n}: last" for n in range(40)]


async def _node_stats(client: RedisCluster, node: ClusterNode, section: str) -> dict[str, Any]:
    return cast(dict[str, Any], await client.execute_command("INFO", section, target_nodes=node))  # pyright: ignore[reportUnknownMemberType]


async def _rejected(client: RedisCluster, node: ClusterNode, command: str) -> int:
    """Calls of ``command`` the node ran or refused (a redirect is a refusal)."""
    stats = (await _node_stats(client, node, "commandstats")).get(f"cmdstat_{command}", {})
    return int(stats.get("calls", 0)) + int(stats.get("rejected_calls", 0))


async def test_many_agents_in_pipelines_follow_their_slot_to_another_primary(redis_cluster: Server) -> None:
    # The pipelined path through a resharding: forty agents at once, so their commands go in
    # pipelines, one per primary. While the slot migrates their loads and saves are answered ASK
    # and run on the target; once the target owns it the first are answered MOVED; after that
    # every pipeline goes to the target directly. Each agent's history ends exactly as it saved it.
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    agents = 40
    admin = RedisCluster.from_url(redis_cluster.url.replace("redis+cluster://", "redis://").split(",")[0])

    async def on(node: ClusterNode, *args: Any) -> Any:
        return await admin.execute_command(*args, target_nodes=node)  # pyright: ignore[reportUnknownMemberType]

    async with RedisHistoryProvider.from_url(redis_cluster.url, key_prefix=prefix, shards=1) as history:

        async def everyone(text: str) -> list[list[str]]:
            async def agent(n: int) -> list[str]:
                await history.get_messages(f"agent-{n}")
                await history.save_messages(f"agent-{n}", [_msg(f"{n}: {text}")])
                return [m.text for m in await history.get_messages(f"agent-{n}")]

            return await asyncio.gather(*(agent(n) for n in range(agents)))

        await everyone("zero")  # every log exists: the saves below touch only their own keys
        await admin.initialize()
        slot, source = await _log_slot(admin, prefix)
        target = next(node for node in admin.get_primaries() if node.name != source.name)
        source_id = await on(source, "CLUSTER", "MYID")
        target_id = await on(target, "CLUSTER", "MYID")
        await on(target, "CLUSTER", "SETSLOT", slot, "IMPORTING", source_id)
        await on(source, "CLUSTER", "SETSLOT", slot, "MIGRATING", target_id)
        # every log's keys move; the shard's index, expiry and sessions stay behind for now
        keys: list[bytes] = await on(source, "CLUSTER", "GETKEYSINSLOT", slot, 10 * agents)
        log_keys = [key for key in keys if not key.endswith((b"index", b"expiry", b"sessions"))]
        assert len(log_keys) == 3 * agents, len(log_keys)
        await on(source, "MIGRATE", target.host, target.port, "", 0, 5000, "KEYS", *log_keys)
        asking = await _rejected(admin, target, "asking")
        during = await everyone("during")
        # each agent's loads and its append were answered ASK by the source and ran on the target
        assert await _rejected(admin, target, "asking") - asking >= 3 * agents
        # the rest of the slot moves and the target owns it: the next commands are answered MOVED
        while rest := await on(source, "CLUSTER", "GETKEYSINSLOT", slot, 100):
            await on(source, "MIGRATE", target.host, target.port, "", 0, 5000, "KEYS", *rest)
        # the target first (it takes the slot with a new epoch), then the source, then the others
        for node in sorted(admin.get_primaries(), key=lambda n: (n.name != target.name, n.name != source.name)):
            await on(node, "CLUSTER", "SETSLOT", slot, "NODE", target_id)
        after = await everyone("after")
        # the client has learnt the new owner: nothing more reaches the source, and the target
        # reads many commands per socket read
        evalsha, lrange = await _rejected(admin, source, "evalsha"), await _rejected(admin, source, "lrange")
        stats = await _node_stats(admin, target, "stats")
        commands, reads = int(stats["total_commands_processed"]), int(stats["total_reads_processed"])
        later = await everyone("later")
        stats = await _node_stats(admin, target, "stats")
        assert await _rejected(admin, source, "evalsha") == evalsha
        assert await _rejected(admin, source, "lrange") == lrange
        issued = int(stats["total_commands_processed"]) - commands
        assert issued >= 4 * agents
        assert int(stats["total_reads_processed"]) - reads <= issued / 4
        assert await history.list_sessions(limit=agents) == sorted(f"agent-{n}" for n in range(agents))  # type: ignore[attr-defined]
    await admin.aclose()
    assert during == [[f"{n}: zero", f"{n}: during"] for n in range(agents)]
    assert after == [[f"{n}: zero", f"{n}: during", f"{n}: after"] for n in range(agents)]
    assert later == [[f"{n}: zero", f"{n}: during", f"{n}: after", f"{n}: later"] for n in range(agents)]


async def test_a_server_error_in_a_cluster_pipeline_belongs_to_its_command(redis_cluster: Server) -> None:
    prefix = f"t{uuid.uuid4().hex[:8]}:"
    async with RedisHistoryProvider.from_url(redis_cluster.url, key_prefix=prefix) as history:
        connection: RedisConnection = history.connection  # type: ignore[attr-defined]
        taken = connection.log_payloads(history.keys.history(history.source_id, "taken"))
        await connection.run("set", connection.send("SET", taken, b"someone else's"))
        sessions = ["taken", *(f"s{n}" for n in range(30))]
        outcomes = await asyncio.gather(
            *(history.save_messages(s, [_msg(f"hello {s}")]) for s in sessions), return_exceptions=True
        )
        assert isinstance(outcomes[0], CorruptRecordError)
        assert outcomes[1:] == [None] * 30
        loads = await asyncio.gather(*(history.get_messages(s) for s in sessions), return_exceptions=True)
    assert isinstance(loads[0], CorruptRecordError)
    assert [[m.text for m in cast(list[Message], got)] for got in loads[1:]] == [[f"hello s{n}"] for n in range(30)]


@contextlib.contextmanager
def _own_cluster() -> Iterator[Server]:
    """A 3-primary cluster of local processes for this test alone (its nodes get stopped and killed)."""
    try:
        with local_redis_cluster() as server:
            yield server
    except ServerUnavailable as err:
        _skip_unless_required(f"needs a local cluster of its own: {err}")


def _payloads(history: RedisHistoryProvider, session: str) -> str:
    """The key of the list holding a session's payloads."""
    connection: RedisConnection = history.connection  # type: ignore[attr-defined]
    return connection.log_payloads(history.keys.history(history.source_id, session))


async def _sessions_by_node(
    history: RedisHistoryProvider, admin: RedisCluster, sessions: list[str]
) -> dict[str, list[str]]:
    """The sessions whose log the primary of each name holds."""
    found: dict[str, list[str]] = {}
    for session in sessions:
        key = _payloads(history, session)
        node = admin.nodes_manager.get_node_from_slot(admin.keyslot(key))
        found.setdefault(node.name, []).append(session)
    return found


async def _whole(admin: RedisCluster, prefix: str, nodes: list[ClusterNode]) -> None:
    """Every log on ``nodes`` has as many digests as payloads: each append ran whole or not at all."""
    for node in nodes:
        keys = await admin.execute_command("KEYS", f"{{{prefix}log*m:*", target_nodes=node)  # pyright: ignore[reportUnknownMemberType]
        for payloads in cast(list[bytes], keys):
            digests = payloads.replace(b"m:", b"d:", 1)
            assert await admin.llen(payloads) == await admin.llen(digests)  # pyright: ignore[reportGeneralTypeIssues]


async def test_a_stopped_cluster_node_fails_its_pipelined_commands_at_the_deadline_and_no_others() -> None:
    # The deadline (shorter than any socket timeout of the client) ends the commands of the stopped node.
    with _own_cluster() as server:
        prefix = "p:"
        admin = RedisCluster.from_url(server.url.replace("redis+cluster://", "redis://").split(",")[0])
        client = RedisCluster.from_url(server.url.replace("redis+cluster://", "redis://").split(",")[0])
        connection = RedisConnection(client, key_prefix=prefix, owned=True, timeout=1.0)
        history = RedisHistoryProvider(connection)
        sessions = [f"s{n}" for n in range(30)]
        await asyncio.gather(*(history.save_messages(s, [_msg("one")]) for s in sessions))
        await admin.initialize()
        by_node = await _sessions_by_node(history, admin, sessions)
        stopped = admin.get_primaries()[0]
        assert by_node.get(stopped.name) and len(by_node) > 1, by_node
        for node in admin.get_primaries():  # the others serve their slots even if it were marked failed
            await admin.execute_command("CONFIG", "SET", "cluster-require-full-coverage", "no", target_nodes=node)  # pyright: ignore[reportUnknownMemberType]
        pid = int((await _node_stats(admin, stopped, "server"))["process_id"])
        os.kill(pid, signal.SIGSTOP)
        try:
            outcomes = await asyncio.gather(
                *(history.save_messages(s, [_msg("two"), _msg("three")]) for s in sessions), return_exceptions=True
            )
            # a borrowed connection with no deadline: closing it fails its pipelines in flight (the
            # first load goes alone, in its caller's task, and waits for the node)
            waiting = RedisConnection(client, key_prefix=prefix)
            calls = [
                asyncio.ensure_future(waiting.run("read", waiting.send("LRANGE", _payloads(history, s), 0, -1)))
                for s in [*by_node[stopped.name], *sessions]
            ]
            for _ in range(5):  # the pipelines are written to their nodes' sockets
                await asyncio.sleep(0)
            await waiting.aclose()
            closed = await asyncio.gather(*calls[1:], return_exceptions=True)
        finally:
            os.kill(pid, signal.SIGCONT)
        assert len(await calls[0]) in (1, 3)  # the stopped node's answer: its save ran whole, or not at all
        for session, outcome in zip(sessions, outcomes, strict=True):
            if session in by_node[stopped.name]:
                assert isinstance(outcome, StoreUnavailableError), (session, outcome)
                assert isinstance(outcome.__cause__, TimeoutError)
            else:
                assert outcome is None, (session, outcome)
        # those of the stopped node failed; those of the others may have been answered first
        assert all(isinstance(outcome, StoreUnavailableError) for outcome in closed[: len(by_node[stopped.name]) - 1])
        assert all(isinstance(outcome, StoreUnavailableError | list) for outcome in closed), closed
        await _whole(admin, prefix, admin.get_primaries())
        for session in sessions:
            texts = [m.text for m in await history.get_messages(session)]
            assert texts in (["one"], ["one", "two", "three"]), (session, texts)
            if session not in by_node[stopped.name]:
                assert texts == ["one", "two", "three"]
        await asyncio.gather(*(history.save_messages(s, [_msg("four")]) for s in sessions))
        assert [(await history.get_messages(s))[-1].text for s in sessions] == ["four"] * len(sessions)
        await connection.aclose()
        await admin.aclose()


async def test_a_killed_cluster_node_fails_its_pipelined_commands_with_the_stores_error() -> None:
    with _own_cluster() as server:
        prefix = "p:"
        admin = RedisCluster.from_url(server.url.replace("redis+cluster://", "redis://").split(",")[0])
        async with RedisHistoryProvider.from_url(server.url, key_prefix=prefix, shards=32) as history:
            sessions = [f"s{n}" for n in range(30)]
            await asyncio.gather(*(history.save_messages(s, [_msg("one")]) for s in sessions))
            await admin.initialize()
            by_node = await _sessions_by_node(history, admin, sessions)
            # not the node the client sends its own queries to (COMMAND, on learning the slot map
            # again): redis-py's client cannot learn the map while that one is down
            default = cast(RedisCluster, history.connection.client).get_default_node().name  # type: ignore[attr-defined]
            killed = next(node for node in admin.get_primaries() if node.name != default and node.name in by_node)
            alive = [node for node in admin.get_primaries() if node.name != killed.name]
            assert len(by_node) > 1, by_node
            for node in alive:  # they serve their slots once the killed node is marked failed
                await admin.execute_command("CONFIG", "SET", "cluster-require-full-coverage", "no", target_nodes=node)  # pyright: ignore[reportUnknownMemberType]
            os.kill(int((await _node_stats(admin, killed, "server"))["process_id"]), signal.SIGKILL)
            outcomes = await asyncio.gather(
                *(history.save_messages(s, [_msg("two"), _msg("three")]) for s in sessions), return_exceptions=True
            )
            # the killed node's saves fail with the store's error once the client's retries are
            # spent (the first of them; the others of the node fail with it). On a node's connection
            # error redis-py's client drops every connection and learns the slot map again, so a
            # save in flight on another node at that moment may fail too, and only with that error.
            for session, outcome in zip(sessions, outcomes, strict=True):
                if session in by_node[killed.name]:
                    assert isinstance(outcome, StoreUnavailableError), (session, outcome)
                else:
                    assert outcome is None or isinstance(outcome, StoreUnavailableError), (session, outcome)
            survivors = [s for s in sessions if s not in by_node[killed.name]]
            await _whole(admin, prefix, alive)
            loads = await asyncio.gather(*(history.get_messages(s) for s in survivors))
            saved = {session for session, outcome in zip(sessions, outcomes, strict=True) if outcome is None}
            for session, got in zip(survivors, loads, strict=True):
                texts = [m.text for m in got]
                expected = [["one", "two", "three"]] if session in saved else [["one"], ["one", "two", "three"]]
                assert texts in expected, session
            # the client has learnt the cluster again: every save on the other nodes succeeds
            await asyncio.gather(*(history.save_messages(s, [_msg("four")]) for s in survivors))
            loads = await asyncio.gather(*(history.get_messages(s) for s in survivors))
            assert [got[-1].text for got in loads] == ["four"] * len(survivors)
        await admin.aclose()


async def test_readme_example_runs(redis_single: Server) -> None:
    import subprocess
    import sys

    command = [sys.executable, "-W", "error::Warning", str(EXAMPLE), redis_single.url]
    done = await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "history: ['My name is Ada.', 'Hi Ada!']" in done.stdout
    assert "files: ['user.md']" in done.stdout
    assert "sessions: ['user-42']" in done.stdout


async def test_an_acl_user_limited_to_the_stores_keys_and_commands_suffices(tmp_path: Path) -> None:
    """The ACL the README recommends: only the key prefix's hash tags and the commands the stores send."""
    binary = server_binary()
    if binary is None:
        _skip_unless_required("needs a local redis-server (ACLs need Redis 6 or later)")
    server = LocalRedis(binary, tmp_path)
    server.start()
    try:
        admin = Redis(port=server.port)
        rules = f"on >s3cret ~{{agent-stores:* resetchannels -@all {ACL_COMMANDS}"
        await admin.execute_command("ACL", "SETUSER", "agent", *rules.split())
        await admin.set("other-app:secret", b"x")
        url = f"redis://agent:s3cret@127.0.0.1:{server.port}/0"
        async with open_stores(url) as stores:
            history, files = stores.history_provider(ttl=60), stores.file_store()
            sessions = stores.session_store()
            await history.save_messages("s", [_msg("hi")])
            await files.write("a.txt", "needle")
            assert [m.text for m in await history.get_messages("s")] == ["hi"]
            assert [r.file_name for r in await files.search("", "needle")] == ["a.txt"]
            assert await history.list_sessions() == ["s"]  # type: ignore[attr-defined]
            await sessions.delete("x")
        limited = Redis.from_url(url)
        with pytest.raises(NoPermissionError):
            await limited.get("other-app:secret")
        await limited.aclose()
        await admin.aclose()
    finally:
        server.stop()


async def test_listing_and_purging_drop_every_log_redis_expired_however_many(client: Redis, key_prefix: str) -> None:
    # One shard, so one index holds more logs due for expiry than one script takes (500).
    connection = RedisConnection(client, key_prefix=key_prefix, shards=1)
    driver = RedisLogDriver(connection)
    names = [f"log-{n:04d}" for n in range(1200)]
    await asyncio.gather(
        *(driver.append(n, [LogRecord("d", b"1")], expected_version=None, session_id=n, ttl=3600) for n in names)
    )

    async def expire(logs: list[str]) -> None:
        """What Redis does when the logs' TTL passes: their keys go, their expiry entries stay, now due."""
        expiry = connection.log_shards()[0][1]
        for name in logs:
            await client.delete(*connection.log_keys(name)[:3])
        await client.zadd(expiry, dict.fromkeys(logs, 0))  # pyright: ignore[reportUnknownMemberType]

    await expire(names[:600])
    live_but_due = names[1100:1120]  # written again since: their entries are stale, the logs live
    await client.zadd(connection.log_shards()[0][1], dict.fromkeys(live_but_due, 0))  # pyright: ignore[reportUnknownMemberType]
    assert await driver.purge_expired() == 600
    assert [info.key for info in await driver.list_logs("", limit=5000)] == names[600:]
    await expire(names[600:1150])
    assert [info.key for info in await driver.list_logs("", limit=5000)] == names[1150:]
    assert await driver.purge_expired() == 0
    assert await client.zcard(connection.log_shards()[0][0]) == 50  # pyright: ignore[reportUnknownMemberType]


async def test_search_tests_every_candidate_however_many(client: Redis, key_prefix: str) -> None:
    # One shard, so one script finds more candidates than one script tests (256).
    driver = RedisObjectDriver(RedisConnection(client, key_prefix=key_prefix, shards=1))
    expected: list[str] = []
    for n in range(700):
        key = f"d/{n:04d}"
        data = b"a NEEDLE" if n % 3 == 0 else "ünïcode".encode() if n % 7 == 0 else b"plain"
        await driver.put(key, data)
        if n % 3 == 0 or n % 7 == 0:
            expected.append(key)
    await driver.put("d/sub/needle", b"needle")
    assert await driver.find_keys("d/", recursive=False, literal="needle") == expected
    assert await driver.find_keys("d/", recursive=True, literal="needle") == sorted([*expected, "d/sub/needle"])
    assert len(await driver.find_keys("d/", recursive=False)) == 700


async def test_files_and_sessions_on_a_decoding_client(redis_single: Server, key_prefix: str) -> None:
    from agent_framework import AgentSession

    client = Redis.from_url(redis_single.url, decode_responses=True)
    try:
        files = RedisAgentFileStore(client, key_prefix=key_prefix)
        sessions = RedisSessionStore(client, key_prefix=key_prefix)
        await files.write("dir/é.txt", "ünïcode ✓")
        assert await files.read("dir/é.txt") == "ünïcode ✓"
        assert [e.name for e in await files.list_children("dir")] == ["é.txt"]
        session = AgentSession(session_id="s")
        session.state["k"] = [1, "two"]
        await sessions.set("s", session)
        restored = await sessions.get("s")
        assert restored is not None and restored.state["k"] == [1, "two"]
    finally:
        await client.aclose()
