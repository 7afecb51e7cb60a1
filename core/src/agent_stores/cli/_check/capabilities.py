"""The capabilities and divergences ``check`` runs each suite with: what a target declares, then ``--capability`` flags.

Every way ``check`` learns what a store declares is in this module: a backend's
``conformance_capabilities()`` / ``conformance_divergences()``, a factory's ``capabilities`` /
``divergences`` attributes, and the object log's own divergences for a log driver built on it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Sequence
from typing import Any

from agent_stores.core import ObjectLogDriver, Stores
from agent_stores.testing import CAPABILITY_TYPES, OBJECT_LOG_DIVERGENCES

from .._errors import CliError

__all__ = [
    "CAPABILITY_TYPES",
    "backend_declarations",
    "backend_divergences",
    "factory_declarations",
    "make_capabilities",
    "parse_capability_flags",
]


def backend_declarations(stores: Stores) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """What the backend behind ``stores`` declares: capabilities and divergences per suite (empty when none)."""
    capabilities: dict[str, Any] = {}
    divergences: dict[str, dict[str, str]] = {}
    declare_capabilities = getattr(stores.backend, "conformance_capabilities", None)
    if declare_capabilities is not None:
        capabilities = declare_capabilities()
    declare_divergences = getattr(stores.backend, "conformance_divergences", None)
    if declare_divergences is not None:
        divergences = declare_divergences()
    return capabilities, divergences


def backend_divergences(stores: Stores, suite: str, declared: dict[str, dict[str, str]]) -> dict[str, str]:
    """A suite's divergences on a URL: the backend's own, and the object log's when its log driver is one."""
    divergences = dict(declared.get(suite, {}))
    under = getattr(stores, "raw_logs", None) or stores.log_driver()  # a sealed store's log driver wraps the backend's
    if suite == "log_driver" and isinstance(under, ObjectLogDriver):
        divergences.update(OBJECT_LOG_DIVERGENCES)
    return divergences


def factory_declarations(factory: Callable[..., Any]) -> tuple[Any, dict[str, str]]:
    """What a ``module:attr`` factory declares: its ``capabilities`` attribute (or ``None``) and ``divergences``."""
    return getattr(factory, "capabilities", None), dict(getattr(factory, "divergences", None) or {})


def parse_capability_flags(flags: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Parse ``--capability [SUITE.]NAME[=VALUE]`` flags; a bare name is ``true``, values are JSON.

    A name without a suite applies to every suite that has a capability of that name.

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
