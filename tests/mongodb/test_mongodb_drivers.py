"""The two driver suites against the MongoDB drivers, on the run's MongoDB server (or the stand-in).

Every driver a factory opens in one clause owns its own client and shares one set of fresh
collections, as separate processes would.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pymongo import monitoring

from agent_stores.core import OrderedPut, StoreConflictError
from agent_stores.mongodb import CollectionNames, MongoDBBackend, MongoDBDatabase, MongoDBLogDriver, MongoDBObjectDriver
from agent_stores.testing import (
    FakeClock,
    LogDriverConformance,
    ObjectDriverConformance,
    declared,
)
from agent_stores.testing.servers import Server
from mongodb_support import client_options, stand_in_divergences

# Expiry is filtered exactly on read (the driver's clock: the suite's fake one); the TTL monitor
# removes heads on its own about once a minute, by the server's clock.
LOG = declared(MongoDBBackend, "log_driver")
OBJECTS = declared(MongoDBBackend, "object_driver")


def _database(server: Server, prefix: str) -> MongoDBDatabase:
    return MongoDBDatabase.from_url(
        server.url, collections=CollectionNames.with_prefix(prefix), client_options=client_options()
    )


@pytest.mark.usefixtures("stand_in")
class TestMongoDBLogDriver(LogDriverConformance):
    capabilities = LOG
    fake_clock = True

    @property
    def divergences(self) -> dict[str, str]:  # pyright: ignore[reportIncompatibleVariableOverride]
        return stand_in_divergences({})

    @pytest.fixture
    def log_driver_factory(
        self, mongodb: Server, collection_prefix: str, clock: FakeClock
    ) -> Callable[[], MongoDBLogDriver]:
        return lambda: MongoDBLogDriver(_database(mongodb, collection_prefix), clock=clock)


# Clauses the nx-27017 stand-in cannot pass, and why (they run as strict xfail on it only).
OBJECTS_STAND_IN = {
    "test_large_payloads_round_trip": (
        "once a document holds a 4 MB binary value, nx-27017 fails every replace_one of it with "
        "'Object of type bytes is not JSON serializable' (code 8), from raw pymongo too; smaller "
        "binary values pass every other clause, and MongoDB stores binary up to its 16 MiB limit."
    ),
}


@pytest.mark.usefixtures("stand_in")
class TestMongoDBObjectDriver(ObjectDriverConformance):
    capabilities = OBJECTS

    @property
    def divergences(self) -> dict[str, str]:  # pyright: ignore[reportIncompatibleVariableOverride]
        return stand_in_divergences(OBJECTS_STAND_IN)

    @pytest.fixture
    def object_driver_factory(self, mongodb: Server, collection_prefix: str) -> Callable[[], MongoDBObjectDriver]:
        return lambda: MongoDBObjectDriver(_database(mongodb, collection_prefix))


class _Commands(monitoring.CommandListener):
    """Names each command the client sends (with its writes' count), in order."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, int]] = []

    def started(self, event: monitoring.CommandStartedEvent) -> None:
        writes = event.command.get("updates") or event.command.get("documents") or []
        self.sent.append((event.command_name, len(writes)))

    def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
        return None

    def failed(self, event: monitoring.CommandFailedEvent) -> None:
        return None


@pytest.mark.asyncio
@pytest.mark.usefixtures("stand_in")
async def test_put_in_order_is_one_ordered_update_command(mongodb: Server, collection_prefix: str) -> None:
    """A checkpoint's two writes (an ``if_absent`` create, then an unconditional write) are one command.

    Both are upserts, so pymongo sends one ``update`` command for them, ordered: the server
    stops at the create its unique ``_id`` refuses, leaving the writes before it only.
    """
    commands = _Commands()
    database = MongoDBDatabase.from_url(
        mongodb.url,
        collections=CollectionNames.with_prefix(collection_prefix),
        client_options={**client_options(), "event_listeners": [commands]},
    )
    driver = MongoDBObjectDriver(database)
    try:
        await driver.put("taken", b"old")
        commands.sent.clear()
        items = [OrderedPut("record", b"r", if_absent=True), OrderedPut("entry", b"e")]
        versions = await driver.put_in_order(items)
        assert commands.sent == [("update", 2)]
        assert [await driver.head(item.key) for item in items] == versions
        commands.sent.clear()
        with pytest.raises(StoreConflictError):
            await driver.put_in_order(
                [OrderedPut("before", b"1"), OrderedPut("taken", b"2", if_absent=True), OrderedPut("after", b"3")]
            )
        assert commands.sent == [("update", 3)]
        assert await driver.get("before") is not None
        assert await driver.get("after") is None
        taken = await driver.get("taken")
        assert taken is not None and taken.data == b"old"
    finally:
        await driver.aclose()
