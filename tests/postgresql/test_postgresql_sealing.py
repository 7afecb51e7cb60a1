"""The encryption clause set on PostgreSQL: sealed stores in a database of the test's own."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agent_stores.core import Stores, open_stores
from agent_stores.core.sealing import KeyProvider
from agent_stores.testing import SealingCapabilities, SealingConformance


class TestSealedPostgreSQL(SealingConformance):
    capabilities = SealingCapabilities()

    @pytest.fixture
    def sealed_stores_factory(self, postgresql_url: str) -> Callable[[KeyProvider | bool], Stores]:
        return lambda provider: open_stores(postgresql_url, encryption=provider)
