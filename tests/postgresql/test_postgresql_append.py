"""A save is one statement even when the provider remembers nothing of the session (``agent_stores_append_unseen``)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from agent_framework import Message

from agent_stores.core import LogRecord, open_stores
from agent_stores.core.compaction import COMPACTION_DIGEST, SEAL_DIGEST
from agent_stores.postgresql import PostgreSQLDatabase
from agent_stores.postgresql._driver import PostgreSQLLogDriver

pytestmark = pytest.mark.asyncio


class _Statements(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.seen: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append(record.getMessage())


@pytest.fixture
def statements() -> Iterator[_Statements]:
    """The statements the backend sends, as its funnel logs them."""
    handler, logger = _Statements(), logging.getLogger("agent_stores.postgresql")
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def _texts(messages: list[Message]) -> list[str]:
    return [m.text for m in messages]


async def test_a_save_through_a_provider_that_remembers_nothing_is_one_statement(
    postgresql_url: str, statements: _Statements
) -> None:
    one, two, three = Message("user", ["one"]), Message("assistant", ["two"]), Message("user", ["three"])
    async with open_stores(postgresql_url) as stores:
        await stores.history_provider().get_messages("warm")  # the pool is open
        for history in (stores.history_provider(), stores.tenant("t").history_provider()):
            statements.seen.clear()
            await history.save_messages("s", [one, two])  # a new session
            assert len(statements.seen) == 1 and "agent_stores_append_unseen" in statements.seen[0]
        statements.seen.clear()
        await stores.history_provider().save_messages("s", [three])  # an existing one, from a fresh provider
        assert len(statements.seen) == 1
        # Already stored: the one-step save writes nothing and the provider decides on the tail it returned.
        statements.seen.clear()
        await stores.history_provider().save_messages("s", [two, three])
        assert len(statements.seen) == 1
        assert _texts(await stores.history_provider().get_messages("s")) == ["one", "two", "three"]
        assert _texts(await stores.tenant("t").history_provider().get_messages("s")) == ["one", "two"]


async def test_the_one_step_append_holds_back_exactly_where_the_core_says(postgresql_url: str) -> None:
    driver = PostgreSQLLogDriver(PostgreSQLDatabase.from_url(postgresql_url))
    stop = (COMPACTION_DIGEST, SEAL_DIGEST)

    async def unseen(key: str, digests: list[str], *, staging: str = "staging") -> tuple[bool, list[str]]:
        records = [LogRecord(d, d.encode()) for d in digests]
        done = await driver.append_unseen(
            key, records, window=len(records), stop=stop, staging=staging, read=3, session_id="s"
        )
        if done.appended:
            assert done.tail.length == await driver.length(key)
        else:
            assert done.tail == await driver.tail(key, 3)
        return done.appended, done.tail.digests

    try:
        assert await unseen("k", ["a", "b"]) == (True, ["a", "b"])
        assert await unseen("k", ["c", "d", "e"]) == (True, ["a", "b", "c", "d", "e"])
        assert await unseen("k", ["x", "c"]) == (True, ["c", "d", "e", "x", "c"])  # "c" is 4 records back
        assert await unseen("k", ["y", "x"]) == (False, ["e", "x", "c"])  # "x" is among the last two
        await driver.append(
            "k", [LogRecord(SEAL_DIGEST, b"{}")], expected_version=(await driver.tail("k", 0)).version, session_id="s"
        )
        assert await unseen("k", ["z"]) == (False, ["x", "c", SEAL_DIGEST])  # sealed: the retention decides
        await driver.append("m", [LogRecord("a", b"a")], expected_version=None, session_id="s")
        await driver.append(
            "m",
            [LogRecord(COMPACTION_DIGEST, b"{}"), LogRecord("b", b"b")],
            expected_version=(await driver.tail("m", 0)).version,
            session_id="s",
        )
        assert await unseen("m", ["c"]) == (True, ["a", COMPACTION_DIGEST, "b", "c"])  # one back is a message
        assert await unseen("m", ["d", "e", "f"]) == (False, [COMPACTION_DIGEST, "b", "c"])  # three back is not
        await driver.append("staged", [LogRecord("a", b"a")], expected_version=None, session_id="s")
        assert await unseen("n", ["a"], staging="staged") == (False, [])  # a retention staged it: restore first
        assert await driver.length("n") == 0
        assert await unseen("n", ["a"], staging="nothing") == (True, ["a"])
    finally:
        await driver.aclose()


async def test_a_delete_waiting_on_an_append_removes_the_messages_it_committed(postgresql_url: str) -> None:
    """A log's messages go with it, also those an append committed while the delete waited for the log's row.

    The messages carry no foreign key to their log (its check cost a lookup per message); a
    trigger after each deleted log row deletes them, in a query that sees what committed
    meanwhile, so no message outlives its log.
    """
    import asyncio

    import psycopg

    driver = PostgreSQLLogDriver(PostgreSQLDatabase.from_url(postgresql_url))
    try:
        version = await driver.append("race", [LogRecord("d0", b"first")], expected_version=None, session_id="s")
        (log_id,) = (await driver.database.fetch("SELECT log_id FROM agent_stores_logs WHERE key = 'race'"))[0]
        writer = await psycopg.AsyncConnection.connect(postgresql_url, autocommit=True)
        deleter = await psycopg.AsyncConnection.connect(postgresql_url, autocommit=True)
        try:
            async with writer.transaction():
                await writer.execute(
                    "SELECT agent_stores_append('race', 's', %s, 7, NULL, 0, %s::text[], %s::bytea[])",
                    (int(version), ["d1", "d2"], [b"second", b"third"]),
                )
                deleting = asyncio.ensure_future(
                    deleter.execute("DELETE FROM agent_stores_logs WHERE key = 'race' RETURNING 1")
                )
                await asyncio.sleep(0.3)
                assert not deleting.done(), "the delete should wait for the append's lock on the log row"
            rows = await (await deleting).fetchall()
        finally:
            await writer.close()
            await deleter.close()
        assert rows == [(1,)]
        left = await driver.database.fetch("SELECT count(*) FROM agent_stores_messages WHERE log_id = %s", (log_id,))
        assert left == [(0,)], "messages outlived their log"
        assert await driver.read("race") == []
    finally:
        await driver.aclose()
