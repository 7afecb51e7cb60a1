"""The session store suite on a store: here SQLite's, on a new database file per clause.

Run with ``pytest test_session_store.py`` (``pip install "agent-stores-core[testing]" "agent-stores[sqlite]"``);
put your own store in the factory to prove it.
"""

import pytest

from agent_stores.sqlite import SQLiteSessionStore
from agent_stores.testing import SessionStoreCapabilities, SessionStoreConformance


class TestSQLiteSessions(SessionStoreConformance):
    """Every clause of the framework's ``SessionStore`` contract, on SQLite."""

    capabilities = SessionStoreCapabilities(durable=True)  # snapshots are serialised, as FileSessionStore's are

    @pytest.fixture
    def session_store_factory(self, tmp_path):
        """A new store on the clause's database file: each call is another connection to the same data."""
        url = f"sqlite:///{tmp_path / 'sessions.db'}"
        return lambda: SQLiteSessionStore.from_url(url)
