"""OpenTelemetry traces and metrics of every store operation, through one decorator the core's stores share.

Each operation of a history provider, file store, session store, todo store or checkpoint
storage built by the core is a client span named ``<operation> <kind>``, following the
database semantic conventions (``db.system.name``, ``db.operation.name``,
``db.collection.name``, ``error.type``; ``db.namespace``, ``server.address`` and
``server.port`` from a driver's optional ``telemetry_attributes()``), with conflicts as span
events, and a ``db.client.operation.duration`` histogram (seconds). Spans start in the current
context, so inside an agent run they nest under the framework's ``invoke_agent`` span.

Only ``opentelemetry-api`` is used (the framework depends on it). While no tracer provider and
no meter provider is set, or the framework's instrumentation is disabled
(``ENABLE_INSTRUMENTATION=false``, ``agent_framework.observability.disable_instrumentation()``),
an operation only checks that and runs.

The same decorator runs the check an open attached to the store
(:class:`~agent_stores.core.opencheck.OpenCheck`) before its first operation.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Concatenate, Final, ParamSpec, TypeAlias, TypeVar, cast

from agent_framework.observability import OBSERVABILITY_SETTINGS
from opentelemetry import metrics, trace

from .opencheck import CHECK_ATTRIBUTE

__all__ = [
    "CONVERSATION_ID",
    "DURATION_METRIC",
    "INSTRUMENTATION_NAME",
    "note_conflict",
    "set_conversation_ids",
    "store_operation",
]

#: The instrumentation scope of our spans and metrics.
INSTRUMENTATION_NAME: Final = "agent_stores"
#: The histogram every operation records its duration in (seconds).
DURATION_METRIC: Final = "db.client.operation.duration"
#: The attribute that carries the session id, when enabled (:func:`set_conversation_ids`).
CONVERSATION_ID: Final = "gen_ai.conversation.id"

# The semantic conventions' advice for db.client.operation.duration.
_DURATION_BUCKETS: Final = (0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 10.0)

_tracer = trace.get_tracer(INSTRUMENTATION_NAME)
_duration = metrics.get_meter(INSTRUMENTATION_NAME).create_histogram(
    DURATION_METRIC,
    unit="s",
    description="Duration of agent-stores operations.",
    explicit_bucket_boundaries_advisory=list(_DURATION_BUCKETS),
)

_conversation_ids: bool | None = None

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S")
if TYPE_CHECKING:
    from types import CoroutineType

    _Method: TypeAlias = Callable[Concatenate[S, P], CoroutineType[Any, Any, R]]


def set_conversation_ids(enabled: bool | None) -> None:
    """Choose whether spans carry the session id as ``gen_ai.conversation.id``.

    Session ids can be personal data (a user name, an e-mail address). ``None`` (the default)
    follows the framework's sensitive-data setting (``ENABLE_SENSITIVE_DATA``); ``True`` and
    ``False`` override it for every store of this process.
    """
    global _conversation_ids
    _conversation_ids = enabled


def _with_conversation_ids() -> bool:
    return OBSERVABILITY_SETTINGS.SENSITIVE_DATA_ENABLED if _conversation_ids is None else _conversation_ids


def _active() -> bool:
    """Whether anything would record: a tracer or meter provider set, and instrumentation on.

    Asks our own tracer and histogram, which the API hands out as proxies until a provider is
    set (a proxy tracer's ``_tracer`` is the no-op one, a proxy histogram has no real instrument
    yet): ``trace.get_tracer_provider()`` reads the environment on every call. An API without
    these attributes counts as set (correct, only slower).
    """
    if isinstance(getattr(_tracer, "_tracer", _tracer), trace.NoOpTracer) and (
        getattr(_duration, "_real_instrument", _duration) is None
    ):
        return False
    return OBSERVABILITY_SETTINGS.ENABLED


def note_conflict(what: str, attempt: int) -> None:
    """Record on the current span that a conditional write lost to another writer and is retried.

    ``what`` names the write (``append``, ``set``); ``attempt`` counts from 1.
    """
    span = trace.get_current_span()
    if span.is_recording():
        span.add_event("agent_stores.conflict", {"db.operation.name": what, "agent_stores.attempt": attempt})


def _backend_driver(driver: object) -> object:
    """The backend's driver below the core's views and logs (a prefixed view, an object log)."""
    inner = driver
    for _ in range(8):
        if not type(inner).__module__.startswith("agent_stores.core."):
            break
        below = getattr(inner, "driver", None) or getattr(inner, "objects", None)
        if below is None:
            break
        inner = below
    return inner


def _system_of(driver: object) -> str:
    """The backend of a driver: ``sqlite``, ``redis``, ``mongodb``, ``s3``, ``fsspec``, ``memory`` or its package."""
    parts = type(driver).__module__.split(".")
    if parts[:2] == ["agent_stores", "core"]:
        return "memory" if parts[2:3] == ["memory"] else "agent_stores"
    return parts[1] if parts[0] == "agent_stores" and len(parts) > 1 else parts[0]


#: What a driver's optional ``telemetry_attributes()`` may give.
_DRIVER_ATTRIBUTES: Final = frozenset({"server.address", "server.port", "db.namespace"})


def _driver_attributes(driver: object) -> dict[str, str | int]:
    """A driver's optional ``telemetry_attributes()``: where its server is, and the database (or bucket) name."""
    hook = getattr(driver, "telemetry_attributes", None)
    if not callable(hook):
        return {}
    given: Any = hook()
    if not isinstance(given, dict):
        return {}
    return {
        k: v
        for k, v in cast(dict[Any, Any], given).items()
        if k in _DRIVER_ATTRIBUTES and isinstance(v, str | int) and not isinstance(v, bool)
    }


def _root_of(store: object) -> str | None:
    keys = getattr(store, "keys", None)
    root = getattr(keys, "root", None)
    if not isinstance(root, str):
        prefix = getattr(store, "prefix", None)
        root = prefix if isinstance(prefix, str) else None
    if root is None:
        return None
    return root.rstrip("/") or None


def _store_attributes(store: object, kind: str) -> dict[str, str | int]:
    cached: dict[str, str | int] | None = store.__dict__.get("_agent_stores_otel")
    if cached is None:
        driver = _backend_driver(getattr(store, "driver", None))
        cached = {"db.system.name": _system_of(driver), "db.collection.name": kind, **_driver_attributes(driver)}
        root = _root_of(store)
        if root is not None:
            cached["agent_stores.root"] = root
        if "server.address" in cached or not callable(getattr(driver, "telemetry_attributes", None)):
            store.__dict__["_agent_stores_otel"] = cached  # else ask again: a lazy client may not exist yet
    return cached


def _session_id_of(arguments: tuple[Any, ...], keywords: dict[str, Any]) -> str | None:
    """The session id a store operation was called with: the first argument, or ``session.session_id``."""
    first = arguments[0] if arguments else keywords.get("session_id", keywords.get("session"))
    if isinstance(first, str):
        return first
    session_id = getattr(first, "session_id", None)
    return session_id if isinstance(session_id, str) else None


def store_operation(
    kind: str, operation: str, *, session: bool = False
) -> Callable[[_Method[S, P, R]], _Method[S, P, R]]:
    """Trace the decorated async store method as the operation ``operation`` on ``kind`` data.

    ``session``: the method's first argument is a session id or an ``AgentSession``, carried as
    ``gen_ai.conversation.id`` when enabled (:func:`set_conversation_ids`).
    """

    def decorate(method: _Method[S, P, R]) -> _Method[S, P, R]:
        async def recorded(store: S, args: tuple[Any, ...], kwargs: dict[str, Any]) -> R:
            base = _store_attributes(store, kind)
            attributes: dict[str, str | int] = {**base, "db.operation.name": operation}
            if session and _with_conversation_ids():
                session_id = _session_id_of(args, kwargs)
                if session_id is not None:
                    attributes[CONVERSATION_ID] = session_id
            metric_attributes = {**base, "db.operation.name": operation}
            start = time.perf_counter()
            with _tracer.start_as_current_span(
                f"{operation} {kind}", kind=trace.SpanKind.CLIENT, attributes=attributes
            ) as span:
                try:
                    return await method(store, *args, **kwargs)
                except BaseException as err:
                    error_type = type(err).__qualname__
                    span.set_attribute("error.type", error_type)
                    metric_attributes["error.type"] = error_type
                    raise
                finally:
                    _duration.record(time.perf_counter() - start, metric_attributes)

        async def checked(store: S, check: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> R:
            await check.wait()
            if not _active():
                return await method(store, *args, **kwargs)
            return await recorded(store, args, kwargs)

        # Not a coroutine function itself: while nothing records, the caller awaits the method's
        # own coroutine, with no frame of ours in between (once the store's open check passed).
        @functools.wraps(method)
        def traced(store: S, /, *args: P.args, **kwargs: P.kwargs) -> CoroutineType[Any, Any, R]:
            check = store.__dict__.get(CHECK_ATTRIBUTE)
            if check is not None and not check.passed:
                return checked(store, check, args, kwargs)
            if not _active():
                return method(store, *args, **kwargs)
            return recorded(store, args, kwargs)

        return traced

    return decorate
