"""``agent-stores check``: the conformance suites against a live store URL or a factory of your own store.

A URL target runs every suite the backend offers, with the capabilities the backend declares
(``conformance_capabilities()`` on the backend ``open_stores`` builds), inside a scratch area
of its own: history under a fresh ``namespace``, files, sessions, checkpoints, todos and the
drivers under a fresh key prefix (or, for backends whose location is a path — ``file://``,
``s3://`` — in a fresh sub-folder of that path). Afterwards everything under the scratch area
is removed, and nothing outside it is ever written or deleted.

A ``module:attr`` target is a callable returning one store or driver of yours (sync or async),
over the same backing data on every call; the suite is chosen by what it returns.
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import inspect
import json
import os
import shutil
import sys
import tempfile
import traceback
import uuid
from collections.abc import Callable, Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import pytest
from agent_framework import AgentFileStore, HistoryProvider, SessionStore
from agent_framework._harness._todo import TodoStore

from agent_stores.core import (
    LogDriver,
    LogHistoryProvider,
    LogInfo,
    LogRecord,
    LogTail,
    LogVersion,
    ObjectDriver,
    ObjectLogDriver,
    PrefixedObjectDriver,
    Stores,
    open_stores,
    redact_url,
)
from agent_stores.testing import (
    OBJECT_LOG_DIVERGENCES,
    CheckpointStorageCapabilities,
    FileStoreCapabilities,
    HistoryCapabilities,
    LogDriverCapabilities,
    ObjectDriverCapabilities,
    SessionStoreCapabilities,
    TodoStoreCapabilities,
)

from . import _suites
from ._errors import CliError
from ._suites import CORRUPT_FIXTURES, GENERIC_CORRUPTERS, ClauseScope, Plan, SuitePlan

__all__ = ["CAPABILITY_TYPES", "CheckReport", "ClauseResult", "run_check"]

CAPABILITY_TYPES: dict[str, type[Any]] = {
    "history": HistoryCapabilities,
    "files": FileStoreCapabilities,
    "sessions": SessionStoreCapabilities,
    "checkpoints": CheckpointStorageCapabilities,
    "todos": TodoStoreCapabilities,
    "log_driver": LogDriverCapabilities,
    "object_driver": ObjectDriverCapabilities,
}

#: Clauses that act on the whole store, not only on what the check wrote: skipped on a live URL
#: unless ``--allow-purge`` (they remove already-expired data of every session).
PURGE_CLAUSES = {
    "history": "test_purge_expired_spares_live_sessions",
    "log_driver": "test_purge_expired_removes_only_expired_logs",
}

#: Seconds the first read of a URL may take before the store counts as unreachable.
REACH_TIMEOUT = 10.0

#: Backends whose location is a path: the scratch area is a sub-folder of the URL's path.
PATH_SCHEMES = ("file", "s3", "fsspec")


@dataclass
class ClauseResult:
    """The outcome of one clause."""

    suite: str
    clause: str
    outcome: str  # passed, failed, skipped, divergent, not-run
    explanation: str = ""
    message: str = ""
    details: str = ""


@dataclass
class CheckReport:
    """Everything ``check`` found, as printed and as ``--json``."""

    target: str
    suites: list[str] = field(default_factory=list[str])
    capabilities: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    results: list[ClauseResult] = field(default_factory=list[ClauseResult])
    scratch: str = ""
    cleanup: str = ""
    notes: list[str] = field(default_factory=list[str])

    def count(self, outcome: str) -> int:
        """How many clauses ended with ``outcome``."""
        return sum(1 for r in self.results if r.outcome == outcome)

    @property
    def ok(self) -> bool:
        """Every clause that ran passed (or failed as a declared divergence), and at least one ran."""
        return self.count("failed") == 0 and self.count("passed") > 0

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document."""
        return {
            "target": self.target,
            "ok": self.ok,
            "summary": {k: self.count(k) for k in ("passed", "failed", "skipped", "divergent", "not-run")},
            "suites": self.suites,
            "capabilities": self.capabilities,
            "scratch": self.scratch,
            "cleanup": self.cleanup,
            "notes": self.notes,
            "clauses": [dataclasses.asdict(r) for r in self.results],
        }


# -- capabilities -------------------------------------------------------------------------------


def parse_capability_flags(flags: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Parse ``--capability [SUITE.]NAME[=VALUE]`` flags; a bare name is ``true``, values are JSON.

    Raises:
        CliError: A flag names no capability of any suite.
    """
    parsed: dict[str, dict[str, Any]] = {}
    for flag in flags:
        name, _, raw = flag.partition("=")
        suite, _, capability = name.rpartition(".")
        try:
            value: Any = json.loads(raw) if raw else True
        except json.JSONDecodeError:
            value = raw
        suites = [suite] if suite else [s for s, t in CAPABILITY_TYPES.items() if capability in _fields(t)]
        if not suites or any(
            s not in CAPABILITY_TYPES or capability not in _fields(CAPABILITY_TYPES[s]) for s in suites
        ):
            known = sorted({f"{s}.{f}" for s, t in CAPABILITY_TYPES.items() for f in _fields(t)})
            raise CliError(f"unknown capability {flag!r}; known: {', '.join(known)}")
        for s in suites:
            parsed.setdefault(s, {})[capability] = value
    return parsed


def _fields(capability_type: type[Any]) -> set[str]:
    return {f.name for f in dataclasses.fields(capability_type)}


def make_capabilities(suite: str, declared: Any, overrides: dict[str, Any]) -> Any:
    """Build the suite's capabilities from a declaration (an instance, a mapping or nothing) and flags.

    Raises:
        CliError: The declaration names a field the suite does not have, or is of the wrong type.
    """
    capability_type = CAPABILITY_TYPES[suite]
    values: dict[str, Any]
    if isinstance(declared, capability_type):
        values = dataclasses.asdict(declared)
    elif isinstance(declared, dict):
        mapping: dict[Any, Any] = declared  # pyright: ignore[reportUnknownVariableType]
        values = {str(k): v for k, v in mapping.items()}
    elif declared is None:
        values = {}
    else:
        raise CliError(
            f"capabilities must be a {capability_type.__name__} or a dict for the {suite} suite, "
            f"got {type(declared).__name__}"
        )
    values.update(overrides)
    unknown = sorted(set(values) - _fields(capability_type))
    if unknown:
        raise CliError(f"{capability_type.__name__} has no field {', '.join(unknown)}")
    return capability_type(**values)


# -- targets ------------------------------------------------------------------------------------


def load_factory(spec: str) -> Callable[..., Any]:
    """Import ``module:attr`` (the current directory is importable) and return the callable.

    Raises:
        CliError: The module or attribute does not exist, or is not callable.
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise CliError(f"expected a store URL (scheme://...) or module:attr, got {spec!r}")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        raise CliError(f"cannot import {module_name!r}: {err}") from err
    target: Any = module
    for part in attr.split("."):
        try:
            target = getattr(target, part)
        except AttributeError as err:
            raise CliError(f"{module_name!r} has no attribute {attr!r}") from err
    if not callable(target):
        raise CliError(f"{spec} is a {type(target).__name__}, not a factory (a callable returning a store)")
    factory: Callable[..., Any] = target
    return factory


def suite_of(store: Any) -> str | None:
    """The suite for what a factory returned, or ``None`` when it is no store or driver we know."""
    if isinstance(store, HistoryProvider):
        return "history"
    if isinstance(store, AgentFileStore):
        return "files"
    if isinstance(store, SessionStore):
        return "sessions"
    if isinstance(store, TodoStore):
        return "todos"
    if all(callable(getattr(store, n, None)) for n in ("save", "load", "list_checkpoints", "get_latest")):
        return "checkpoints"
    if isinstance(store, LogDriver):
        return "log_driver"
    if isinstance(store, ObjectDriver):
        return "object_driver"
    return None


async def _call(factory: Callable[..., Any], **options: Any) -> Any:
    value = factory(**options)
    if inspect.isawaitable(value):
        value = await value
    return value


async def _close(store: Any) -> None:
    close = getattr(store, "aclose", None)
    if close is not None:
        result = close()
        if inspect.isawaitable(result):
            await result


async def _probe_factory(spec: str, factory: Callable[..., Any]) -> str:
    try:
        try:
            store = await _call(factory)
        except TypeError:
            if not _takes_source_id(factory):
                raise
            store = await _call(factory, source_id="agent-stores-check")  # a history factory needing it
    except Exception as err:
        raise CliError(f"the factory {spec} raised {type(err).__name__}: {err}") from err
    try:
        suite = suite_of(store)
    finally:
        await _close(store)
    if suite is None:
        raise CliError(
            f"{spec} returned a {type(store).__name__}: not a history provider, file store, session store, "
            "checkpoint storage, todo store, log driver or object driver"
        )
    return suite


def _takes_source_id(factory: Callable[..., Any]) -> bool:
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == "source_id" or p.kind is p.VAR_KEYWORD for p in parameters)


def plan_factory(spec: str, overrides: dict[str, dict[str, Any]], report: CheckReport) -> Plan:
    """Plan the suite for a ``module:attr`` factory.

    Raises:
        CliError: The factory cannot be imported, raises, or returns no known store.
    """
    factory = load_factory(spec)
    suite = asyncio.run(_probe_factory(spec, factory))
    capabilities = make_capabilities(suite, getattr(factory, "capabilities", None), overrides.get(suite, {}))
    divergences: dict[str, str] = dict(getattr(factory, "divergences", None) or {})
    fixtures: dict[str, Any] = {}
    if suite in CORRUPT_FIXTURES:
        helper = getattr(factory, CORRUPT_FIXTURES[suite], None) or getattr(factory, "corrupt", None)
        fixtures[CORRUPT_FIXTURES[suite]] = helper or GENERIC_CORRUPTERS[suite]
    process_factory = getattr(factory, "process_factory", None)
    if process_factory is not None:
        fixtures["history_process_factory"] = tuple(process_factory)
    elif suite == "history" and capabilities.multi_process:
        raise CliError(
            f"multi_process is declared for {spec}, so it needs a process_factory attribute: "
            '("module:function", {json kwargs}) opening a provider over the same data in a child process'
        )
    report.suites = [suite]
    report.capabilities = {suite: dataclasses.asdict(capabilities)}
    return Plan(
        url=None,
        suites=[SuitePlan(suite, lambda scope: factory, capabilities, divergences=divergences, fixtures=fixtures)],
    )


class RecordingLogDriver:
    """A log driver that notes every key appended to (so an expired log can be removed too), else transparent."""

    def __init__(self, driver: LogDriver, written: set[str]) -> None:
        self.driver = driver
        self.written = written

    def __getattr__(self, name: str) -> Any:
        return getattr(self.driver, name)

    async def tail(self, key: str, count: int) -> LogTail:
        return await self.driver.tail(key, count)

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        self.written.add(key)
        return await self.driver.append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        return await self.driver.read(key, last=last)

    async def length(self, key: str) -> int:
        return await self.driver.length(key)

    async def delete(self, key: str) -> bool:
        return await self.driver.delete(key)

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        return await self.driver.list_logs(prefix, after=after, limit=limit)

    async def purge_expired(self) -> int:
        return await self.driver.purge_expired()

    async def aclose(self) -> None:
        await self.driver.aclose()


#: Log keys the check appended to, by where they live: ``history`` (the providers' driver) and
#: ``logs`` (the backend's log driver). Expired logs are not listed, so they are deleted by key.
WRITTEN_LOGS: dict[str, set[str]] = {"history": set(), "logs": set()}


def _recording(provider: Any) -> Any:
    if isinstance(provider, LogHistoryProvider):
        provider.driver = RecordingLogDriver(provider.driver, WRITTEN_LOGS["history"])
    return provider


class PrefixedLogDriver:
    """A log driver whose keys all live under ``prefix`` of another (a scratch area); ``aclose`` is a no-op."""

    def __init__(self, driver: LogDriver, prefix: str) -> None:
        self.driver = driver
        self.prefix = prefix

    async def tail(self, key: str, count: int) -> LogTail:
        return await self.driver.tail(self.prefix + key, count)

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        WRITTEN_LOGS["logs"].add(self.prefix + key)
        return await self.driver.append(
            self.prefix + key, records, expected_version=expected_version, session_id=session_id, ttl=ttl
        )

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        return await self.driver.read(self.prefix + key, last=last)

    async def length(self, key: str) -> int:
        return await self.driver.length(self.prefix + key)

    async def delete(self, key: str) -> bool:
        return await self.driver.delete(self.prefix + key)

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        cut = len(self.prefix)
        logs = await self.driver.list_logs(
            self.prefix + prefix, after=None if after is None else self.prefix + after, limit=limit
        )
        return [LogInfo(log.key[cut:], log.session_id) for log in logs]

    async def purge_expired(self) -> int:
        return await self.driver.purge_expired()

    async def aclose(self) -> None:
        return None


def scratch_url(url: str, scratch: str) -> str:
    """``url`` with ``scratch`` appended to its path (``file:///srv/a`` -> ``file:///srv/a/<scratch>``)."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/") + "/" + scratch
    if parts.scheme.startswith("s3") and not parts.path.strip("/"):
        path = "/" + scratch
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, parts.fragment))


def _declared(stores: Stores) -> dict[str, dict[str, Any]]:
    declare = getattr(stores.backend, "conformance_capabilities", None)
    if declare is None:
        return {}
    declared: dict[str, dict[str, Any]] = declare()
    return declared


def _declared_divergences(stores: Stores) -> dict[str, dict[str, str]]:
    declare = getattr(stores.backend, "conformance_divergences", None)
    if declare is None:
        return {}
    declared: dict[str, dict[str, str]] = declare()
    return declared


def plan_url(
    url: str,
    overrides: dict[str, dict[str, Any]],
    selected: Sequence[str],
    *,
    allow_purge: bool,
    report: CheckReport,
) -> tuple[Plan, Callable[[], Any]]:
    """Plan the suites for a live store URL; return the plan and the cleanup coroutine function.

    Raises:
        CliError: The URL is malformed, its backend is not installed, or the store cannot be reached.
    """
    scratch = f"agent-stores-check-{uuid.uuid4().hex[:12]}"
    report.scratch = scratch
    try:
        probe = open_stores(url)
    except ValueError as err:
        raise CliError(str(err)) from err
    try:
        return _plan_open_url(url, probe, scratch, overrides, selected, allow_purge=allow_purge, report=report)
    finally:
        asyncio.run(probe.aclose())


def _plan_open_url(
    url: str,
    probe: Stores,
    scratch: str,
    overrides: dict[str, dict[str, Any]],
    selected: Sequence[str],
    *,
    allow_purge: bool,
    report: CheckReport,
) -> tuple[Plan, Callable[[], Any]]:
    shared = url.split("://", 1)[1].strip("/") == "" and url.split("://", 1)[0] in ("memory", "sqlite")
    scheme = url.split("://", 1)[0].split("+", 1)[0]
    by_path = scheme in PATH_SCHEMES
    target_url = scratch_url(url, scratch) if by_path else url
    if by_path:
        report.notes.append(f"scratch area: {redact_url(target_url)}")
    else:
        report.notes.append(f"scratch area: namespace and key prefix {scratch!r} in {redact_url(url)}")
    files_options: dict[str, Any] = {} if by_path else {"prefix": f"{scratch}/files/"}
    sessions_options: dict[str, Any] = {} if by_path else {"prefix": f"{scratch}/sessions/"}
    checkpoint_options: dict[str, Any] = {} if by_path else {"prefix": f"{scratch}/checkpoints/"}
    todo_options: dict[str, Any] = {} if by_path else {"prefix": f"{scratch}/todos/"}
    objects_prefix = "objects/" if by_path else f"{scratch}/objects/"
    logs_prefix = "logs/" if by_path else f"{scratch}/logs/"

    declared = _declared(probe)
    declared_divergences = _declared_divergences(probe)
    if not declared:
        report.notes.append(
            f"{type(probe.backend).__name__} declares no capabilities (conformance_capabilities()): "
            "checking the minimal contract; add --capability flags for more"
        )
    offers_drivers = callable(getattr(probe.backend, "object_driver", None)) and callable(
        getattr(probe.backend, "log_driver", None)
    )
    asyncio.run(_reach(probe, url, sessions_options))

    available = ["history", "files", "sessions"]
    if offers_drivers:
        available += ["checkpoints", "todos", "log_driver", "object_driver"]
    unknown = [s for s in selected if s not in _suites.SUITES]
    if unknown:
        raise CliError(f"unknown suite {', '.join(unknown)}; suites: {', '.join(_suites.SUITES)}")
    missing = [s for s in selected if s not in available]
    if missing:
        raise CliError(f"{redact_url(url)} offers no {', '.join(missing)} (its backend hands out no drivers)")
    suites = [s for s in available if not selected or s in selected]

    def history(scope: ClauseScope) -> Callable[..., Any]:
        def open_one(**options: Any) -> Any:
            return _recording(scope.stores().history_provider(namespace=scratch, **options))

        return open_one

    def files(scope: ClauseScope) -> Callable[..., Any]:
        def open_one(**options: Any) -> Any:
            return scope.stores().file_store(**files_options, **options)

        return open_one

    def sessions(scope: ClauseScope) -> Callable[..., Any]:
        def open_one(**options: Any) -> Any:
            return scope.stores().session_store(**sessions_options, **options)

        return open_one

    def checkpoints(scope: ClauseScope) -> Callable[..., Any]:
        def open_one(**options: Any) -> Any:
            return scope.stores().checkpoint_storage(**checkpoint_options, **options)

        return open_one

    def todos(scope: ClauseScope) -> Callable[..., Any]:
        def open_one(**options: Any) -> Any:
            return scope.stores().todo_store(**todo_options, **options)

        return open_one

    def log_driver(scope: ClauseScope) -> Callable[..., Any]:
        return lambda: PrefixedLogDriver(scope.stores().log_driver(), logs_prefix)

    def object_driver(scope: ClauseScope) -> Callable[..., Any]:
        return lambda: PrefixedObjectDriver(scope.stores().object_driver(), objects_prefix)

    openers: dict[str, Callable[[ClauseScope], Callable[..., Any]]] = {
        "history": history,
        "files": files,
        "sessions": sessions,
        "checkpoints": checkpoints,
        "todos": todos,
        "log_driver": log_driver,
        "object_driver": object_driver,
    }
    plan = Plan(url=target_url, shared=shared)
    for suite in suites:
        capabilities = make_capabilities(suite, declared.get(suite), overrides.get(suite, {}))
        fixtures: dict[str, Any] = {}
        divergences: dict[str, str] = dict(declared_divergences.get(suite, {}))
        if suite in CORRUPT_FIXTURES:
            fixtures[CORRUPT_FIXTURES[suite]] = GENERIC_CORRUPTERS[suite]
        if suite == "history" and capabilities.multi_process:
            fixtures["history_process_factory"] = (
                "agent_stores.cli._suites:history_from_url",
                {"url": target_url, "namespace": scratch},
            )
        if suite == "log_driver" and offers_drivers and isinstance(probe.log_driver(), ObjectLogDriver):
            divergences.update(OBJECT_LOG_DIVERGENCES)
        plan.suites.append(SuitePlan(suite, openers[suite], capabilities, divergences, fixtures))
        report.capabilities[suite] = dataclasses.asdict(capabilities)
    report.suites = suites

    async def cleanup() -> str:
        return await _cleanup(
            target_url,
            scratch,
            by_path=by_path,
            offers_drivers=offers_drivers,
            files_options=files_options,
            sessions_options=sessions_options,
        )

    if not allow_purge:
        for suite, clause in PURGE_CLAUSES.items():
            if suite in suites:
                report.results.append(
                    ClauseResult(
                        suite,
                        clause,
                        "not-run",
                        explanation="purge_expired() acts on every session of the store, not only on the "
                        "check's own data; run with --allow-purge to include it",
                    )
                )
    return plan, cleanup


async def _reach(stores: Stores, url: str, sessions_options: dict[str, Any]) -> None:
    """One read in the scratch area, so an unreachable store is a one-line error before any clause runs."""
    store = stores.session_store(**sessions_options)
    try:
        async with asyncio.timeout(REACH_TIMEOUT):
            await store.get("agent-stores-check-probe")
    except TimeoutError as err:
        raise CliError(f"cannot reach {redact_url(url)}: no answer within {REACH_TIMEOUT:g} s") from err
    except Exception as err:
        raise CliError(f"cannot reach {redact_url(url)}: {type(err).__name__}: {err}") from err
    finally:
        await _close(store)
        await stores.aclose()  # in this event loop: a client bound to it cannot be closed from another


async def sweep_objects(driver: ObjectDriver, prefix: str) -> int:
    """Delete every object whose key starts with ``prefix``; return how many."""
    removed = 0
    while True:
        listing = await driver.list(prefix, delimiter=None, limit=500)
        if not listing.keys:
            return removed
        deleted = 0
        for key in listing.keys:
            deleted += bool(await driver.delete(key))
        removed += deleted
        if not deleted:
            return removed


async def sweep_logs(driver: LogDriver, prefix: str) -> int:
    """Delete every log whose key starts with ``prefix``; return how many."""
    removed = 0
    while True:
        logs = await driver.list_logs(prefix, limit=500)
        if not logs:
            return removed
        deleted = 0
        for log in logs:
            deleted += bool(await driver.delete(log.key))
        removed += deleted
        if not deleted:
            return removed


async def _delete_logs(driver: LogDriver, keys: set[str]) -> int:
    """Delete the logs at ``keys`` (expired ones included); keys a clause tried and the driver refused are skipped."""
    removed = 0
    for key in sorted(keys):
        try:
            removed += bool(await driver.delete(key))
        except ValueError:
            continue
    return removed


async def _cleanup(
    url: str,
    scratch: str,
    *,
    by_path: bool,
    offers_drivers: bool,
    files_options: dict[str, Any],
    sessions_options: dict[str, Any],
) -> str:
    """Remove everything the check wrote: its namespace, prefixes, or scratch folder."""
    removed = 0
    async with open_stores(url) as stores:
        provider = stores.history_provider(namespace=scratch)
        if isinstance(provider, LogHistoryProvider):
            removed += await sweep_logs(provider.driver, provider.keys.root + "/")
        for store in (stores.file_store(**files_options), stores.session_store(**sessions_options)):
            driver = getattr(store, "driver", None)
            prefix = getattr(store, "prefix", None)
            if isinstance(driver, ObjectDriver) and isinstance(prefix, str):
                removed += await sweep_objects(driver, prefix)
            await _close(store)
        if isinstance(provider, LogHistoryProvider):
            removed += await _delete_logs(provider.driver, WRITTEN_LOGS["history"])
        if offers_drivers:
            removed += await _delete_logs(stores.log_driver(), WRITTEN_LOGS["logs"])
            removed += await sweep_logs(stores.log_driver(), "" if by_path else f"{scratch}/")
            removed += await sweep_objects(stores.object_driver(), "" if by_path else f"{scratch}/")
        await _close(provider)
    parts = urlsplit(url)
    if parts.scheme == "file" and Path(unquote(parts.path)).name == scratch:
        shutil.rmtree(unquote(parts.path), ignore_errors=True)
    return f"removed {removed} records the check wrote"


# -- running pytest -----------------------------------------------------------------------------

_MODULE = """\
# Generated by `agent-stores check`: the conformance classes of this run.
from agent_stores.cli._suites import build_classes as _build

globals().update(_build())
"""

_INI = """\
[pytest]
asyncio_mode = strict
asyncio_default_fixture_loop_scope = function
filterwarnings =
    ignore::agent_framework._feature_stage.ExperimentalWarning
"""


class _Collector:
    """A pytest plugin recording each clause's outcome and reporting progress."""

    def __init__(self, report: CheckReport, skip: set[tuple[str, str]], progress: Callable[[int, int, str], None]):
        self.report = report
        self.skip = skip
        self.progress = progress
        self.total = 0
        self.done = 0
        self.docs: dict[str, str] = {}
        self.by_node: dict[str, ClauseResult] = {}

    @staticmethod
    def _suite(item_or_report: Any) -> str:
        nodeid: str = item_or_report.nodeid
        return nodeid.split("::")[1].removeprefix("Test_") if "::" in nodeid else ""

    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        del config
        kept: list[pytest.Item] = []
        for item in items:
            name = getattr(item, "originalname", item.name)
            if (self._suite(item), name) in self.skip:
                continue
            kept.append(item)
            function = getattr(item, "function", None)
            self.docs[item.nodeid] = inspect.getdoc(function) or ""
        items[:] = kept
        self.total = len(kept)
        self.progress(0, self.total, "")

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        nodeid = report.nodeid
        clause = nodeid.rsplit("::", 1)[-1]
        result = self.by_node.get(nodeid)
        if result is None:
            result = ClauseResult(self._suite(report), clause, "passed", explanation=self.docs.get(nodeid, ""))
            self.by_node[nodeid] = result
            self.report.results.append(result)
        if hasattr(report, "wasxfail"):
            if report.skipped:
                result.outcome = "divergent"
                result.message = str(getattr(report, "wasxfail", ""))
            return
        if report.failed:
            result.outcome = "failed"
            crash = getattr(report.longrepr, "reprcrash", None)
            message = getattr(crash, "message", None)
            last_lines = report.longreprtext.strip().splitlines()[-1:] or [""]
            result.message = str(message) if message else last_lines[0]
            result.details = report.longreprtext
            if report.when == "teardown":
                result.message = f"after the clause: {result.message}"
        elif report.skipped and report.when == "setup":
            result.outcome = "skipped"
            longrepr = report.longrepr
            result.message = str(longrepr[2]) if isinstance(longrepr, tuple) else str(longrepr)
        if report.when == "teardown":
            self.done += 1
            self.progress(self.done, self.total, clause)


@contextmanager
def _quiet_streams() -> Generator[None]:
    """Keep pytest's own output out of the report (the progress bar and report go to the console)."""
    with open(os.devnull, "w") as devnull:
        saved = sys.stdout
        sys.stdout = devnull
        try:
            yield
        finally:
            sys.stdout = saved


def run_plan(
    plan: Plan,
    report: CheckReport,
    *,
    clause_filter: str | None,
    progress: Callable[[int, int, str], None],
    skip: set[tuple[str, str]],
) -> int:
    """Run the planned suites under pytest in this process; return pytest's exit code."""
    from hypothesis import settings

    # No example database in the user's working directory.
    settings.register_profile("agent-stores-check", settings.get_profile("default"), database=None)
    settings.load_profile("agent-stores-check")
    _suites.PLAN = plan
    collector = _Collector(report, skip, progress)
    with tempfile.TemporaryDirectory(prefix="agent-stores-check-") as folder:
        module = Path(folder) / "test_agent_stores_check.py"
        module.write_text(_MODULE)
        ini = Path(folder) / "pytest.ini"
        ini.write_text(_INI)
        args = [str(module), "-c", str(ini), "--rootdir", folder, "-p", "no:cacheprovider", "-q", "-p", "no:randomly"]
        if clause_filter:
            args += ["-k", clause_filter]
        # The user's PYTEST_ADDOPTS (e.g. ``-n auto`` in their CI) is meant for their own runs:
        # clauses run here, in this process, where the collector sees them.
        saved_addopts = os.environ.pop("PYTEST_ADDOPTS", None)
        try:
            with _quiet_streams():
                code = pytest.main(args, plugins=[collector])
        finally:
            if saved_addopts is not None:
                os.environ["PYTEST_ADDOPTS"] = saved_addopts
    sys.modules.pop("test_agent_stores_check", None)
    return int(code)


def run_check(
    target: str,
    *,
    capability_flags: Sequence[str],
    suites: Sequence[str],
    clause_filter: str | None,
    allow_purge: bool,
    progress: Callable[[int, int, str], None],
) -> CheckReport:
    """Run ``check`` on a URL or ``module:attr``.

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


def format_traceback(err: BaseException) -> str:
    """The traceback ``--verbose`` prints."""
    return "".join(traceback.format_exception(err))
