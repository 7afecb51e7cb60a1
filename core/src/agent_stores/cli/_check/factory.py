"""A ``module:attr`` target: importing the factory, telling its suite by what it returns, and planning that suite."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

from agent_framework import AgentFileStore, HistoryProvider, SessionStore
from agent_framework._harness._todo import TodoStore

from agent_stores.core import LogDriver, ObjectDriver
from agent_stores.core.sealing import Keyring, SealedStores

from .._errors import CliError
from .capabilities import factory_declarations, make_capabilities
from .plan import CORRUPT_FIXTURES, GENERIC_CORRUPTERS, Plan, SuitePlan, close_store
from .report import CheckReport
from .sealing import SUITE as SEALING
from .sealing import plan_sealed_factory, takes_provider

__all__ = ["load_factory", "plan_factory", "suite_of"]


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
        hint = ""
        missing = err.name if isinstance(err, ModuleNotFoundError) else None
        if missing is not None and (module_name + ".").startswith(missing + "."):  # the module itself, no dependency
            hint = (
                f"; modules are found in the current directory ({os.getcwd()}) and on PYTHONPATH: run the "
                f"check from the folder holding {missing.split('.')[0]!r}, or add that folder to PYTHONPATH"
            )
        raise CliError(f"cannot import {module_name!r}: {err}{hint}") from err
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


async def _probe_factory(spec: str, factory: Callable[..., Any]) -> str:
    try:
        try:
            if takes_provider(factory):  # sealed stores for a key provider
                store = await _call(factory, provider=Keyring.generate())
            else:
                store = await _call(factory)
        except TypeError:
            if not _takes_source_id(factory):
                raise
            store = await _call(factory, source_id="agent-stores-check")  # a history factory needing it
    except Exception as err:
        raise CliError(f"the factory {spec} raised {type(err).__name__}: {err}") from err
    try:
        suite = SEALING if isinstance(store, SealedStores) else suite_of(store)
    finally:
        await close_store(store)
    if suite is None:
        raise CliError(
            f"{spec} returned a {type(store).__name__}: not a history provider, file store, session store, "
            "checkpoint storage, todo store, log driver, object driver or (given a provider) sealed stores"
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
    declared, divergences = factory_declarations(factory)
    if suite == SEALING:
        sealing = plan_sealed_factory(factory)
        sealing.divergences = divergences
        report.suites = [suite]
        report.capabilities = {suite: dataclasses.asdict(sealing.capabilities)}
        return Plan(url=None, suites=[sealing])
    capabilities = make_capabilities(suite, declared, overrides.get(suite, {}))
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
