"""Hostile input and tenant isolation on Redis: hash tags, Lua and glob bytes in every id."""

from __future__ import annotations

import pytest

from agent_stores.core import open_stores
from agent_stores.testing.hostile import HostileInputSuite, TenantStores
from agent_stores.testing.servers import Server


class TestRedisHostile(HostileInputSuite):
    default_examples = 100  # AGENT_STORES_HEAVY=1 runs 5,000

    @pytest.fixture
    def tenant_stores(self, redis_single: Server, key_prefix: str) -> TenantStores:
        return lambda tenant: (open_stores(redis_single.url, key_prefix=key_prefix), {"prefix": f"{tenant}/"})
