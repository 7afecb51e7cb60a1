"""The conformance suite runs in a project with no pytest configuration at all."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

_USER_TEST = """
import pytest
from agent_stores.core import ObjectSessionStore
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.testing import SessionStoreCapabilities, SessionStoreConformance


class TestMine(SessionStoreConformance):
    capabilities = SessionStoreCapabilities(durable=True)
    divergences = {"test_get_missing_returns_none": "deliberately declared to show a strict xfail"}

    @pytest.fixture
    def session_store_factory(self):
        driver = MemoryObjectDriver()

        async def open_store():
            return ObjectSessionStore(driver)

        return open_store
"""


def test_suite_runs_without_configuration(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=_USER_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "ignore::DeprecationWarning")
    result.stdout.fnmatch_lines(["agent-stores conformance suite*"])
    outcomes = result.parseoutcomes()
    # The declared divergence passes, so the strict xfail turns it into a failure: the registry is live.
    assert outcomes.get("failed") == 1
    assert outcomes.get("passed", 0) >= 10
    result.stdout.re_match_lines([r".*\[XPASS\(strict\)\] declared divergence: deliberately declared.*"])


def test_divergence_must_name_a_clause(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=_USER_TEST.replace("test_get_missing_returns_none", "test_no_such_clause"))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-k", "test_round_trip")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*divergences name clauses that do not exist*test_no_such_clause*"])
