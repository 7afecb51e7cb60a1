"""pytest plugin entry point (``pytest11``): makes the conformance suite usable with no configuration.

The conformance classes carry their own ``asyncio`` mark and fixtures; this module only
registers the marker the suite applies and reports which agent-stores version ran.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

import pytest


def pytest_configure(config: pytest.Config) -> None:
    """Register the suite's marker so ``--strict-markers`` accepts it."""
    config.addinivalue_line("markers", "agent_stores_conformance: a clause of the agent-stores conformance suite")


def pytest_report_header(config: pytest.Config) -> str:
    """Name the suite version in the run's header."""
    try:
        return f"agent-stores conformance suite {version('agent-stores-core')}"
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "agent-stores conformance suite (source tree)"
