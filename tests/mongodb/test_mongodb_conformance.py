"""The three conformance suites against the MongoDB stores, with every capability the suites know.

Every store a factory opens in one clause shares one database and one set of collections,
as separate processes do in production: that is how restarts, two instances and two processes
are checked. The server is ``$AGENT_STORES_MONGODB_URL``, testcontainers ``mongo:7``, or the
nx-27017 stand-in (NOT MongoDB); the run's summary names it. Clauses the stand-in cannot pass
are declared as its divergences, with the reason, and run as strict xfails only on the stand-in.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import pytest_asyncio
from pymongo import AsyncMongoClient

from agent_stores.mongodb import (
    CollectionNames,
    MongoDBAgentFileStore,
    MongoDBBackend,
    MongoDBDatabase,
    MongoDBHistoryProvider,
    MongoDBSessionStore,
)
from agent_stores.testing import (
    FakeClock,
    FileStoreConformance,
    HistoryProviderConformance,
    SessionStoreConformance,
    corrupt_object_session,
    declared,
)
from agent_stores.testing.servers import Server
from mongodb_support import client_options, stand_in_divergences

ALL_HISTORY = declared(MongoDBBackend, "history")

# Clauses the nx-27017 stand-in cannot pass, and why. Empty means it passes them all.
HISTORY_STAND_IN: dict[str, str] = {}
FILES_STAND_IN: dict[str, str] = {}
SESSIONS_STAND_IN: dict[str, str] = {}


def open_history(url: str, prefix: str, **options: Any) -> MongoDBHistoryProvider:
    """The ``history_process_factory`` spec: a provider owning its own client."""
    return MongoDBHistoryProvider.from_url(url, collection_prefix=prefix, client_options=client_options(), **options)


@pytest.mark.usefixtures("stand_in")
class TestMongoDBHistoryOwnedClients(HistoryProviderConformance):
    """Each provider owns its own client, as separate processes would."""

    capabilities = ALL_HISTORY
    fake_clock = True

    @property
    def divergences(self) -> dict[str, str]:  # pyright: ignore[reportIncompatibleVariableOverride]
        return stand_in_divergences(HISTORY_STAND_IN)

    @pytest.fixture
    def history_factory(
        self, mongodb: Server, collection_prefix: str, clock: FakeClock
    ) -> Callable[..., MongoDBHistoryProvider]:
        return lambda **options: open_history(mongodb.url, collection_prefix, clock=clock, **options)

    @pytest.fixture
    def history_process_factory(self, mongodb: Server, collection_prefix: str) -> tuple[str, dict[str, Any]]:
        return f"{__name__}:open_history", {"url": mongodb.url, "prefix": collection_prefix}


@pytest.mark.usefixtures("stand_in")
class TestMongoDBHistoryBorrowedClient(HistoryProviderConformance):
    """Providers borrowing the user's own ``AsyncMongoClient`` (never closed by them)."""

    capabilities = declared(MongoDBBackend, "history", multi_process=False)  # the class opens no second process
    fake_clock = True

    @property
    def divergences(self) -> dict[str, str]:  # pyright: ignore[reportIncompatibleVariableOverride]
        return stand_in_divergences(HISTORY_STAND_IN)

    # autouse: set up before the suite's async fixture resolves the (sync) factory below.
    @pytest_asyncio.fixture(autouse=True)
    async def client(self, mongodb: Server) -> AsyncIterator[AsyncMongoClient[dict[str, Any]]]:
        client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(mongodb.url, **client_options())
        yield client
        await client.close()

    @pytest.fixture
    def history_factory(
        self, client: AsyncMongoClient[dict[str, Any]], collection_prefix: str, clock: FakeClock
    ) -> Callable[..., MongoDBHistoryProvider]:
        database = MongoDBDatabase(client, collections=CollectionNames.with_prefix(collection_prefix))
        return lambda **options: MongoDBHistoryProvider(database, clock=clock, **options)


@pytest.mark.usefixtures("stand_in")
class TestMongoDBAgentFileStore(FileStoreConformance):
    capabilities = declared(MongoDBBackend, "files")

    @property
    def divergences(self) -> dict[str, str]:  # pyright: ignore[reportIncompatibleVariableOverride]
        return stand_in_divergences(FILES_STAND_IN)

    @pytest.fixture
    def file_store_factory(self, mongodb: Server, collection_prefix: str) -> Callable[..., MongoDBAgentFileStore]:
        return lambda **options: MongoDBAgentFileStore.from_url(
            mongodb.url, collection_prefix=collection_prefix, client_options=client_options(), **options
        )


@pytest.mark.usefixtures("stand_in")
class TestMongoDBSessionStore(SessionStoreConformance):
    capabilities = declared(MongoDBBackend, "sessions")

    @property
    def divergences(self) -> dict[str, str]:  # pyright: ignore[reportIncompatibleVariableOverride]
        return stand_in_divergences(SESSIONS_STAND_IN)

    @pytest.fixture
    def session_store_factory(self, mongodb: Server, collection_prefix: str) -> Callable[[], MongoDBSessionStore]:
        return lambda: MongoDBSessionStore.from_url(
            mongodb.url, collection_prefix=collection_prefix, client_options=client_options()
        )

    @pytest.fixture
    def corrupt_session(self) -> Any:
        return corrupt_object_session
