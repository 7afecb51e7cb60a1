"""Every clause runs under its class's time limit, with no pytest configuration.

The suites' own hangs are covered in ``test_suites_broken_drivers.py``; here the limit itself:
it applies to the store suites too, counts across the examples of a property clause, reports
what the clause waited for, is validated, and leaves a timeout the user sets to pytest-timeout.
The projects below have no pytest configuration at all (pytest-asyncio strict mode).
"""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

_PROJECT = """
import asyncio

import pytest
from agent_stores.core import ObjectSessionStore
from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver
from agent_stores.testing import (
    LogDriverCapabilities,
    LogDriverConformance,
    ObjectDriverConformance,
    SessionStoreConformance,
)


class SlowPuts(MemoryObjectDriver):
    async def put(self, key, data, **conditions):
        await asyncio.sleep(0.1)
        return await super().put(key, data, **conditions)


class NeverAnswers(MemoryObjectDriver):
    async def get(self, key):
        await asyncio.Event().wait()


class LosesTheCancellation(MemoryObjectDriver):
    async def get(self, key):
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            raise RuntimeError("connection lost") from None


class SwallowsTheCancellation(MemoryObjectDriver):
    async def get(self, key):
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            return None


class TestLogDriver(LogDriverConformance):
    capabilities = LogDriverCapabilities(concurrent_instances=True)

    @pytest.fixture
    def log_driver_factory(self):
        driver = MemoryLogDriver()
        return lambda: driver


class TestSlowObjectDriver(ObjectDriverConformance):
    # Two puts (0.2 s) pass well inside the limit on a busy machine; the property clause's 25 or
    # more puts (2.5 s at least: 10 in its explicit examples, one or more in each of 15 more) cannot.
    time_limit = 1.5

    @pytest.fixture
    def object_driver_factory(self):
        driver = SlowPuts()
        return lambda: driver


class TestHangingSessions(SessionStoreConformance):
    time_limit = 0.5

    @pytest.fixture
    def session_store_factory(self):
        return lambda: ObjectSessionStore(NeverAnswers())


class TestErrorOnCancel(SessionStoreConformance):
    time_limit = 0.5

    @pytest.fixture
    def session_store_factory(self):
        return lambda: ObjectSessionStore(LosesTheCancellation())


class TestSwallowedCancel(SessionStoreConformance):
    time_limit = 0.5

    @pytest.fixture
    def session_store_factory(self):
        return lambda: ObjectSessionStore(SwallowsTheCancellation())


class TestBadLimit(SessionStoreConformance):
    time_limit = 0

    @pytest.fixture
    def session_store_factory(self):
        return lambda: ObjectSessionStore(MemoryObjectDriver())
"""


def test_time_limits_in_a_project_without_configuration(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_user=_PROJECT)
    result = pytester.runpytest_subprocess(
        "-p",
        "no:cacheprovider",
        "-W",
        "ignore::DeprecationWarning",
        "-k",
        "TestLogDriver or test_list_matches_the_specification or test_large_payloads_round_trip "
        "or test_get_missing_returns_none",
    )
    result.stdout.fnmatch_lines(["agent-stores conformance suite*"])
    failed = sorted(line.split(" ")[1] for line in result.outlines if line.startswith(("FAILED", "ERROR")))
    # The driver suite passes; a clause well inside its limit passes; the rest fail by their limits.
    assert failed == [
        "test_user.py::TestBadLimit::test_get_missing_returns_none",
        "test_user.py::TestErrorOnCancel::test_get_missing_returns_none",
        "test_user.py::TestHangingSessions::test_get_missing_returns_none",
        "test_user.py::TestSlowObjectDriver::test_list_matches_the_specification",
        "test_user.py::TestSwallowedCancel::test_get_missing_returns_none",
    ], result.stdout.str()[-3000:]
    assert result.parseoutcomes().get("passed", 0) >= 20

    # A store-suite clause names itself, its class's limit, and what it awaited.
    result.stdout.fnmatch_lines(
        [
            "*test_get_missing_returns_none did not finish within its time limit of 0.5 s "
            "(TestHangingSessions.time_limit; raise it on the class for a slow store)*",
            "the clause:",
            "*in get: await asyncio.Event().wait()",
        ]
    )
    # A property clause's limit covers all its examples (each short, together too long); it fails
    # once, without hypothesis shrinking through examples that would all fail the same way.
    result.stdout.fnmatch_lines(
        [
            "*ClauseTimeLimitError: test_list_matches_the_specification did not finish within its time limit of 1.5 s*",
            "*in put: await asyncio.sleep(0.1)",
        ]
    )
    # A store that turns the cancellation into an error, or swallows it and answers late, still fails by its limit.
    result.stdout.fnmatch_lines(
        ["*TestErrorOnCancel.time_limit*", "*(when cancelled, the clause raised RuntimeError: connection lost)"]
    )
    result.stdout.fnmatch_lines(
        ["*TestSwallowedCancel.time_limit*", "*(the clause swallowed the cancellation and finished late)"]
    )
    result.stdout.fnmatch_lines(["*time_limit must be a positive number of seconds, got 0*"])


_SPINNING = """
import time

import pytest
from agent_stores.core.memory import MemoryLogDriver
from agent_stores.testing import LogDriverCapabilities, LogDriverConformance


class LengthSpins(MemoryLogDriver):
    async def length(self, key):
        while True:
            time.sleep(0.001)


class TestSpinning(LogDriverConformance):
    capabilities = LogDriverCapabilities()
    time_limit = 30

    @pytest.fixture
    def log_driver_factory(self):
        driver = LengthSpins()
        return lambda: driver
"""


def test_the_users_own_timeout_wins_over_the_hard_stop(pytester: pytest.Pytester) -> None:
    # The clause's hard stop would come at 32 s (time_limit + grace); the run's --timeout comes first.
    pytester.makepyfile(test_user=_SPINNING)
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--timeout=1", "-k", "test_append_creates_the_log_at_the_version_it_returns"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*Timeout (>1.0s) from pytest-timeout*"])
