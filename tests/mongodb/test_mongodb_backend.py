"""The MongoDB backend beyond the conformance suites: versions, listing, injection, limits, faults, setup.

Runs against this run's server (``$AGENT_STORES_MONGODB_URL``, testcontainers ``mongo:7`` or the
nx-27017 stand-in, which is NOT MongoDB; the summary names it). The fault tests stop and restart
a stand-in of their own, the only server a test can stop on demand here.
"""

from __future__ import annotations

import asyncio
import calendar
import contextlib
import random
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from agent_framework import Message
from pymongo import AsyncMongoClient, monitoring
from pymongo.errors import OperationFailure

from agent_stores.core import (
    CorruptRecordError,
    LogRecord,
    StoreConflictError,
    StoreUnavailableError,
    open_stores,
)
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.mongodb import (
    MAX_DOCUMENT_BYTES,
    SCHEMA_VERSION,
    CollectionNames,
    MongoDBAgentFileStore,
    MongoDBBackend,
    MongoDBDatabase,
    MongoDBHistoryProvider,
    MongoDBLogDriver,
    MongoDBObjectDriver,
    MongoDBSessionStore,
)
from agent_stores.testing import eventually
from agent_stores.testing.servers import VIA_URL, Server, ServerUnavailable, is_required
from agent_stores.testing.servers.mongodb import NX27017Process
from mongodb_support import client_options, url_with_database

pytestmark = pytest.mark.asyncio

Doc = dict[str, Any]


class Commands(monitoring.CommandListener):
    """Records every command the client sends (to check what a call asks the server for)."""

    def __init__(self) -> None:
        self.events: list[monitoring.CommandStartedEvent] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:  # type: ignore[override]
        self.events.append(event)

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        pass

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        pass


@pytest.fixture
def commands() -> Commands:
    return Commands()


@pytest_asyncio.fixture
async def client(mongodb: Server, commands: Commands) -> AsyncIterator[AsyncMongoClient[Doc]]:
    client: AsyncMongoClient[Doc] = AsyncMongoClient(mongodb.url, event_listeners=[commands], **client_options())
    yield client
    await client.close()


@pytest.fixture
def database(client: AsyncMongoClient[Doc], collection_prefix: str) -> MongoDBDatabase:
    return MongoDBDatabase(client, collections=CollectionNames.with_prefix(collection_prefix))


def records(*names: str) -> list[LogRecord]:
    return [LogRecord(f"d-{n}", n.encode()) for n in names]


# Batches of a log in the history collection (its head has s = 2**62, above every batch).
_BATCHES = {"$lt": 2**62}


async def batch_count(database: MongoDBDatabase, key: str) -> int:
    return await database.collection("history").count_documents({"k": key, "s": _BATCHES})


# -- log versions ----------------------------------------------------------------------------------


async def test_two_writers_on_one_version_store_exactly_one_batch(database: MongoDBDatabase) -> None:
    driver = MongoDBLogDriver(database)
    version = await driver.append("log", records("a"), expected_version=None, session_id="s")
    results = await asyncio.gather(
        *(driver.append("log", records(f"w{i}"), expected_version=version, session_id="s") for i in range(8)),
        return_exceptions=True,
    )
    winners = [r for r in results if not isinstance(r, BaseException)]
    assert len(winners) == 1
    assert all(isinstance(r, StoreConflictError) for r in results if isinstance(r, BaseException))
    assert len(await driver.read("log")) == 2


async def test_two_creators_of_one_log_store_exactly_one_first_batch(database: MongoDBDatabase) -> None:
    driver = MongoDBLogDriver(database)
    results = await asyncio.gather(
        *(driver.append("log", records(f"c{i}"), expected_version=None, session_id="s") for i in range(6)),
        return_exceptions=True,
    )
    assert sum(not isinstance(r, BaseException) for r in results) == 1
    assert len(await driver.read("log")) == 1
    # The losers took their batches back: only the winner's batch is stored.
    assert await batch_count(database, "log") == 1


async def test_writer_holding_a_version_from_before_a_delete_conflicts(database: MongoDBDatabase) -> None:
    driver = MongoDBLogDriver(database)
    old = await driver.append("log", records("a", "b"), expected_version=None, session_id="s")
    assert await driver.delete("log")
    new = await driver.append("log", records("c"), expected_version=None, session_id="s")
    assert new != old
    with pytest.raises(StoreConflictError):
        await driver.append("log", records("stale"), expected_version=old, session_id="s")
    assert await driver.read("log") == [b"c"]
    assert await batch_count(database, "log") == 1, "the stale batch was left behind"


async def test_writer_holding_a_version_of_a_deleted_log_conflicts(database: MongoDBDatabase) -> None:
    driver = MongoDBLogDriver(database)
    old = await driver.append("log", records("a"), expected_version=None, session_id="s")
    await driver.delete("log")
    with pytest.raises(StoreConflictError):
        await driver.append("log", records("stale"), expected_version=old, session_id="s")
    assert (await driver.tail("log", 5)).version is None
    assert await batch_count(database, "log") == 0


async def test_writer_holding_an_older_version_conflicts(database: MongoDBDatabase) -> None:
    driver = MongoDBLogDriver(database)
    first = await driver.append("log", records("a"), expected_version=None, session_id="s")
    await driver.append("log", records("b", "c"), expected_version=first, session_id="s")
    with pytest.raises(StoreConflictError):
        await driver.append("log", records("stale"), expected_version=first, session_id="s")
    with pytest.raises(StoreConflictError):
        await driver.append("log", records("x"), expected_version="not-a-version", session_id="s")
    assert await driver.read("log") == [b"a", b"b", b"c"]


async def test_writer_holding_a_version_of_an_expired_log_conflicts(database: MongoDBDatabase) -> None:
    shift = [0.0]  # the driver's clock runs ahead of the server's, so its TTL monitor removes nothing
    driver = MongoDBLogDriver(database, clock=lambda: time.time() + shift[0])
    old = await driver.append("log", records("a"), expected_version=None, session_id="s", ttl=10)
    shift[0] += 11
    with pytest.raises(StoreConflictError):
        await driver.append("log", records("late"), expected_version=old, session_id="s", ttl=10)
    assert await driver.read("log") == []
    fresh = await driver.append("log", records("new"), expected_version=None, session_id="s", ttl=10)
    assert fresh != old
    assert await driver.read("log") == [b"new"]
    assert await batch_count(database, "log") == 1, "expired batches were kept"


async def test_versions_are_never_repeated_across_incarnations(database: MongoDBDatabase) -> None:
    driver = MongoDBLogDriver(database)
    seen: set[object] = set()
    for _ in range(5):
        version = await driver.append("log", records("a"), expected_version=None, session_id="s")
        version = await driver.append("log", records("b"), expected_version=version, session_id="s")
        assert version not in seen
        seen.add(version)
        await driver.delete("log")


async def test_windowed_read_asks_only_for_the_newest_batches(database: MongoDBDatabase, commands: Commands) -> None:
    driver = MongoDBLogDriver(database)
    version = None
    for i in range(30):
        version = await driver.append("log", records(f"m{i}a", f"m{i}b"), expected_version=version, session_id="s")
    commands.events.clear()
    assert await driver.read("log", last=5) == [b"m27b", b"m28a", b"m28b", b"m29a", b"m29b"]
    # One query, and no head lookup: the head and the 3 batches holding the newest 5 records
    # (this driver wrote them, so it knows where they start), by a backward index scan.
    assert [e.command_name for e in commands.events] == ["find"]
    find = commands.events[0].command
    assert find["sort"] == {"s": -1}
    assert find["limit"] == 4


async def test_windowed_read_after_other_writers_reads_the_whole_window(
    database: MongoDBDatabase, commands: Commands
) -> None:
    reader, writer = MongoDBLogDriver(database), MongoDBLogDriver(database)
    version = None
    for i in range(4):
        version = await reader.append("log", records(f"r{i}a", f"r{i}b"), expected_version=version, session_id="s")
    assert await reader.read("log", last=3) == [b"r2b", b"r3a", b"r3b"]
    # Another process appends batches of one record: the reader's idea of the log's end is stale.
    tail = await writer.tail("log", 1)
    version = tail.version
    for i in range(4):
        version = await writer.append("log", records(f"w{i}"), expected_version=version, session_id="s")
    commands.events.clear()
    assert await reader.read("log", last=6) == [b"r3a", b"r3b", b"w0", b"w1", b"w2", b"w3"]
    assert [e.command_name for e in commands.events] == ["find", "find"], "the short first scan is read again"
    commands.events.clear()
    assert await reader.read("log", last=6) == [b"r3a", b"r3b", b"w0", b"w1", b"w2", b"w3"]
    assert [e.command_name for e in commands.events] == ["find"], "what the reader saw is remembered"
    assert commands.events[0].command["limit"] == 6  # the head and 5 batches
    fresh = MongoDBLogDriver(database)  # knows nothing: the head first, then up to 9 batches
    assert await fresh.read("log", last=9) == [b"r1b", b"r2a", b"r2b", b"r3a", b"r3b", b"w0", b"w1", b"w2", b"w3"]
    assert await fresh.read("log") == [b"r0a", b"r0b", b"r1a", b"r1b", b"r2a", b"r2b", b"r3a", b"r3b"] + [
        f"w{i}".encode() for i in range(4)
    ]


async def test_a_driver_remembers_as_many_logs_as_it_is_told(database: MongoDBDatabase, commands: Commands) -> None:
    driver = MongoDBLogDriver(database, remembered_logs=2)
    for key in ("a", "b", "c"):
        await driver.append(key, records(key), expected_version=None, session_id="s")
    commands.events.clear()
    assert await driver.read("c") == [b"c"]
    assert [e.command_name for e in commands.events] == ["find"], "a remembered log is one query"
    commands.events.clear()
    assert await driver.read("a") == [b"a"]
    assert [e.command_name for e in commands.events] == ["find", "find"], "the oldest log was forgotten"
    commands.events.clear()
    # c was read after b, so reading a made the driver forget b, not c.
    assert await driver.read("c") == [b"c"]
    assert await driver.read("b") == [b"b"]
    assert [e.command_name for e in commands.events] == ["find", "find", "find"]
    forgetful = MongoDBLogDriver(database, remembered_logs=0)
    assert await forgetful.read("a") == [b"a"] and await forgetful.read("a") == [b"a"]
    with pytest.raises(ValueError, match="remembered_logs"):
        MongoDBLogDriver(database, remembered_logs=-1)


async def test_tail_reads_digests_of_the_newest_batches(database: MongoDBDatabase) -> None:
    driver = MongoDBLogDriver(database)
    version = None
    for i in range(4):
        version = await driver.append("log", records(f"{i}a", f"{i}b"), expected_version=version, session_id="s")
    tail = await driver.tail("log", 3)
    assert tail.length == 8
    assert tail.digests == ["d-2b", "d-3a", "d-3b"]
    assert tail.version == version
    assert await driver.length("log") == 8


async def test_purge_removes_expired_logs_and_batches_the_ttl_monitor_left(database: MongoDBDatabase) -> None:
    shift = [0.0]  # the driver's clock runs ahead of the server's, so its TTL monitor removes nothing
    driver = MongoDBLogDriver(database, clock=lambda: time.time() + shift[0])
    await driver.append("gone", records("a"), expected_version=None, session_id="g", ttl=5)
    await driver.append("swept", records("b"), expected_version=None, session_id="w", ttl=5)
    await driver.append("kept", records("c"), expected_version=None, session_id="k", ttl=50)
    await driver.append("forever", records("d"), expected_version=None, session_id="f")
    # What MongoDB's TTL monitor does: remove the expired head, leave its batches.
    await database.collection("history").delete_one({"_id": "swept"})
    shift[0] += 6
    assert await driver.purge_expired() == 2
    batches = database.collection("history").find({"s": _BATCHES})
    assert sorted({doc["k"] async for doc in batches}) == ["forever", "kept"]
    assert [log.key for log in await driver.list_logs("")] == ["forever", "kept"]


async def test_head_expiry_is_a_ttl_date_and_exact_milliseconds(database: MongoDBDatabase) -> None:
    driver = MongoDBLogDriver(database)
    await driver.append("log", records("a"), expected_version=None, session_id="s", ttl=60)
    head = await database.collection("history").find_one({"_id": "log"})
    assert head is not None
    expected = time.time() + 60
    assert abs(calendar.timegm(head["e"].utctimetuple()) - expected) < 5  # a BSON date, for the TTL monitor
    assert abs(head["t"] / 1000 - expected) < 5


async def test_expiry_on_the_real_clock_and_the_servers_ttl_index(
    mongodb: Server, client: AsyncMongoClient[Doc], database: MongoDBDatabase
) -> None:
    """The MongoDB backend's one test on the real clock (the suites' expiry clauses run on a fake one).

    A log appended with a one-second ttl expires for the driver by the time of day, then the
    server's TTL index removes its head by itself, and ``purge_expired`` removes the batches the
    server left. Each outcome is polled for within a generous bound: MongoDB's TTL monitor runs
    once a minute (a server this run started is asked to run it every second; the nx-27017
    stand-in removes expired documents when it next reads them).
    """
    if mongodb.via != VIA_URL:
        with contextlib.suppress(OperationFailure):
            await client.admin.command({"setParameter": 1, "ttlMonitorSleepSecs": 1})
    driver = MongoDBLogDriver(database)
    await driver.append("log", records("a", "b"), expected_version=None, session_id="s", ttl=1)

    async def expired() -> bool:
        return await driver.length("log") == 0

    async def head_removed() -> bool:
        return await database.collection("history").find_one({"_id": "log"}) is None

    await eventually(expired, what="the log expires for the driver")
    await eventually(head_removed, what="the server's TTL index removes the expired head", within=150)
    assert await driver.purge_expired() == 1
    assert await batch_count(database, "log") == 0, "the purge left the expired log's batches"


# -- indexes ---------------------------------------------------------------------------------------


async def test_migrations_create_the_indexes_once_race_safely(
    client: AsyncMongoClient[Doc], collection_prefix: str
) -> None:
    names = CollectionNames.with_prefix(collection_prefix)
    databases = [MongoDBDatabase(client, collections=names) for _ in range(4)]
    await asyncio.gather(*(d.ready() for d in databases))
    db = client.get_default_database()
    recorded = await db[names.migrations].find({}).to_list()
    assert [doc["_id"] for doc in recorded] == list(range(1, SCHEMA_VERSION + 1))
    history = await db[names.history].index_information()
    unique = [spec for spec in history.values() if spec.get("unique")]
    assert [[field for field, _ in spec["key"]] for spec in unique] == [["k", "x", "s"]]
    ttl = [spec for spec in history.values() if "expireAfterSeconds" in spec]
    assert [([field for field, _ in spec["key"]], spec["expireAfterSeconds"]) for spec in ttl] == [(["e"], 0)]


# -- object listing --------------------------------------------------------------------------------

_ALPHABET = ["a", "b", "/", "é", "Z", "~", ".", " ", "日", "\U0001f600", "ab"]


def _random_keys(rng: random.Random, count: int) -> list[str]:
    return sorted({"".join(rng.choice(_ALPHABET) for _ in range(rng.randint(1, 6))) for _ in range(count)})


async def test_listing_matches_the_in_memory_driver(database: MongoDBDatabase) -> None:
    """Ordered, paged listing (with and without delimiter) agrees with the core's reference driver."""
    rng = random.Random(7)
    keys = _random_keys(rng, 120)
    ours, reference = MongoDBObjectDriver(database), MemoryObjectDriver()
    for key in keys:
        await ours.put(key, b"x")
        await reference.put(key, b"x")
    probes = ["", "a", "a/", "b", "/", "é", "日", "ab/"]
    for prefix in probes:
        for delimiter in ("/", None, "b"):
            for after in (None, "", "a", "a/", "ab", "b/é", prefix + "/"):
                for limit in (None, 1, 3, 50):
                    got = await ours.list(prefix, delimiter=delimiter, after=after, limit=limit)
                    want = await reference.list(prefix, delimiter=delimiter, after=after, limit=limit)
                    assert got == want, (prefix, delimiter, after, limit)


async def test_listing_pages_through_many_common_prefixes(database: MongoDBDatabase) -> None:
    driver = MongoDBObjectDriver(database)
    for i in range(300):
        await driver.put(f"root/d{i:03d}/file", b"")
        await driver.put(f"root/d{i:03d}/sub/deeper", b"")
    await driver.put("root/plain", b"")
    seen: list[str] = []
    after: str | None = None
    while True:
        page = await driver.list("root/", after=after, limit=64)
        entries = sorted(page.keys + page.prefixes)
        seen.extend(entries)
        if len(entries) < 64:
            break
        after = entries[-1]
    assert seen == [f"root/d{i:03d}/" for i in range(300)] + ["root/plain"]


# -- untrusted ids ---------------------------------------------------------------------------------

_HOSTILE = ['{"$ne": null}', "$ne", "$where", "$gt", "a.b", "$", ".", "a.$b", "sleep(1000)", "this.x == 1", "\x00"]


async def test_hostile_object_keys_are_plain_values(database: MongoDBDatabase) -> None:
    driver = MongoDBObjectDriver(database)
    await driver.put("victim", b"secret")
    for i, key in enumerate(_HOSTILE):
        await driver.put(key, f"v{i}".encode())
    for i, key in enumerate(_HOSTILE):
        stored = await driver.get(key)
        assert stored is not None and stored.data == f"v{i}".encode(), key
    assert (await driver.get("victim")) is not None
    ids = {doc["_id"] async for doc in database.collection("objects").find({}, {"_id": 1})}
    assert ids == {*_HOSTILE, "victim"}
    for key in _HOSTILE:
        assert await driver.delete(key)
    assert (await driver.get("victim")) is not None, "deleting a hostile key removed another document"


async def test_query_shaped_keys_are_refused_before_reaching_the_server(database: MongoDBDatabase) -> None:
    driver = MongoDBObjectDriver(database)
    log = MongoDBLogDriver(database)
    await driver.put("victim", b"secret")
    hostile: Any = {"$ne": None}
    with pytest.raises(TypeError):
        await driver.get(hostile)
    with pytest.raises(TypeError):
        await driver.delete(hostile)
    with pytest.raises(TypeError):
        await log.read(hostile)
    assert (await driver.get("victim")) is not None


async def test_hostile_session_ids_keep_separate_histories(database: MongoDBDatabase) -> None:
    provider = MongoDBHistoryProvider(database)
    for i, session_id in enumerate(_HOSTILE):
        await provider.save_messages(session_id, [Message(role="user", contents=[f"m{i}"], message_id=f"m{i}")])
    for i, session_id in enumerate(_HOSTILE):
        loaded = await provider.get_messages(session_id)
        assert [m.message_id for m in loaded] == [f"m{i}"], session_id
    assert sorted(await provider.list_sessions(limit=100)) == sorted(_HOSTILE)


# -- limits and corrupt documents ------------------------------------------------------------------


async def test_file_beyond_the_document_limit_is_refused_before_the_write(database: MongoDBDatabase) -> None:
    files = MongoDBAgentFileStore(database)
    await files.write("big.txt", "small")
    with pytest.raises(ValueError, match="16 MiB"):
        await files.write("big.txt", "x" * (MAX_DOCUMENT_BYTES + 1))
    assert await files.read("big.txt") == "small"


async def test_batch_beyond_the_document_limit_is_refused_whole(database: MongoDBDatabase) -> None:
    provider = MongoDBHistoryProvider(database)
    await provider.save_messages("s", [Message(role="user", contents=["hello"], message_id="m0")])
    huge = [Message(role="user", contents=["y" * (6 * 1024 * 1024)], message_id=f"big{i}") for i in range(3)]
    with pytest.raises(ValueError, match="16 MiB"):
        await provider.save_messages("s", huge)
    assert [m.message_id for m in await provider.get_messages("s")] == ["m0"]
    assert await provider.count_messages("s") == 1


async def test_undecodable_batch_is_a_corrupt_record_naming_it(database: MongoDBDatabase) -> None:
    driver = MongoDBLogDriver(database)
    await driver.append("log", records("a"), expected_version=None, session_id="s")
    batches = database.collection("history")
    await batches.update_one({"k": "log", "s": 0}, {"$set": {"p": "not a list"}})
    bad = await batches.find_one({"k": "log", "s": 0})
    assert bad is not None
    with pytest.raises(CorruptRecordError, match=str(bad["_id"])):
        await driver.read("log")


async def test_undecodable_object_is_a_corrupt_record_naming_it(database: MongoDBDatabase) -> None:
    driver = MongoDBObjectDriver(database)
    await database.collection("objects").insert_one({"_id": "broken", "v": "1", "q": 3})
    with pytest.raises(CorruptRecordError, match="broken"):
        await driver.get("broken")


async def test_binary_and_text_objects_round_trip_exactly(database: MongoDBDatabase) -> None:
    driver = MongoDBObjectDriver(database)
    for i, data in enumerate([b"", b"text", "ünï".encode(), b"\x00nul", b"\xff\xfe", bytes(range(256))]):
        await driver.put(f"k{i}", data)
        stored = await driver.get(f"k{i}")
        assert stored is not None and stored.data == data


async def test_search_push_down_narrows_by_content_without_missing_files(database: MongoDBDatabase) -> None:
    files = MongoDBAgentFileStore(database)
    await files.write("d/hit.txt", "a NEEDLE here")
    await files.write("d/miss.txt", "nothing")
    await files.write("d/fold.txt", "Straße")  # not ASCII: always a candidate
    await files.write("d/sub/deep.txt", "needle")
    keys = await files.objects.find_keys("files/d/", recursive=False, literal="needle")
    assert keys == ["files/d/fold.txt", "files/d/hit.txt"]
    keys = await files.objects.find_keys("files/d/", recursive=True, literal="needle")
    assert keys == ["files/d/fold.txt", "files/d/hit.txt", "files/d/sub/deep.txt"]
    results = await files.search("d", "needle", recursive=True)
    assert sorted(r.file_name for r in results) == ["hit.txt", "sub/deep.txt"]


# -- lifecycle, URLs -------------------------------------------------------------------------------


async def test_borrowed_client_stays_open_and_owned_client_closes(
    mongodb: Server, client: AsyncMongoClient[Doc], collection_prefix: str
) -> None:
    names = CollectionNames.with_prefix(collection_prefix)
    async with MongoDBSessionStore(MongoDBDatabase(client, collections=names)) as store:
        assert await store.get("x") is None
    assert await client.admin.command("ping")  # still usable
    owned = MongoDBHistoryProvider.from_url(
        mongodb.url, collection_prefix=collection_prefix, client_options=client_options()
    )
    await owned.save_messages("s", [Message(role="user", contents=["hi"])])
    await owned.aclose()
    with pytest.raises(StoreUnavailableError):
        await owned.get_messages("s")


async def test_open_stores_serves_both_schemes(mongodb: Server, collection_prefix: str) -> None:
    async with open_stores(mongodb.url, collection_prefix=collection_prefix, client_options=client_options()) as stores:
        assert isinstance(stores.backend, MongoDBBackend)
        history = stores.history_provider()
        await history.save_messages("s", [Message(role="user", contents=["hi"], message_id="m")])
        assert [m.message_id for m in await history.get_messages("s")] == ["m"]
        await stores.file_store().write("a.txt", "A")
        assert await stores.file_store().read("a.txt") == "A"
    srv = open_stores("mongodb+srv://user:secret@cluster.example.net/agents")  # no I/O until first use
    assert isinstance(srv.backend, MongoDBBackend)
    assert "secret" not in repr(srv.backend)
    await srv.aclose()
    with pytest.raises(ValueError, match="unknown MongoDB backend options"):
        open_stores("mongodb://localhost/x", busy_timeout=3)


async def test_non_pymongo_clients_are_refused() -> None:
    class MotorLikeClient:  # what a Motor client looks like to us: not pymongo's AsyncMongoClient
        pass

    with pytest.raises(TypeError, match="AsyncMongoClient"):
        MongoDBHistoryProvider(MotorLikeClient())  # type: ignore[arg-type]


async def test_database_name_comes_from_the_url() -> None:
    assert MongoDBDatabase.from_url("mongodb://h:1/agents?tls=true").name == "agents"
    assert MongoDBDatabase.from_url("mongodb://h:1/").name == "agent_stores"
    assert MongoDBDatabase.from_url("mongodb://h:1/agents", database="other").name == "other"
    with pytest.raises(ValueError):
        MongoDBDatabase.from_url("redis://h:1/0")


# -- faults ----------------------------------------------------------------------------------------


async def test_unreachable_server_is_unavailable_within_the_selection_timeout(collection_prefix: str) -> None:
    from agent_stores.testing.servers import free_port

    url = f"mongodb://127.0.0.1:{free_port()}/x"
    store = MongoDBSessionStore.from_url(
        url, collection_prefix=collection_prefix, client_options={"serverSelectionTimeoutMS": 500}
    )
    started = time.monotonic()
    with pytest.raises(StoreUnavailableError) as caught:
        await store.get("s")
    assert time.monotonic() - started < 5
    assert caught.value.__cause__ is not None
    await store.aclose()


async def test_store_survives_a_server_restart(tmp_path: Path) -> None:
    """Stop and restart a stand-in of this test's own: unavailable while down, the same store works after."""
    try:
        server = NX27017Process(tmp_path / "nx")
        server.start()
    except ServerUnavailable as err:
        if is_required("mongodb"):
            pytest.fail(f"no nx-27017 stand-in to stop and restart, and AGENT_STORES_REQUIRE requires mongodb: {err}")
        pytest.skip(f"no nx-27017 stand-in to stop and restart: {err}")
    try:
        history = MongoDBHistoryProvider.from_url(server.url, client_options={"serverSelectionTimeoutMS": 800})
        await history.save_messages("s", [Message(role="user", contents=["before"], message_id="m1")])
        server.stop()
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError):
            await history.get_messages("s")
        with pytest.raises(StoreUnavailableError):
            await history.save_messages("s", [Message(role="user", contents=["while down"], message_id="m2")])
        assert time.monotonic() - started < 10
        server.start()
        await history.save_messages("s", [Message(role="user", contents=["after"], message_id="m3")])
        assert [m.message_id for m in await history.get_messages("s")] == ["m1", "m3"]
        await history.aclose()
    finally:
        server.stop()


async def test_a_gap_in_a_live_log_is_corrupt_and_a_deleted_log_is_absent(database: MongoDBDatabase) -> None:
    driver = MongoDBLogDriver(database)
    version = None
    for name in ("a", "b", "c"):
        version = await driver.append("log", records(name), expected_version=version, session_id="s")
    batches = database.collection("history")
    middle = await batches.find_one({"k": "log", "s": 1})
    assert middle is not None
    await batches.delete_one({"_id": middle["_id"]})
    for reader in (driver, MongoDBLogDriver(database)):  # with and without the epoch remembered
        with pytest.raises(CorruptRecordError, match="ends at"):
            await reader.read("log")
        assert await reader.read("log", last=1) == [b"c"]  # the newest batch alone is whole
    # Half-way through a delete (head gone, batches not yet): the log is absent, not torn.
    await database.collection("history").delete_one({"_id": "log"})
    assert await driver.read("log") == []
    assert (await driver.tail("log", 3)).version is None


async def test_readme_example_runs(mongodb: Server, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    path = Path(__file__).parents[2] / "examples" / "mongodb_quickstart.py"
    spec = importlib.util.spec_from_file_location("mongodb_quickstart", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    database = f"example_{uuid.uuid4().hex[:8]}"
    await module.main(url_with_database(mongodb.url, database))
    client: AsyncMongoClient[Doc] = AsyncMongoClient(mongodb.url, **client_options())
    await client.drop_database(database)
    await client.close()
    out = capsys.readouterr().out
    assert "history: ['My name is Ada.']" in out
    assert "files: ['user.md']" in out
    assert "session restored: True" in out


async def test_a_save_cut_after_its_batch_statement_leaves_whole_batches(database: MongoDBDatabase) -> None:
    """The server ran a save's first statement (the batch) and never its second (the head): no hole, no half log.

    An append and a log creation are each one ordered command of two statements; a server that
    stops between them has stored the batch document alone, which is what this test stores.
    """
    from agent_stores.mongodb._log_driver import _batch

    writer, other = MongoDBLogDriver(database), MongoDBLogDriver(database)
    version = await writer.append("log", records("a"), expected_version=None, session_id="s")
    assert isinstance(version, str)
    epoch = version.rpartition(":")[0]
    history = database.collection("history")
    await history.insert_one(_batch("log", epoch, 1, records("b", "c"), None))  # the cut append
    await history.insert_one(_batch("new-log", "0123456789abcdef", 0, records("x"), None))  # the cut creation
    # The batch insert was the commit: whole and visible; the log creation never happened.
    assert await other.read("log") == [b"a", b"b", b"c"]
    assert await other.read("new-log") == []
    with pytest.raises(StoreConflictError):  # the dead writer's version is taken
        await other.append("log", records("late"), expected_version=version, session_id="s")
    tail = await other.tail("log", 5)
    await other.append("log", records("d"), expected_version=tail.version, session_id="s")
    await other.append("new-log", records("y"), expected_version=None, session_id="n")
    assert await other.read("log") == [b"a", b"b", b"c", b"d"]
    assert await other.read("new-log") == [b"y"]
