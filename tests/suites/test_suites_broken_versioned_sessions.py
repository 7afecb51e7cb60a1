"""Deliberately broken versioned session stores: each must fail the compare-and-set clause that names its bug."""

from __future__ import annotations

import textwrap

import pytest

from suite_runs import failed_of

pytest_plugins = ["pytester"]

_HEADER = '''
import pytest
from agent_framework import AgentSession, SessionStore
from agent_stores.core import StoreConflictError, VersionedSession
from agent_stores.testing import SessionStoreCapabilities, SessionStoreConformance


class VersionedDictStore(SessionStore):
    """Correct apart from the bug a subclass adds: snapshots as dicts with a counter version."""

    def __init__(self):
        super().__init__()
        self.data = {}
        self.writes = 0

    def key(self, session_id):
        SessionStore.validate_session_id(session_id)
        return session_id

    async def get(self, session_id):
        found = await self.get_versioned(session_id)
        return None if found is None else found.session

    async def get_versioned(self, session_id):
        stored = self.data.get(self.key(session_id))
        return None if stored is None else VersionedSession(AgentSession.from_dict(stored[0]), stored[1])

    def check(self, key, if_version, if_absent):
        stored = self.data.get(key)
        if if_absent and stored is not None:
            raise StoreConflictError("exists")
        if if_version is not None and (stored is None or stored[1] != if_version):
            raise StoreConflictError("stale")

    async def set(self, session_id, session, *, if_version=None, if_absent=False):
        key = self.key(session_id)
        self.check(key, if_version, if_absent)
        self.writes += 1
        self.data[key] = (session.to_dict(), f"v{self.writes}")

    async def delete(self, session_id):
        self.data.pop(self.key(session_id), None)

    async def update(self, session_id, change):
        while True:
            current = await self.get_versioned(session_id)
            session = change(None if current is None else current.session)
            if not isinstance(session, AgentSession):
                session = await session
            try:
                if current is None:
                    await self.set(session_id, session, if_absent=True)
                else:
                    await self.set(session_id, session, if_version=current.version)
            except StoreConflictError:
                continue
            return session
'''

_CLASS = """

class TestBroken(SessionStoreConformance):
    capabilities = SessionStoreCapabilities(versioned=True)

    @pytest.fixture
    def session_store_factory(self):
        store = Store()
        return lambda: store
"""

_CLAUSES = [
    "test_versioned_get_tracks_writes",
    "test_stale_version_set_conflicts",
    "test_update_loses_no_concurrent_change",
    "test_update_creates_and_failed_change_writes_nothing",
]


def _failed(pytester: pytest.Pytester, store: str) -> set[str]:
    pytester.makepyfile(test_broken_store=_HEADER + textwrap.dedent(store) + _CLASS)
    return failed_of(pytester, _CLAUSES)


def test_correct_store_passes(pytester: pytest.Pytester) -> None:
    assert _failed(pytester, "Store = VersionedDictStore") == set()


def test_conditions_ignored_are_caught(pytester: pytest.Pytester) -> None:
    store = """
    class Store(VersionedDictStore):
        def check(self, key, if_version, if_absent):
            pass
    """
    assert _failed(pytester, store) == {"test_stale_version_set_conflicts", "test_update_loses_no_concurrent_change"}


def test_update_without_condition_is_caught(pytester: pytest.Pytester) -> None:
    store = """
    class Store(VersionedDictStore):
        async def update(self, session_id, change):
            current = await self.get(session_id)
            session = change(current)
            if not isinstance(session, AgentSession):
                session = await session
            await self.set(session_id, session)
            return session
    """
    assert _failed(pytester, store) == {"test_update_loses_no_concurrent_change"}


def test_version_that_never_changes_is_caught(pytester: pytest.Pytester) -> None:
    store = """
    class Store(VersionedDictStore):
        async def set(self, session_id, session, *, if_version=None, if_absent=False):
            key = self.key(session_id)
            self.check(key, if_version, if_absent)
            self.data[key] = (session.to_dict(), "v")
    """
    assert _failed(pytester, store) == {
        "test_versioned_get_tracks_writes",
        "test_stale_version_set_conflicts",
        "test_update_loses_no_concurrent_change",
    }


def test_update_writing_before_the_change_is_caught(pytester: pytest.Pytester) -> None:
    store = """
    class Store(VersionedDictStore):
        async def update(self, session_id, change):
            current = await self.get(session_id)
            await self.set(session_id, current or AgentSession(session_id=session_id))
            return await super().update(session_id, change)
    """
    assert _failed(pytester, store) == {"test_update_creates_and_failed_change_writes_nothing"}
