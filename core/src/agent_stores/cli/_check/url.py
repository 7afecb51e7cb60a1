"""A store URL target: every suite its backend offers, planned inside a scratch area of its own."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from agent_stores.core import Stores, open_stores, redact_url
from agent_stores.core.sealing import SealedStores

from .._errors import CliError
from .._open import store_location
from .capabilities import backend_declarations, backend_divergences, make_capabilities
from .footprint import Footprint
from .plan import CORRUPT_FIXTURES, GENERIC_CORRUPTERS, SUITES, ClauseScope, Plan, SuitePlan, close_store
from .report import CheckReport, ClauseResult
from .scratch import ScratchArea
from .sealing import SUITE as SEALING
from .sealing import plan_sealed_url

__all__ = ["PURGE_CLAUSES", "REACH_TIMEOUT", "history_from_url", "plan_url"]

#: Clauses that act on the whole store, not only on what the check wrote: skipped on a live URL
#: unless ``--allow-purge`` (they remove already-expired data of every session).
PURGE_CLAUSES = {
    "history": "test_purge_expired_spares_live_sessions",
    "log_driver": "test_purge_expired_removes_only_expired_logs",
}

#: Seconds the first read of a URL may take before the store counts as unreachable.
REACH_TIMEOUT = 10.0

# The suites every backend offers, then those of a backend that hands out drivers.
_STORE_SUITES = ["history", "files", "sessions"]
_DRIVER_SUITES = ["checkpoints", "todos", "log_driver", "object_driver"]

# The method of a URL's stores that opens each object-backed store kind, looked up on the instance:
# a subclass (sealed stores) opens its own kind of store.
_OPEN: dict[str, str] = {
    "files": "file_store",
    "sessions": "session_store",
    "checkpoints": "checkpoint_storage",
    "todos": "todo_store",
}


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
    scratch = ScratchArea(url)
    report.scratch = scratch.name
    try:
        probe = open_stores(url)
    except ValueError as err:
        raise CliError(str(err)) from err
    scratch.footprint = Footprint.of(store_location(probe))  # before anything is written
    try:
        return _plan_open_url(probe, scratch, overrides, selected, allow_purge=allow_purge, report=report)
    except BaseException:
        asyncio.run(probe.aclose())
        if scratch.footprint is not None:
            scratch.footprint.give_back()
        raise
    finally:
        asyncio.run(probe.aclose())


def _plan_open_url(
    probe: Stores,
    scratch: ScratchArea,
    overrides: dict[str, dict[str, Any]],
    selected: Sequence[str],
    *,
    allow_purge: bool,
    report: CheckReport,
) -> tuple[Plan, Callable[[], Any]]:
    url = scratch.url
    shared = url.split("://", 1)[1].split("?", 1)[0].strip("/") == "" and url.split("://", 1)[0] in ("memory", "sqlite")
    report.notes.append(scratch.describe())

    declared, declared_divergences = backend_declarations(probe)
    if not declared:
        report.notes.append(
            f"{type(probe.backend).__name__} declares no capabilities (conformance_capabilities()): "
            "checking the minimal contract; add --capability flags for more"
        )
    offers_drivers = callable(getattr(probe.backend, "object_driver", None)) and callable(
        getattr(probe.backend, "log_driver", None)
    )
    asyncio.run(_reach(probe, url, scratch.options("sessions")))

    available = _STORE_SUITES + (_DRIVER_SUITES if offers_drivers else [])
    unknown = [s for s in selected if s not in SUITES]
    if unknown:
        raise CliError(f"unknown suite {', '.join(unknown)}; suites: {', '.join(SUITES)}")
    if isinstance(probe, SealedStores) and not shared:
        available.append(SEALING)
    elif isinstance(probe, SealedStores) and SEALING not in selected:
        report.notes.append("sealing: no sealing suite for an in-process store (it cannot be reopened with other keys)")
    elif SEALING in selected:
        raise CliError(
            f"{redact_url(url)} does not open sealed stores: name its key (keyring=, kms_key_id=, "
            "AGENT_STORES_KEYRING or AGENT_STORES_KMS_KEY_ID) to run the sealing suite"
            if not shared
            else f"the sealing suite reopens the store with other keys: {redact_url(url)} is in-process only"
        )
    missing = [s for s in selected if s not in available]
    if missing:
        raise CliError(f"{redact_url(url)} offers no {', '.join(missing)} (its backend hands out no drivers)")
    suites = [s for s in available if not selected or s in selected]

    # Expiry decided by the client (every backend but one whose server expires by its own clock)
    # follows the clause's fake clock: the ttl clauses move it instead of waiting.
    on_clock = bool(getattr(probe.backend, "follows_clock", False))
    plan = Plan(url=scratch.target_url, shared=shared, on_clock=on_clock)
    for suite in suites:
        if suite == SEALING:
            sealing, skipped = plan_sealed_url(
                probe, scratch.target_url, scratch.tenants, report, namespaces=scratch.namespaces
            )
            sealing.divergences = backend_divergences(probe, suite, declared_divergences)
            plan.suites.append(sealing)
            plan.skip |= skipped
            report.capabilities[suite] = dataclasses.asdict(sealing.capabilities)
            continue
        capabilities = make_capabilities(suite, declared.get(suite), overrides.get(suite, {}))
        fixtures: dict[str, Any] = {}
        if suite in CORRUPT_FIXTURES:
            fixtures[CORRUPT_FIXTURES[suite]] = GENERIC_CORRUPTERS[suite]
        if suite == "history" and capabilities.multi_process:
            fixtures["history_process_factory"] = (
                f"{__name__}:history_from_url",
                {"url": scratch.target_url, "namespace": scratch.name},
            )
        divergences = backend_divergences(probe, suite, declared_divergences)
        plan.suites.append(
            SuitePlan(suite, _opener(suite, scratch), capabilities, divergences, fixtures, fake_clock=on_clock)
        )
        report.capabilities[suite] = dataclasses.asdict(capabilities)
    report.suites = suites

    async def cleanup() -> str:
        return await scratch.remove(offers_drivers=offers_drivers)

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


def _opener(suite: str, scratch: ScratchArea) -> Callable[[ClauseScope], Callable[..., Any]]:
    """``opener(scope)`` for ``suite``: the factory fixture's value, opening the store in the scratch area.

    The scope opens the URL on the clause's clock where the backend follows one (``open_stores(url, clock=)``).
    """

    def opener(scope: ClauseScope) -> Callable[..., Any]:
        if suite == "log_driver":
            return lambda: scratch.log_driver(scope.stores())
        if suite == "object_driver":
            return lambda: scratch.object_driver(scope.stores())

        def open_one(**options: Any) -> Any:
            if suite == "history":
                return scratch.history_provider(scope.stores(), **options)
            return getattr(scope.stores(), _OPEN[suite])(**scratch.options(suite), **options)

        return open_one

    return opener


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
        await close_store(store)
        await stores.aclose()  # in this event loop: a client bound to it cannot be closed from another


def history_from_url(url: str, namespace: str, **options: Any) -> Any:
    """The ``history_process_factory`` of a URL check: a provider in a child process, owning its stores."""
    stores = open_stores(url)
    provider = stores.history_provider(namespace=namespace, **options)
    adopt = getattr(provider, "_adopt", None)
    if adopt is not None:
        adopt(stores, owned=True)
    return provider
