"""Hostile input and tenant isolation on MongoDB: operator shapes and dotted names in every id."""

from __future__ import annotations

import pytest

from agent_stores.core import open_stores
from agent_stores.testing.hostile import HostileInputSuite, TenantStores
from agent_stores.testing.servers import Server
from mongodb_support import client_options


class TestMongoDBHostile(HostileInputSuite):
    default_examples = 50  # AGENT_STORES_HEAVY=1 runs 5,000

    @pytest.fixture
    def tenant_stores(self, mongodb: Server, collection_prefix: str) -> TenantStores:
        return lambda tenant: (
            open_stores(mongodb.url, collection_prefix=collection_prefix, client_options=client_options()),
            {"prefix": f"{tenant}/"},
        )
