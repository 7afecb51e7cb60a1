"""Running chosen clauses of a generated conformance module in process, for the broken-store tests."""

from __future__ import annotations

from collections.abc import Sequence

import pytest


def failed_of(pytester: pytest.Pytester, clauses: Sequence[str]) -> set[str]:
    """Run ``clauses`` of the module ``pytester`` holds; return the names of those that failed (all must run)."""
    recorder = pytester.inline_run(
        "-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function", "-k", " or ".join(clauses)
    )
    passed, skipped, failed = recorder.listoutcomes()
    assert not skipped, [r.nodeid for r in skipped]
    ran = {r.nodeid.rsplit("::", 1)[-1] for r in (*passed, *failed)}
    assert ran == set(clauses), f"expected to run {sorted(clauses)}, ran {sorted(ran)}"
    return {r.nodeid.rsplit("::", 1)[-1] for r in failed}
