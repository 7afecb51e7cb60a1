"""The capabilities a backend declares, as each conformance suite's capabilities class.

A backend declares its capabilities once (``ConnectedBackend.capabilities``, over the core's
:func:`~agent_stores.core.lifecycle.adapter_capabilities`); its tests, ``agent-stores check``
and the docs read that one declaration through :func:`declared`::

    class TestSQLiteHistory(HistoryProviderConformance):
        capabilities = declared(SQLiteBackend, "history")
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Final, cast

from .checkpoints import CheckpointStorageCapabilities
from .files import FileStoreCapabilities
from .history import HistoryCapabilities
from .log_driver import LogDriverCapabilities
from .object_driver import ObjectDriverCapabilities
from .sessions import SessionStoreCapabilities
from .todos import TodoStoreCapabilities

__all__ = ["CAPABILITY_TYPES", "declared"]

#: Suite name (as backends declare them) to the suite's capabilities class.
CAPABILITY_TYPES: Final[Mapping[str, type[Any]]] = {
    "history": HistoryCapabilities,
    "files": FileStoreCapabilities,
    "sessions": SessionStoreCapabilities,
    "checkpoints": CheckpointStorageCapabilities,
    "todos": TodoStoreCapabilities,
    "log_driver": LogDriverCapabilities,
    "object_driver": ObjectDriverCapabilities,
}


def declared(source: Any, suite: str, /, **changes: Any) -> Any:
    """Return ``suite``'s capabilities object for what ``source`` declares, with ``changes`` applied.

    ``source`` is a backend class (its ``declared_capabilities()``), a backend (its
    ``conformance_capabilities()``, which may depend on the URL) or the plain mapping either
    returns. ``changes`` are for a test setup that differs from what the backend hands out (an
    in-process database, a driver opened without its connection's guarantees); say why where
    you pass them.

    Raises:
        KeyError: ``suite`` is not a suite name.
        TypeError: A declared or changed field is not one of the suite's capabilities.
    """
    table: Mapping[str, Mapping[str, Any]]
    if isinstance(source, Mapping):
        table = cast(Mapping[str, Mapping[str, Any]], source)
    elif isinstance(source, type):
        table = cast(Any, source).declared_capabilities()
    else:
        table = source.conformance_capabilities()
    capability_type = CAPABILITY_TYPES[suite]
    fields = {**table.get(suite, {}), **changes}
    known = {f.name for f in dataclasses.fields(capability_type)}
    unknown = sorted(set(fields) - known)
    if unknown:
        raise TypeError(f"{capability_type.__name__} has no capabilities {unknown}")
    return capability_type(**fields)
