"""Deliberately broken session stores: each must fail the clause that names its bug."""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

_HEADER = '''
import pytest
from agent_framework import AgentSession, SessionStore
from agent_stores.testing import SessionStoreCapabilities, SessionStoreConformance


class DictStore(SessionStore):
    """Correct apart from the bug a subclass adds: snapshots as dicts, decoded on every get."""

    def __init__(self):
        super().__init__()
        self.data = {}

    def key(self, session_id):
        SessionStore.validate_session_id(session_id)
        return session_id

    async def get(self, session_id):
        payload = self.data.get(self.key(session_id))
        return None if payload is None else AgentSession.from_dict(payload)

    async def set(self, session_id, session):
        self.data[self.key(session_id)] = session.to_dict()

    async def delete(self, session_id):
        self.data.pop(self.key(session_id), None)
'''

_CLASS = """

class TestBroken(SessionStoreConformance):
    capabilities = SessionStoreCapabilities()

    @pytest.fixture
    def session_store_factory(self):
        store = Store()
        return lambda: store
"""


def run_clauses(pytester: pytest.Pytester, store: str, clauses: list[str]) -> dict[str, str]:
    """Run ``clauses`` against ``Store``; return ``{clause: outcome}``."""
    pytester.makepyfile(test_broken_store=_HEADER + textwrap.dedent(store) + _CLASS)
    recorder = pytester.inline_run(
        "-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function", "-k", " or ".join(clauses)
    )
    passed, skipped, failed = recorder.listoutcomes()
    outcomes = {r.nodeid.rsplit("::", 1)[-1].split("[")[0]: "passed" for r in passed}
    outcomes.update({r.nodeid.rsplit("::", 1)[-1].split("[")[0]: "failed" for r in failed})
    assert not skipped and set(outcomes) == set(clauses), outcomes
    return outcomes


def test_correct_store_passes(pytester: pytest.Pytester) -> None:
    clauses = ["test_get_returns_independent_copies", "test_adversarial_ids_are_distinct", "test_set_replaces"]
    assert set(run_clauses(pytester, "Store = DictStore", clauses).values()) == {"passed"}


def test_shared_not_copied_sessions_are_caught(pytester: pytest.Pytester) -> None:
    store = """
    class Store(DictStore):
        async def get(self, session_id):
            return self.data.get(self.key(session_id))

        async def set(self, session_id, session):
            self.data[self.key(session_id)] = session
    """
    outcomes = run_clauses(pytester, store, ["test_get_returns_independent_copies", "test_round_trip"])
    assert outcomes == {"test_get_returns_independent_copies": "failed", "test_round_trip": "passed"}


def test_case_folded_ids_are_caught(pytester: pytest.Pytester) -> None:
    store = """
    class Store(DictStore):
        def key(self, session_id):
            return super().key(session_id).lower()
    """
    outcomes = run_clauses(pytester, store, ["test_adversarial_ids_are_distinct", "test_round_trip"])
    assert outcomes == {"test_adversarial_ids_are_distinct": "failed", "test_round_trip": "passed"}


def test_merging_instead_of_replacing_is_caught(pytester: pytest.Pytester) -> None:
    store = """
    class Store(DictStore):
        async def set(self, session_id, session):
            old = self.data.get(self.key(session_id), {"state": {}})
            new = session.to_dict()
            new["state"] = {**old["state"], **new["state"]}
            self.data[self.key(session_id)] = new
    """
    outcomes = run_clauses(pytester, store, ["test_set_replaces", "test_round_trip"])
    assert outcomes == {"test_set_replaces": "failed", "test_round_trip": "passed"}


def test_lost_mapping_service_id_is_caught(pytester: pytest.Pytester) -> None:
    store = """
    class Store(DictStore):
        async def set(self, session_id, session):
            payload = session.to_dict()
            if not isinstance(payload["service_session_id"], str):
                payload["service_session_id"] = None
            self.data[self.key(session_id)] = payload
    """
    outcomes = run_clauses(pytester, store, ["test_service_session_id_mapping", "test_round_trip"])
    assert outcomes == {"test_service_session_id_mapping": "failed", "test_round_trip": "passed"}


def test_empty_id_accepted_is_caught(pytester: pytest.Pytester) -> None:
    store = """
    class Store(DictStore):
        def key(self, session_id):
            return str(session_id)
    """
    outcomes = run_clauses(pytester, store, ["test_invalid_ids_rejected", "test_round_trip"])
    assert outcomes == {"test_invalid_ids_rejected": "failed", "test_round_trip": "passed"}
