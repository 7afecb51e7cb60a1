"""A server restart: what was saved survives it, and the same store works again once the server is back."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from agent_framework import Message

from agent_stores.core import StoreUnavailableError, open_stores
from agent_stores.testing.servers import ServerUnavailable, is_required
from agent_stores.testing.servers.postgresql import LocalPostgreSQL, postgresql_binaries

pytestmark = pytest.mark.asyncio


@pytest.fixture
def own_server() -> Iterator[LocalPostgreSQL]:
    """A server of this test's own, which it may stop and start."""
    bindir = postgresql_binaries()
    if bindir is None:
        if is_required("postgresql"):
            pytest.fail("no PostgreSQL server binaries, and AGENT_STORES_REQUIRE requires postgresql")
        pytest.skip("no PostgreSQL server binaries (apt-get install postgresql)")
    with tempfile.TemporaryDirectory(prefix="agent-stores-postgresql-restart-") as directory:
        server = LocalPostgreSQL(bindir, Path(directory))
        try:
            server.init()
            server.start()
        except ServerUnavailable as err:
            pytest.fail(str(err)) if is_required("postgresql") else pytest.skip(str(err))
        try:
            yield server
        finally:
            server.stop()


async def test_saved_messages_survive_a_restart_and_the_store_reconnects(own_server: LocalPostgreSQL) -> None:
    pool_size = 2
    async with open_stores(own_server.url + f"?connect_timeout=2&pool_timeout=10&pool_size={pool_size}") as stores:
        history = stores.history_provider()
        await history.save_messages("s", [Message("user", ["before"], message_id="m1")])
        own_server.restart()
        # Each pooled connection the restart broke fails one call, as unavailable, and is replaced.
        failures = 0
        while True:
            try:
                await history.save_messages("s", [Message("user", ["after"], message_id="m2")])
                break
            except StoreUnavailableError:
                failures += 1
                assert failures <= pool_size, "the store did not work again once the server was back"
        assert [m.text for m in await history.get_messages("s")] == ["before", "after"]
