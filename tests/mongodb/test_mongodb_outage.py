"""The outage clauses against the MongoDB stores, through a proxy the test cuts.

Each store owns its client, connected directly to the proxy's address (no replica-set discovery
around it) with 0.5 s server selection, connect and socket timeouts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agent_stores.mongodb import MongoDBAgentFileStore, MongoDBHistoryProvider, MongoDBSessionStore
from agent_stores.testing.outage import OutageCapabilities, OutageConformance, OutageProxy
from agent_stores.testing.servers import Server

TIMEOUTS: dict[str, Any] = {
    "directConnection": True,
    "serverSelectionTimeoutMS": 500,
    "connectTimeoutMS": 500,
    "socketTimeoutMS": 500,
}


@pytest.mark.usefixtures("stand_in")
class TestMongoDBOutages(OutageConformance):
    capabilities = OutageCapabilities(history=True, files=True, sessions=True)
    unavailable_within = 10.0

    @pytest.fixture
    def outage(self, mongodb: Server) -> Iterator[OutageProxy]:
        with OutageProxy.for_url(mongodb.url, default_port=27017) as proxy:
            yield proxy

    @pytest.fixture
    def url(self, mongodb: Server, outage: OutageProxy) -> str:
        return outage.url(mongodb.url)

    @pytest.fixture
    def history_factory(self, url: str, collection_prefix: str) -> Callable[..., MongoDBHistoryProvider]:
        return lambda **options: MongoDBHistoryProvider.from_url(
            url, collection_prefix=collection_prefix, client_options=dict(TIMEOUTS), **options
        )

    @pytest.fixture
    def file_store_factory(self, url: str, collection_prefix: str) -> Callable[..., MongoDBAgentFileStore]:
        return lambda **options: MongoDBAgentFileStore.from_url(
            url, collection_prefix=collection_prefix, client_options=dict(TIMEOUTS), **options
        )

    @pytest.fixture
    def session_store_factory(self, url: str, collection_prefix: str) -> Callable[[], MongoDBSessionStore]:
        return lambda: MongoDBSessionStore.from_url(
            url, collection_prefix=collection_prefix, client_options=dict(TIMEOUTS)
        )
