"""SQLite URLs name a file and take no user part: one holding a password is malformed and never shown."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from agent_stores.testing.urls import SECRET, StoreURLCapabilities, StoreURLConformance


class TestSQLiteURLs(StoreURLConformance):
    """No server, no credentials and no boolean option: only the malformed path applies."""

    capabilities = StoreURLCapabilities(malformed=True)

    @pytest.fixture
    def store_urls(self) -> Mapping[str, Sequence[str]]:
        return {
            "malformed": [
                f"sqlite://agent:{SECRET}@/agent.db",
                f"sqlite://agent:{SECRET}@localhost/agent.db",
                f"sqlite:///agent.db?password={SECRET}",
            ],
        }
