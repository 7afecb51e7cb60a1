"""``agent-stores check``: the conformance suites against a live store URL or a factory of your own store.

:func:`run_check` plans the suites (:mod:`.url` or :mod:`.factory`), runs them under pytest
(:mod:`.runner`) and returns the report (:mod:`.report`); ``docs/cli.md`` describes the command.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from agent_stores.core import redact_url

from .._errors import CliError
from .capabilities import CAPABILITY_TYPES, parse_capability_flags
from .factory import plan_factory
from .report import CheckReport, ClauseResult, print_report
from .runner import run_plan
from .url import PURGE_CLAUSES, plan_url

__all__ = ["CAPABILITY_TYPES", "CheckReport", "ClauseResult", "print_report", "run_check"]


def run_check(
    target: str,
    *,
    capability_flags: Sequence[str],
    suites: Sequence[str],
    clause_filter: str | None,
    allow_purge: bool,
    progress: Callable[[int, int, str], None],
) -> CheckReport:
    """Run ``check`` on a URL or ``module:attr``; a URL's scratch area is removed afterwards, whatever happened.

    Raises:
        CliError: Bad input or an unreachable store (exit 2).
    """
    report = CheckReport(target=redact_url(target) if "://" in target else target)
    overrides = parse_capability_flags(capability_flags)
    cleanup: Callable[[], Any] | None = None
    skip: set[tuple[str, str]] = set()
    if "://" in target:
        plan, cleanup = plan_url(target, overrides, suites, allow_purge=allow_purge, report=report)
        if not allow_purge:
            skip = set(PURGE_CLAUSES.items())
    else:
        if suites:
            raise CliError("--suite applies to a URL; a factory's suite is chosen by what it returns")
        plan = plan_factory(target, overrides, report)
    skip |= plan.skip
    try:
        code = run_plan(plan, report, clause_filter=clause_filter, progress=progress, skip=skip)
    finally:
        if cleanup is not None:
            try:
                report.cleanup = asyncio.run(cleanup())
            except Exception as err:
                report.cleanup = f"FAILED, remove {report.scratch!r} by hand: {type(err).__name__}: {err}"
    if code not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.NO_TESTS_COLLECTED):
        raise CliError(f"the conformance run stopped: pytest exit code {code}")
    if not any(r.outcome in ("passed", "failed", "divergent") for r in report.results):
        raise CliError("no clause ran (check --clause and --suite)")
    return report
