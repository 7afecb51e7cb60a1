"""SQLite backend behaviour beyond the conformance suites: URLs, ownership, schema, errors, push-down."""

from __future__ import annotations

import asyncio
import sqlite3
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path
from typing import Any

import aiosqlite
import pytest
import pytest_asyncio
from agent_framework import AgentFileStore, HistoryProvider, Message, SessionStore
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_stores.core import (
    CorruptRecordError,
    LogRecord,
    StoreConflictError,
    StoreError,
    StoreUnavailableError,
    open_stores,
)
from agent_stores.core.files import ObjectAgentFileStore
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.sqlite import (
    SCHEMA_VERSION,
    SQLiteAgentFileStore,
    SQLiteBackend,
    SQLiteDatabase,
    SQLiteHistoryProvider,
    SQLiteLogDriver,
    SQLiteSessionStore,
    parse_sqlite_url,
)
from agent_stores.sqlite import _driver as driver_sql
from agent_stores.sqlite._files import plain_literal
from agent_stores.testing import eventually

pytestmark = pytest.mark.asyncio


def _msg(text: str, message_id: str | None = None, role: str = "user") -> Message:
    return Message(role, [text], message_id=message_id)


def _raw(path: Path | str) -> sqlite3.Connection:
    return sqlite3.connect(path, isolation_level=None)


def _rows(path: Path | str, sql: str) -> list[Any]:
    with closing(_raw(path)) as db:
        return db.execute(sql).fetchall()


# -- URLs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "path"),
    [
        ("sqlite:///relative/agent.db", "relative/agent.db"),
        ("sqlite:////absolute/agent.db", "/absolute/agent.db"),
        ("sqlite:///with%20space.db", "with space.db"),
        ("sqlite://", ":memory:"),
        ("sqlite:///:memory:", ":memory:"),
        ("SQLITE:///upper.db", "upper.db"),
    ],
)
async def test_url_forms_name_the_expected_database(url: str, path: str) -> None:
    assert parse_sqlite_url(url).path == path


async def test_url_query_and_keyword_options() -> None:
    options = parse_sqlite_url("sqlite:///a.db?busy_timeout=2.5&synchronous=full", journal_mode="delete")
    assert (options.busy_timeout, options.synchronous, options.journal_mode) == (2.5, "full", "delete")
    assert parse_sqlite_url("sqlite:///a.db?busy_timeout=9", busy_timeout=1).busy_timeout == 1


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sqlite://host/agent.db", "take no host"),
        ("sqlite:///", "empty path"),
        ("postgres:///agent.db", "not a SQLite URL"),
        ("sqlite:agent.db", "not a SQLite URL"),
        ("sqlite:///a.db?pool_size=3", "unknown SQLite options"),
        ("sqlite:///a.db?busy_timeout=soon", "option busy_timeout takes a finite, non-negative number of seconds"),
        ("sqlite:///a.db?busy_timeout=-1", "option busy_timeout takes a finite, non-negative number of seconds"),
        ("sqlite:///a.db?busy_timeout=inf", "option busy_timeout takes a finite, non-negative number of seconds"),
        ("sqlite:///a.db?synchronous=sometimes", "synchronous must be one of"),
        ("sqlite:///a.db?journal_mode=wal2", "journal_mode must be one of"),
        ("sqlite:///a.db#frag", "no fragment"),
        ("sqlite:///a.db?busy_timeout", "malformed query"),
    ],
)
async def test_bad_urls_are_clear_value_errors(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SQLiteHistoryProvider.from_url(url)


async def test_relative_and_absolute_urls_create_the_named_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "rel").mkdir()
    async with SQLiteHistoryProvider.from_url("sqlite:///rel/agent.db") as relative:
        await relative.save_messages("s", [_msg("hi")])
    absolute_path = tmp_path / "abs.db"
    async with SQLiteHistoryProvider.from_url(f"sqlite:///{absolute_path}") as absolute:
        await absolute.save_messages("s", [_msg("hi")])
    assert str(absolute_path).startswith("/")
    assert _rows(tmp_path / "rel" / "agent.db", "SELECT count(*) FROM agent_stores_messages") == [(1,)]
    assert _rows(absolute_path, "SELECT count(*) FROM agent_stores_messages") == [(1,)]


async def test_in_memory_url_keeps_data_for_the_connection_only() -> None:
    async with SQLiteHistoryProvider.from_url("sqlite://") as first:
        await first.save_messages("s", [_msg("hi", "m-1")])
        assert [m.message_id for m in await first.get_messages("s")] == ["m-1"]
    async with SQLiteHistoryProvider.from_url("sqlite://") as second:
        assert await second.get_messages("s") == []


# -- open_stores ---------------------------------------------------------------------------


async def test_open_stores_gives_all_three_stores_on_one_file(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    async with open_stores(f"sqlite:///{path}", busy_timeout=5) as stores:
        assert isinstance(stores.backend, SQLiteBackend)
        history, files, sessions = stores.history_provider(max_messages=10), stores.file_store(), stores.session_store()
        assert isinstance(history, SQLiteHistoryProvider) and isinstance(history, HistoryProvider)
        assert isinstance(files, SQLiteAgentFileStore) and isinstance(files, AgentFileStore)
        assert isinstance(sessions, SQLiteSessionStore) and isinstance(sessions, SessionStore)
        assert history.database is files.database is sessions.database  # one connection
        await history.save_messages("s", [_msg("hello")])
        await files.write("notes/a.md", "memo")
        from agent_framework import AgentSession

        await sessions.set("s", AgentSession(session_id="s"))
        kwargs = stores.harness_kwargs(max_messages=5)
        assert set(kwargs) == {"history_provider", "file_memory_store", "todo_provider", "default_options"}
        assert isinstance(kwargs["history_provider"], SQLiteHistoryProvider)
        assert kwargs["history_provider"].max_messages == 5
        assert isinstance(kwargs["file_memory_store"], SQLiteAgentFileStore)
    keys = [k for (k,) in _rows(path, "SELECT key FROM agent_stores_objects ORDER BY key")]
    assert keys == ["files/notes/a.md", "sessions/s.json"]
    assert _rows(path, "SELECT count(*) FROM agent_stores_messages") == [(1,)]
    with pytest.raises(StoreUnavailableError):
        await history.get_messages("s")  # the backend closed the shared connection


async def test_open_stores_rejects_bad_sqlite_urls_and_options() -> None:
    with pytest.raises(ValueError, match="take no host"):
        open_stores("sqlite://host/x.db")
    with pytest.raises(ValueError, match="unknown SQLite backend options"):
        open_stores("sqlite://", pool_size=1)


# -- borrowed and owned connections --------------------------------------------------------


async def test_borrowed_connection_is_never_closed_nor_reconfigured(tmp_path: Path) -> None:
    async with aiosqlite.connect(tmp_path / "user.db", isolation_level=None) as connection:
        mode_before = list(await connection.execute_fetchall("PRAGMA journal_mode"))
        history = SQLiteHistoryProvider(connection)
        files = SQLiteAgentFileStore(connection)
        assert history.database is files.database  # one wrapper per connection
        await history.save_messages("s", [_msg("hi")])
        await files.write("a.txt", "x")
        await history.aclose()
        await files.aclose()
        assert list(await connection.execute_fetchall("SELECT count(*) FROM agent_stores_messages")) == [(1,)]
        assert list(await connection.execute_fetchall("PRAGMA journal_mode")) == mode_before == [("delete",)]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "autocommit mode"),
        ({"isolation_level": "DEFERRED"}, "autocommit mode"),
    ],
)
async def test_borrowed_connection_must_be_autocommit(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    async with aiosqlite.connect(tmp_path / "user.db", **options) as connection:
        history = SQLiteHistoryProvider(connection)
        with pytest.raises(ValueError, match=message):
            await history.get_messages("s")


async def test_borrowed_connection_factories_are_checked(tmp_path: Path) -> None:
    async with aiosqlite.connect(tmp_path / "user.db", isolation_level=None) as connection:
        connection.row_factory = lambda cursor, row: dict(enumerate(row))  # pyright: ignore[reportUnknownLambdaType]
        with pytest.raises(ValueError, match="row_factory"):
            await SQLiteHistoryProvider(connection).get_messages("s")
    async with aiosqlite.connect(tmp_path / "user2.db", isolation_level=None) as connection:
        connection.row_factory = sqlite3.Row  # allowed: rows still index by position
        history = SQLiteHistoryProvider(connection)
        await history.save_messages("s", [_msg("hi", "m-1")])
        assert [m.message_id for m in await history.get_messages("s")] == ["m-1"]


async def test_not_a_connection_is_a_type_error() -> None:
    with pytest.raises(TypeError, match=r"aiosqlite\.Connection"):
        SQLiteHistoryProvider("sqlite:///x.db")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


async def test_owned_connection_is_wal_with_busy_timeout_and_closed(tmp_path: Path) -> None:
    history = SQLiteHistoryProvider.from_path(tmp_path / "agent.db", busy_timeout=7)
    await history.save_messages("s", [_msg("hi")])
    assert await history.database.fetchall("PRAGMA journal_mode") == [("wal",)]
    assert await history.database.fetchall("PRAGMA busy_timeout") == [(7000,)]
    assert await history.database.fetchall("PRAGMA synchronous") == [(1,)]  # NORMAL
    await history.aclose()
    with pytest.raises(StoreUnavailableError, match="closed"):
        await history.get_messages("s")
    full = SQLiteHistoryProvider.from_path(tmp_path / "agent.db", synchronous="FULL")
    async with full:
        assert await full.database.fetchall("PRAGMA synchronous") == [(2,)]


async def test_owned_store_left_open_warns() -> None:
    store = SQLiteSessionStore.from_url("sqlite://")
    with pytest.warns(ResourceWarning, match="was not closed"):
        store.__del__()
    await store.aclose()


# -- schema --------------------------------------------------------------------------------


async def test_schema_is_recorded_and_migrations_are_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    for _ in range(2):
        async with SQLiteHistoryProvider.from_path(path) as history:
            await history.save_messages("s", [_msg("hi")])
            assert await history.database.schema_versions() == list(range(1, SCHEMA_VERSION + 1))
    assert _rows(path, "SELECT version FROM agent_stores_migrations") == [(v,) for v in range(1, SCHEMA_VERSION + 1)]


async def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    async with SQLiteHistoryProvider.from_path(path) as history:
        await history.save_messages("s", [_msg("hi")])
    with closing(_raw(path)) as db:
        db.execute("INSERT INTO agent_stores_migrations VALUES (999, 'from the future', 0)")
    async with SQLiteHistoryProvider.from_path(path) as history:
        with pytest.raises(StoreError, match="newer than this agent-stores-sqlite supports"):
            await history.get_messages("s")


_OPENER = """
import asyncio, sys
from agent_framework import Message
from agent_stores.sqlite import SQLiteHistoryProvider

async def main():
    print("ready", flush=True)  # imports done
    sys.stdin.readline()  # start together: every process opens the new file at once
    async with SQLiteHistoryProvider.from_path(sys.argv[1]) as history:
        await history.save_messages("shared", [Message("user", [sys.argv[2]], message_id=sys.argv[2])])

asyncio.run(main())
"""


async def test_processes_opening_a_new_file_at_once_migrate_it_once(tmp_path: Path) -> None:
    """Switching a new file to WAL races between processes; every one must still open it."""
    path = tmp_path / "new.db"
    names = [f"p{i}" for i in range(6)]
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            "-W",
            "ignore",
            "-c",
            _OPENER,
            str(path),
            name,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        for name in names
    ]
    for process in processes:  # each says when its imports are done
        assert process.stdout is not None
        if await asyncio.wait_for(process.stdout.readline(), 120) != b"ready\n":
            _, err = await process.communicate()
            pytest.fail(f"a process exited before it was ready: {err.decode()[-2000:]}")
    results = await asyncio.gather(*(asyncio.wait_for(p.communicate(b"go\n"), 120) for p in processes))
    assert [p.returncode for p in processes] == [0] * len(names), [err.decode()[-2000:] for _, err in results]
    assert _rows(path, "SELECT version FROM agent_stores_migrations") == [(v,) for v in range(1, SCHEMA_VERSION + 1)]
    async with SQLiteHistoryProvider.from_path(path) as history:
        assert sorted(str(m.message_id) for m in await history.get_messages("shared")) == names


async def test_statements_use_indexes_never_a_scan_of_other_sessions(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    async with SQLiteHistoryProvider.from_path(path) as history:
        await history.save_messages("s", [_msg("hi")])
    plans = {
        "tail": (driver_sql._TAIL, ("k", 0.0, 5)),  # pyright: ignore[reportPrivateUsage]
        "read": (driver_sql._READ_ALL, ("k", 0.0)),  # pyright: ignore[reportPrivateUsage]
        "read last": (driver_sql._READ_LAST, ("k", 0.0, 5)),  # pyright: ignore[reportPrivateUsage]
        "length": (driver_sql._LENGTH, ("k", 0.0)),  # pyright: ignore[reportPrivateUsage]
        "delete": (driver_sql._DELETE_LOG, ("k", 0.0)),  # pyright: ignore[reportPrivateUsage]
        "purge": (driver_sql._PURGE, (0.0,)),  # pyright: ignore[reportPrivateUsage]
    }
    with closing(_raw(path)) as db:
        for name, (sql, parameters) in plans.items():
            plan = " | ".join(row[3] for row in db.execute(f"EXPLAIN QUERY PLAN {sql}", parameters))
            assert "SCAN" not in plan.replace("SCAN CONSTANT ROW", ""), f"{name} scans: {plan}"


# -- history driver details ----------------------------------------------------------------


async def test_version_is_never_reused_after_delete(tmp_path: Path) -> None:
    history = SQLiteHistoryProvider.from_path(tmp_path / "agent.db")
    async with history:
        driver = SQLiteLogDriver(history.database)
        record = LogRecord("d", b"{}")
        first = await driver.append("k", [record], expected_version=None, session_id="s")
        assert (await driver.tail("k", 1)).version == first
        assert await driver.delete("k") is True
        second = await driver.append("k", [record], expected_version=None, session_id="s")
        assert second != first
        with pytest.raises(StoreConflictError):
            await driver.append("k", [record], expected_version=first, session_id="s")
        with pytest.raises(StoreConflictError):
            await driver.append("k", [record], expected_version=None, session_id="s")
        assert await driver.length("k") == 1


async def test_large_import_is_one_transaction_beside_other_writes(tmp_path: Path) -> None:
    async with SQLiteHistoryProvider.from_path(tmp_path / "agent.db") as history:
        messages = [_msg(f"m{i}", f"m-{i}") for i in range(1000)]  # several statements
        other = SQLiteHistoryProvider(history.database, source_id="other")
        await asyncio.gather(
            history.import_messages("big", messages),
            *(other.save_messages(f"small-{i}", [_msg("x", f"x-{i}")]) for i in range(5)),
        )
        assert await history.count_messages("big") == 1000
        assert [m.message_id for m in await history.export_messages("big")] == [m.message_id for m in messages]
        assert all([await other.count_messages(f"small-{i}") for i in range(5)])


async def test_conflicting_large_import_stores_nothing(tmp_path: Path) -> None:
    async with SQLiteHistoryProvider.from_path(tmp_path / "agent.db") as history:
        driver = SQLiteLogDriver(history.database)
        await driver.append("k", [LogRecord("d", b"{}")], expected_version=None, session_id="s")
        records = [LogRecord(f"d{i}", b"{}") for i in range(900)]
        with pytest.raises(StoreConflictError):
            await driver.append("k", records, expected_version=12345, session_id="s")
        assert await driver.length("k") == 1
        assert await history.database.fetchall("SELECT count(*) FROM agent_stores_messages") == [(1,)]


async def test_purge_expired_removes_expired_sessions_and_their_rows(tmp_path: Path) -> None:
    """The SQLite backend's one test on the real clock (the suites' expiry clauses run on a fake one).

    Sessions saved with a short ttl expire by the time of day: the test polls until they are no
    longer listed, then ``purge_expired`` removes them and their rows, once.
    """
    path = tmp_path / "agent.db"
    async with SQLiteHistoryProvider.from_path(path, ttl=0.2) as expiring:
        keeping = SQLiteHistoryProvider(expiring.database)
        for session_id in ("a", "b"):
            await expiring.save_messages(session_id, [_msg("bye"), _msg("now")])
        await keeping.save_messages("c", [_msg("stay")])

        async def expired() -> bool:  # same source id; the expired ones are not listed
            return await expiring.list_sessions() == ["c"]

        await eventually(expired, what="the sessions saved with ttl=0.2 expire")
        assert await expiring.purge_expired() == 2
        assert await expiring.purge_expired() == 0
    assert _rows(path, "SELECT count(*) FROM agent_stores_messages") == [(1,)]


async def test_corrupt_record_is_reported_by_name_and_nothing_is_lost(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    messages = [_msg("one", "m-1"), _msg("two", "m-2"), _msg("three", "m-3")]
    async with SQLiteHistoryProvider.from_path(path) as history:
        await history.save_messages("s", messages)
    with closing(_raw(path)) as db:
        db.execute(
            "UPDATE agent_stores_messages SET payload = x'7b6e6f74' "
            "WHERE id = (SELECT min(id) FROM agent_stores_messages)"
        )
    async with SQLiteHistoryProvider.from_path(path) as history:
        with pytest.raises(CorruptRecordError, match=r"history record in '.*/history/s'") as caught:
            await history.get_messages("s")
        assert isinstance(caught.value, ValueError)
        windowed = SQLiteHistoryProvider(history.database, max_messages=2)
        assert [m.message_id for m in await windowed.get_messages("s")] == ["m-2", "m-3"]
        assert await history.count_messages("s") == 3
    assert _rows(path, "SELECT count(*) FROM agent_stores_messages") == [(3,)]


async def test_data_survives_reopening_the_file(tmp_path: Path) -> None:
    from agent_framework import AgentSession

    url = f"sqlite:///{tmp_path / 'agent.db'}"
    async with open_stores(url) as stores:
        await stores.history_provider().save_messages("s", [_msg("remember me", "m-1")])
        await stores.file_store().write("memories/a.md", "the sky is green")
        session = AgentSession(session_id="s")
        session.state["k"] = "v"
        await stores.session_store().set("s", session)
    async with open_stores(url) as stores:
        assert [m.message_id for m in await stores.history_provider().get_messages("s")] == ["m-1"]
        assert await stores.file_store().read("memories/a.md") == "the sky is green"
        restored = await stores.session_store().get("s")
        assert restored is not None and restored.state["k"] == "v"


async def test_locked_database_beyond_busy_timeout_is_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "agent.db"
    async with SQLiteHistoryProvider.from_path(path) as history:
        await history.save_messages("s", [_msg("hi")])
    with closing(_raw(path)) as locker:
        locker.execute("BEGIN EXCLUSIVE")
        async with SQLiteHistoryProvider.from_path(path, busy_timeout=0.1) as blocked:
            with pytest.raises(StoreUnavailableError) as caught:
                await blocked.save_messages("s", [_msg("blocked")])
        cause = caught.value.__cause__
        assert isinstance(cause, sqlite3.OperationalError)
        assert cause.sqlite_errorcode & 0xFF == sqlite3.SQLITE_BUSY
        locker.execute("ROLLBACK")


# -- file search push-down -----------------------------------------------------------------


@pytest_asyncio.fixture
async def file_stores(tmp_path: Path) -> AsyncIterator[tuple[SQLiteAgentFileStore, ObjectAgentFileStore]]:
    """A SQLite file store and an unfiltered reference (the core's default candidates) to compare with."""
    async with SQLiteAgentFileStore.from_path(tmp_path / "files.db") as store:
        yield store, ObjectAgentFileStore(MemoryObjectDriver())


@pytest.mark.parametrize(
    ("pattern", "literal"),
    [
        ("needle", "needle"),
        ("NeedLe", "needle"),
        ("a b-c:d", "a b-c:d"),
        ("", None),
        ("a.b", None),
        ("a|b", None),
        ("(x)", None),
        ("x*", None),
        ("x+", None),
        ("x?", None),
        ("^x", None),
        ("x$", None),
        ("[x]", None),
        ("x{2}", None),
        ("\\d", None),
        ("straße", None),
        ("\u212a", None),
    ],
)
async def test_only_plain_ascii_literals_filter_content(pattern: str, literal: str | None) -> None:
    assert plain_literal(pattern) == literal


async def test_search_push_down_narrows_and_keeps_case_folded_matches(
    file_stores: tuple[SQLiteAgentFileStore, ObjectAgentFileStore],
) -> None:
    store, _ = file_stores
    files = {
        "d/plain-hit.txt": "a NEEDLE here",
        "d/plain-miss.txt": "nothing to see",
        "d/kelvin.txt": "\u212aelvin",  # KELVIN SIGN folds to k
        "d/eszett.txt": "stra\u00dfe",  # ß folds to ss
        "d/deeper/hit.txt": "needle",
        "other/hit.txt": "needle",
    }
    for path, content in files.items():
        await store.write(path, content)
    assert await store.find_matching_files("d", "needle") == ["eszett.txt", "kelvin.txt", "plain-hit.txt"]
    assert sorted(await store.find_matching_files("d", "needle", recursive=True)) == [
        "deeper/hit.txt",
        "eszett.txt",
        "kelvin.txt",
        "plain-hit.txt",
    ]
    assert [r.file_name for r in await store.search("d", "kelvin")] == ["kelvin.txt"]
    assert [r.file_name for r in await store.search("d", "STRASSE")] == ["eszett.txt"]
    assert sorted(await store.find_matching_files("d", "n.edle")) == [
        "eszett.txt",
        "kelvin.txt",
        "plain-hit.txt",
        "plain-miss.txt",
    ]


_WORDS = [
    "needle",
    "Needle",
    "NEEDLE",
    "ss",
    "SS",
    "\u00df",
    "\u1e9e",
    "k",
    "K",
    "\u212a",
    "\u017f",
    "st",
    "\ufb06",
    "i",
    "I",
    "\u0130",
    "\u0131",
    "a.b",
    "x",
    "\n",
    "\r\n",
    " ",
    "\u00e9",
    "E\u0301",
]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    contents=st.lists(st.lists(st.sampled_from(_WORDS), max_size=6).map("".join), min_size=1, max_size=6),
    pattern=st.one_of(
        st.sampled_from(_WORDS),
        st.lists(st.sampled_from(_WORDS), min_size=1, max_size=3).map("".join),
        st.text(alphabet="abkKsSnNeEdlLt.|*()[]\\ ", min_size=1, max_size=6),
    ),
    recursive=st.booleans(),
)
async def test_search_push_down_returns_a_superset(
    file_stores: tuple[SQLiteAgentFileStore, ObjectAgentFileStore], contents: list[str], pattern: str, recursive: bool
) -> None:
    """Pushed-down search finds exactly what the unfiltered base-class search finds, for any content and pattern."""
    store, reference = file_stores
    import regex

    from agent_stores.testing import unique_id

    root = unique_id("search")
    for i, content in enumerate(contents):
        path = f"{root}/{'sub/' if i % 2 else ''}f{i}.txt"
        await store.write(path, content)
        await reference.write(path, content)
    try:
        expected = await reference.search(root, pattern, recursive=recursive)
    except regex.error:
        return
    got = await store.search(root, pattern, recursive=recursive)
    assert [r.to_dict() for r in got] == [r.to_dict() for r in expected]


async def test_opening_waits_for_a_writer_holding_a_new_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Switching to WAL while another connection holds a write lock gets SQLITE_BUSY at once,
    without SQLite's busy handler; the open must wait for the lock instead of failing."""
    path = tmp_path / "held.db"
    refused = asyncio.Event()  # the open met the lock: the switch to WAL was refused
    call = SQLiteDatabase._call  # pyright: ignore[reportPrivateUsage]

    async def watched(connection: aiosqlite.Connection, sql: str, parameters: Any, *, fetch: bool) -> Any:
        try:
            return await call(connection, sql, parameters, fetch=fetch)
        except StoreUnavailableError:
            if "journal_mode" in sql:
                refused.set()
            raise

    monkeypatch.setattr(SQLiteDatabase, "_call", staticmethod(watched))
    with closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute("CREATE TABLE app_data (x)")
        other.execute("BEGIN IMMEDIATE")
        other.execute("INSERT INTO app_data VALUES (1)")

        async def release_once_refused() -> None:
            await refused.wait()  # the open is waiting for the lock: release it now
            other.execute("COMMIT")

        release = asyncio.create_task(release_once_refused())
        try:
            async with SQLiteHistoryProvider.from_path(path) as history:
                await history.save_messages("s", [_msg("hi")])
                assert [m.text for m in await history.get_messages("s")] == ["hi"]
        finally:
            release.cancel()
        assert refused.is_set(), "the open never met the other connection's lock"


async def test_a_failed_open_leaves_no_thread_behind(tmp_path: Path) -> None:
    """When opening fails (here: the lock is never released within the busy timeout), the
    connection is closed again, so no aiosqlite worker thread keeps the process alive."""
    path = tmp_path / "held.db"
    with closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute("CREATE TABLE app_data (x)")
        other.execute("BEGIN IMMEDIATE")
        before = set(threading.enumerate())
        history = SQLiteHistoryProvider.from_path(path, busy_timeout=0.2)
        try:
            with pytest.raises(StoreUnavailableError):
                await history.get_messages("s")
            started = set(threading.enumerate()) - before
            for thread in started:
                thread.join(timeout=5)
            assert not [t for t in started if t.is_alive()]
        finally:
            await history.aclose()
            other.execute("ROLLBACK")


async def test_harness_todo_list_is_kept_in_the_sqlite_file(tmp_path: Path) -> None:
    """The harness's todo list from ``harness_kwargs()`` outlives the process's stores."""
    from agent_framework import AgentSession, TodoItem

    url = f"sqlite:///{tmp_path / 'agent.db'}"
    session = AgentSession(session_id="s")
    async with open_stores(url) as stores:
        todos = stores.harness_kwargs()["todo_provider"]
        await todos.store.save_state(session, [TodoItem(1, "write the plan")], next_id=2, source_id=todos.source_id)
    async with open_stores(url) as stores:
        todos = stores.harness_kwargs()["todo_provider"]
        items, next_id = await todos.store.load_state(session, source_id=todos.source_id)
    assert [(item.id, item.title, item.is_complete) for item in items] == [(1, "write the plan", False)]
    assert next_id == 2
