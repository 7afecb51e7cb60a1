"""Prove the dict backend correct: both driver suites, then the three store suites over the core's adapters.

Run with ``uv run pytest examples/write_your_own_backend``. Each factory returns a new driver
(or store) over the same server, as a new connection to a real server would be; a store made
with ``owns_driver=True`` closes its driver (its connection pool) when the suite closes the store.
"""

import pytest
from dict_backend import DictLogDriver, DictObjectDriver, DictServer

from agent_stores.core import LogHistoryProvider, ObjectAgentFileStore, ObjectSessionStore
from agent_stores.testing import (
    FileStoreCapabilities,
    FileStoreConformance,
    HistoryCapabilities,
    HistoryProviderConformance,
    LogDriverCapabilities,
    LogDriverConformance,
    ObjectDriverCapabilities,
    ObjectDriverConformance,
    SessionStoreCapabilities,
    SessionStoreConformance,
)


@pytest.fixture
def server():
    """One backing store per clause."""
    return DictServer()


class TestDictLogDriver(LogDriverConformance):
    """The log driver keeps every promise of ``drivers.py``."""

    capabilities = LogDriverCapabilities(ttl=True, concurrent_instances=True)
    fake_clock = True  # the drivers below read the clause's fake clock: expiry is checked without waiting

    @pytest.fixture
    def log_driver_factory(self, server, clock):
        """A new driver over the clause's server."""
        return lambda: DictLogDriver(server, clock=clock)


class TestDictObjectDriver(ObjectDriverConformance):
    """The object driver keeps every promise of ``drivers.py``."""

    capabilities = ObjectDriverCapabilities(
        atomic_create_across_instances=True,
        atomic_if_version_across_instances=True,
        max_key_bytes=8_192,  # a dict holds keys of any length; a driver keeping S3's 1,024 bytes omits it
    )

    @pytest.fixture
    def object_driver_factory(self, server):
        """A new driver over the clause's server."""
        return lambda: DictObjectDriver(server)


class TestDictHistory(HistoryProviderConformance):
    """The history provider the backend hands out (the core's adapter over the log driver)."""

    capabilities = HistoryCapabilities(
        windowed_load=True, skip_excluded=True, concurrent_instances=True, admin=True, ttl=True, corruptible=True
    )
    fake_clock = True

    @pytest.fixture
    def history_factory(self, server, clock):
        """A new provider over the clause's server; the suite passes source_id and options."""
        return lambda **options: LogHistoryProvider(DictLogDriver(server, clock=clock), owns_driver=True, **options)


class TestDictFiles(FileStoreConformance):
    """The harness file store: exact keys (case sensitive), directories exist only as prefixes."""

    # long_names: paths of about 4,000 bytes, which only a driver declaring max_key_bytes past them holds.
    capabilities = FileStoreCapabilities(case_sensitive=True, atomic_create_across_instances=True, long_names=True)

    @pytest.fixture
    def file_store_factory(self, server):
        """A new file store over the clause's server."""
        return lambda **options: ObjectAgentFileStore(DictObjectDriver(server), owns_driver=True, **options)


class TestDictSessions(SessionStoreConformance):
    """Session snapshots, serialised by the core."""

    capabilities = SessionStoreCapabilities(durable=True)

    @pytest.fixture
    def session_store_factory(self, server):
        """A new session store over the clause's server."""
        return lambda: ObjectSessionStore(DictObjectDriver(server), owns_driver=True)
