"""MongoDB defects found by review, kept fixed: clock skew at expiry, interrupted (conditional) deletes.

Runs against this run's server (``$AGENT_STORES_MONGODB_URL``, testcontainers ``mongo:7`` or the
nx-27017 stand-in). Each writer gets a clock of its own (``MongoDBLogDriver(clock=...)``), so two
writers can disagree about the time; an interruption is an exception raised by the database's
funnel between two steps of one call, what a killed process or a lost connection leaves.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
import pytest_asyncio
from agent_framework import Message
from pymongo import AsyncMongoClient

from agent_stores.core import LogRecord, StoreConflictError, open_stores
from agent_stores.core.drivers import deletes_conditionally
from agent_stores.mongodb import CollectionNames, MongoDBDatabase, MongoDBLogDriver
from agent_stores.testing.history import SimulatedCrash, SuiteCompaction, crash_log_history, delay_conditional_delete
from agent_stores.testing.servers import Server
from mongodb_support import client_options

pytestmark = pytest.mark.asyncio

Doc = dict[str, Any]
# Far ahead of the server's clock, so the server's TTL monitor never removes a head under a test.
_BASE = time.time() + 10 * 365 * 86400


@pytest_asyncio.fixture
async def client(mongodb: Server) -> AsyncIterator[AsyncMongoClient[Doc]]:
    client: AsyncMongoClient[Doc] = AsyncMongoClient(mongodb.url, **client_options())
    yield client
    await client.close()


@pytest.fixture
def names(collection_prefix: str) -> CollectionNames:
    return CollectionNames.with_prefix(collection_prefix)


def records(*names: str) -> list[LogRecord]:
    return [LogRecord(f"d-{n}", n.encode()) for n in names]


class Interrupted(Exception):
    """Stands for the process dying between two steps."""


def _wrap(database: MongoDBDatabase, step: str, before: bool, then: Callable[[], Awaitable[None]]) -> None:
    run = database.run
    fired = [False]

    async def wrapped(what: str, operation: Any, *args: Any, **kwargs: Any) -> Any:
        due = what == step and not fired[0]
        fired[0] = fired[0] or due
        if due and before:
            await then()
        result = await run(what, operation, *args, **kwargs)
        if due and not before:
            await then()
        return result

    database.run = wrapped  # type: ignore[method-assign]


def stop_before(database: MongoDBDatabase, step: str) -> None:
    """Make ``database`` stop (raise :class:`Interrupted`) right before its first call named ``step``."""

    async def stop() -> None:
        raise Interrupted(step)

    _wrap(database, step, True, stop)


def run_after(database: MongoDBDatabase, step: str, then: Callable[[], Awaitable[None]]) -> None:
    """Run ``then()`` right after ``database``'s first call named ``step`` returned, then carry on."""
    _wrap(database, step, False, then)


# -- clock skew at the expiry boundary -------------------------------------------------------------


async def test_writers_with_skewed_clocks_never_leave_a_hole(
    client: AsyncMongoClient[Doc], names: CollectionNames
) -> None:
    """Writer A's clock runs 2 s ahead of writer B's; the log expires between the two clocks.

    A appends, finds the head expired by its clock; before A acts on that, B (for whom the log
    is live) reads A's batch, builds on it and refreshes the head. The log must stay readable
    and whole: every acknowledged batch in order, its count equal to what it holds.
    """
    now = [_BASE]
    a = MongoDBLogDriver(MongoDBDatabase(client, collections=names), clock=lambda: now[0] + 2)
    b_database = MongoDBDatabase(client, collections=names)
    b = MongoDBLogDriver(b_database, clock=lambda: now[0])
    first = await b.append("log", records("b1"), expected_version=None, session_id="s", ttl=10)
    now[0] += 9  # B: 1 s left; A: expired 1 s ago

    built: list[object] = []

    async def b_builds_on_a() -> None:
        tail = await b.tail("log", 5)
        built.append(await b.append("log", records("b2"), expected_version=tail.version, session_id="s", ttl=10))

    # Right after A's append (its batch, then its head refresh, one command) came back with the
    # refresh unmatched (expired by A's clock), B builds on A's batch.
    run_after(a.database, "append batch", b_builds_on_a)
    outcome: object
    try:
        outcome = await a.append("log", records("a1"), expected_version=first, session_id="s", ttl=10)
    except StoreConflictError as err:
        outcome = err
    assert built, "B did not get to build on A's batch"

    for reader in (a, b):
        payloads = await reader.read("log")
        assert await reader.length("log") == len(payloads), "the count disagrees with what the log holds"
        if isinstance(outcome, StoreConflictError):
            assert b"a1" not in payloads
        else:
            assert payloads == [b"b1", b"a1", b"b2"], "an acknowledged batch is missing or out of order"
    # Later saves land in a readable log, whoever writes.
    version = (await b.tail("log", 1)).version
    await b.append("log", records("b3"), expected_version=version, session_id="s", ttl=10)
    assert (await a.read("log"))[-1] == b"b3"


async def test_a_writer_that_finds_the_log_expired_ends_it_for_every_clock(
    client: AsyncMongoClient[Doc], names: CollectionNames
) -> None:
    """When a writer's clock says the log expired, the log is gone for writers whose clocks lag too.

    A slow-clock writer then neither reads the expired records nor appends to them; it starts a
    new log, and no batch of the old one stays stored.
    """
    now = [_BASE]
    database = MongoDBDatabase(client, collections=names)
    fast = MongoDBLogDriver(database, clock=lambda: now[0] + 2)
    slow = MongoDBLogDriver(MongoDBDatabase(client, collections=names), clock=lambda: now[0])
    version = await slow.append("log", records("old"), expected_version=None, session_id="s", ttl=10)
    now[0] += 9
    with pytest.raises(StoreConflictError):
        await fast.append("log", records("late"), expected_version=version, session_id="s", ttl=10)
    assert await slow.read("log") == [], "the slow clock still reads a log another writer found expired"
    with pytest.raises(StoreConflictError):
        await slow.append("log", records("stale"), expected_version=version, session_id="s", ttl=10)
    await slow.append("log", records("new"), expected_version=None, session_id="s", ttl=10)
    assert await fast.read("log") == [b"new"]
    stored = await database.collection("history").find({"k": "log", "s": {"$lt": 2**62}}).to_list()
    assert [doc["p"] for doc in stored] == [[b"new"]], "batches of the expired log were kept"


# -- interrupted deletes -----------------------------------------------------------------------------


@pytest.mark.parametrize("finisher", ["delete", "purge", "save"])
async def test_an_interrupted_delete_is_finished_by_the_next_delete_purge_or_save(
    client: AsyncMongoClient[Doc], names: CollectionNames, finisher: str
) -> None:
    """A delete stopped after its first step: the log is already absent, and the next call removes every batch."""
    database = MongoDBDatabase(client, collections=names)
    driver = MongoDBLogDriver(database)
    version = await driver.append("log", records("secret-1"), expected_version=None, session_id="s")
    await driver.append("log", records("secret-2"), expected_version=version, session_id="s")
    stop_before(database, "delete batches")
    with pytest.raises(Interrupted):
        await driver.delete("log")

    later = MongoDBLogDriver(MongoDBDatabase(client, collections=names))  # a new process
    assert await later.read("log") == [] and await later.length("log") == 0
    assert [log.key for log in await later.list_logs("")] == []
    if finisher == "delete":
        assert await later.delete("log") is False, "the log was already absent"
    elif finisher == "purge":
        await later.purge_expired()
    else:
        await later.append("log", records("fresh"), expected_version=None, session_id="s")
        assert await later.read("log") == [b"fresh"]
    batches = await database.collection("history").find({"k": "log", "s": {"$lt": 2**62}}).to_list()
    assert all(b"secret" not in payload for doc in batches for payload in doc["p"]), "deleted messages are still stored"
    heads = await database.collection("history").find({"_id": "log"}).to_list()
    assert len(heads) == (1 if finisher == "save" else 0)


@pytest.mark.parametrize("finisher", ["read", "append", "delete"])
async def test_an_interrupted_conditional_delete_is_finished_by_the_next_touch(
    client: AsyncMongoClient[Doc], names: CollectionNames, finisher: str
) -> None:
    """A ``delete_if_version`` stopped after its claim: the delete has won (an append at the version
    conflicts), the log is absent, and the next read, save or delete removes every document."""
    database = MongoDBDatabase(client, collections=names)
    driver = MongoDBLogDriver(database)
    first = await driver.append("log", records("secret-1"), expected_version=None, session_id="s")
    version = await driver.append("log", records("secret-2"), expected_version=first, session_id="s")
    stop_before(database, "retire log head")
    with pytest.raises(Interrupted):
        await driver.delete_if_version("log", version)

    later = MongoDBLogDriver(MongoDBDatabase(client, collections=names))  # a new process
    if finisher == "read":
        assert await later.read("log") == [] and await later.length("log") == 0
    elif finisher == "append":
        with pytest.raises(StoreConflictError):
            await later.append("log", records("late"), expected_version=version, session_id="s")
        assert (await later.tail("log", 1)).version is None, "a claimed log still reads as live"
        await later.append("log", records("fresh"), expected_version=None, session_id="s")
        assert await later.read("log") == [b"fresh"]
    else:
        await later.delete("log")
    stored = await database.collection("history").find({"k": "log"}).to_list()
    assert all(b"secret" not in payload for doc in stored for payload in doc.get("p", [])), "deleted messages stored"
    assert len(stored) == (2 if finisher == "append" else 0), f"documents left behind: {stored!r}"


async def test_a_conditional_delete_at_a_version_the_log_never_had_writes_nothing(
    client: AsyncMongoClient[Doc], names: CollectionNames
) -> None:
    """A version inside a batch, past the end or of another epoch is refused before any write (no claim)."""
    database = MongoDBDatabase(client, collections=names)
    driver = MongoDBLogDriver(database)
    version = await driver.append("log", records("a", "b"), expected_version=None, session_id="s")
    epoch = str(version).rpartition(":")[0]
    for wrong in (f"{epoch}:1", f"{epoch}:3", "0123456789abcdef:2", "junk", 2):
        with pytest.raises(StoreConflictError):
            await driver.delete_if_version("log", wrong)
    assert len(await database.collection("history").find({"k": "log"}).to_list()) == 2, "a refused delete wrote"
    assert await driver.read("log") == [b"a", b"b"]
    more = await driver.append("log", records("c"), expected_version=version, session_id="s")
    assert await driver.delete_if_version("log", more) is True
    assert await database.collection("history").find({"k": "log"}).to_list() == []


# -- credentials never shown -------------------------------------------------------------------------

_SECRET_URLS = [
    "mongodb://user:Hunter2pw@h1:27017,h2/db?tlsCertificateKeyFilePassword=KeyPassWord9&authSource=admin",
    "mongodb://h/db?authMechanism=MONGODB-AWS&authMechanismProperties=AWS_SESSION_TOKEN:SessionTok3n",
    "mongodb+srv://user:Hunter2pw@cluster.example.net/db?tlsCertificateKeyFilePassword=KeyPassWord9",
]
_SECRETS = ("Hunter2pw", "KeyPassWord9", "SessionTok3n", "p@ss/Wrd")


def _shown(err: BaseException) -> str:
    """Everything an exception shows: its message and repr, and those of every exception it chains."""
    text = ""
    seen: BaseException | None = err
    while seen is not None:
        text += f"{seen} {seen!r} "
        seen = seen.__cause__ or seen.__context__
    return text


@pytest.mark.parametrize("url", _SECRET_URLS)
async def test_reprs_never_show_passwords_or_secret_query_options(url: str) -> None:
    from agent_stores.core import open_stores

    stores = open_stores(url)
    try:
        history = stores.history_provider()
        shown = " ".join(repr(x) for x in (stores, history.database, MongoDBDatabase.from_url(url)))
        assert "***" in shown
        assert not [s for s in _SECRETS if s in shown], shown
    finally:
        await stores.aclose()


@pytest.mark.parametrize(
    "url",
    [
        "mongodb:/user:Hunter2pw@host/db",  # one slash: not a URL at all
        "mongodb:user:Hunter2pw@host/db",
        "mongodb://user:p@ss/Wrd@host/db",  # unescaped @ and / in the password
        "mongodb://user:Hunter2pw@host:notaport/db",
        "mongodb://user:Hunter2pw@/db",
        "mongodb+srv://user:Hunter2pw@h1:27017,h2/db",
        # well formed, nobody listening: the unavailable error names the server, not the secrets
        "mongodb://user:Hunter2pw@127.0.0.1:1/db?tlsCertificateKeyFilePassword=KeyPassWord9&serverSelectionTimeoutMS=200",
        "mongodb://127.0.0.1:1/db?authMechanismProperties=AWS_SESSION_TOKEN:SessionTok3n&serverSelectionTimeoutMS=200",
    ],
)
async def test_errors_about_malformed_urls_never_show_a_password(url: str) -> None:
    """Whether the URL is refused by ``open_stores`` or by the client on first use, no secret is shown."""
    from agent_stores.core import open_stores

    try:
        stores = open_stores(url)
    except ValueError as err:
        shown = _shown(err)
    else:
        try:
            history = stores.history_provider()
            with pytest.raises(Exception) as caught:  # any error, as long as it hides the secret
                await history.database.ready()
            shown = _shown(caught.value) + repr(stores) + repr(history.database)
        finally:
            await stores.aclose()
    assert not [s for s in _SECRETS if s in shown], shown


# -- retention racing a save -------------------------------------------------------------------------


async def test_a_late_retention_deletes_no_save_written_after_it_read_the_log(
    mongodb: Server, collection_prefix: str
) -> None:
    """Two retentions finish one stopped run; the late one read the sealed log before the other swapped it and a
    save landed: its delete is conditional on the version it read, so the save is kept."""
    saved = [Message("user" if i % 2 == 0 else "assistant", [f"turn {i}"], message_id=f"m-{i}") for i in range(6)]
    later = Message("user", ["saved between the two runs"], message_id="m-later")
    async with open_stores(mongodb.url, collection_prefix=collection_prefix, client_options=client_options()) as stores:
        provider: Any = stores.history_provider()
        assert deletes_conditionally(provider.driver)
        await provider.save_messages("s", saved)
        assert await provider.compact("s", SuiteCompaction(keep=2))
        sent = [m.to_dict() for m in await stores.history_provider(skip_excluded=True).get_messages("s")]
        crash_log_history(provider, 2)  # stage and seal, then stop before the swap
        with pytest.raises(SimulatedCrash):
            await provider.retain("s")

        late: Any = stores.history_provider()
        key = late.keys.history(late.source_id, "s")

        async def other_run_and_a_save() -> None:
            other: Any = stores.history_provider()
            await other.retain("s")
            await other.save_messages("s", [later])

        raced = delay_conditional_delete(late, key, other_run_and_a_save)
        await late.retain("s")
        assert raced(), "the late run never deleted the sealed log"
        reader: Any = stores.history_provider()
        stored = [m.to_dict() for m in await reader.export_messages("s")]
        assert stored == [*sent, later.to_dict()], "the save between the runs was lost or the transcript doubled"
