"""pytest plugin entry point (``pytest11``): makes the conformance suite usable with no configuration.

The conformance classes carry their own ``asyncio`` mark and fixtures; this module only
registers the marker the suite applies, gives each clause pytest-timeout's hard stop at its
class's ``time_limit`` plus a grace (unless the run sets a timeout of its own), reports which
agent-stores version ran, and lists the real servers the run used (see
:mod:`agent_stores.testing.servers`), also when pytest-xdist workers each started their own.
"""

from __future__ import annotations

import sys
from importlib.metadata import PackageNotFoundError, version
from typing import Any, cast

import pytest

_SERVERS_KEY = "agent_stores_servers"
_LOOP_SCOPE = "asyncio_default_fixture_loop_scope"


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Register the suite's marker so ``--strict-markers`` accepts it; default the async fixture loop scope."""
    config.addinivalue_line("markers", "agent_stores_conformance: a clause of the agent-stores conformance suite")
    # The suites' async fixtures live for one clause. A run without a setting of the user's says
    # so (before pytest-asyncio reads it), instead of pytest-asyncio warning on every run.
    try:
        unset = config.getini(_LOOP_SCOPE) is None
    except ValueError:  # pytest-asyncio is not installed
        return
    cache = getattr(config, "_inicache", None)
    if unset and isinstance(cache, dict):
        cast(dict[str, object], cache)[_LOOP_SCOPE] = "function"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each conformance clause ``timeout(time_limit + grace, func_only=True)`` for pytest-timeout.

    The clause's own ``asyncio`` time limit fails a clause that awaits too long; this hard stop
    interrupts one spinning in its own code. A timeout the run sets itself (``--timeout``,
    ``PYTEST_TIMEOUT``, the ``timeout`` ini option, a ``timeout`` marker) is left as it is.
    """
    base: Any = sys.modules.get(f"{__package__}._base")
    timeout_plugin: Any = config.pluginmanager.getplugin("timeout")
    if base is None or timeout_plugin is None:
        return  # no conformance class imported, or pytest-timeout absent / disabled (``-p no:timeout``)
    if timeout_plugin.get_env_settings(config).timeout is not None:
        return
    for item in items:
        owner: Any = getattr(item, "cls", None)
        if not (isinstance(owner, type) and issubclass(owner, base.ConformanceBase)):
            continue
        limit: object = getattr(owner, "time_limit", None)
        if item.get_closest_marker("timeout") is None and isinstance(limit, int | float) and limit > 0:
            item.add_marker(pytest.mark.timeout(float(limit) + base.HARD_STOP_GRACE_S, func_only=True))


def pytest_sessionfinish(session: pytest.Session) -> None:
    """On a pytest-xdist worker, hand the servers it used to the controller's summary."""
    from .servers import announced

    workeroutput: dict[str, object] | None = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[_SERVERS_KEY] = announced()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: object, error: object) -> None:
    """On the pytest-xdist controller, take the servers a finished worker used (each worker starts its own)."""
    from .servers import announce

    output: dict[str, object] = getattr(node, "workeroutput", {})
    worker = getattr(node, "workerinput", {}).get("workerid", "worker")
    lines = output.get(_SERVERS_KEY)
    if isinstance(lines, list):
        for line in cast(list[object], lines):
            announce(f"[{worker}] {line}")


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Say which real server (and through which path) each store of the run used."""
    from .servers import announced

    lines = announced()
    if lines:
        terminalreporter.section("agent-stores servers")
        for line in lines:
            terminalreporter.write_line(line)


def pytest_report_header(config: pytest.Config) -> str:
    """Name the suite version in the run's header."""
    try:
        return f"agent-stores conformance suite {version('agent-stores-core')}"
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "agent-stores conformance suite (source tree)"
