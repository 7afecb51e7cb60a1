"""Hostile input and tenant isolation on PostgreSQL: SQL, ``LIKE`` and collation bytes in every id."""

from __future__ import annotations

import pytest

from agent_stores.core import open_stores
from agent_stores.testing.hostile import HostileInputSuite, TenantStores


class TestPostgreSQLHostile(HostileInputSuite):
    default_examples = 100  # AGENT_STORES_HEAVY=1 runs 5,000

    @pytest.fixture
    def tenant_stores(self, postgresql_url: str) -> TenantStores:
        return lambda tenant: (open_stores(postgresql_url), {"prefix": f"{tenant}/"})
