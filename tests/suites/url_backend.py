"""``urltest://`` backends for the URL clauses: a correct one, and one per bug a clause must catch.

``urltest://[user[:password]@]host[:port]/[?verify=<bool>]`` opens the core's in-process stores.
The host says which error path ``agent-stores check`` reaches: ``unreachable`` (a server that
does not answer), ``refusing`` (it refuses the credentials), ``badtls`` (its certificate is
refused); any other host works. Variants, each registered under its own scheme:

- ``urltest``: correct (the core's user-part check and strict booleans, messages naming parts).
- ``urltest+echonode``: its port error quotes the authority, password included.
- ``urltest+echourl``: its driver's errors quote the URL it was opened with.
- ``urltest+lenient``: reads ``verify`` as ``value.lower() in {"1", "true", "yes", "on"}``.

:func:`register` adds them to ``open_stores`` for one test; :func:`break_redaction` swaps the
core's ``redact_url`` for one that stops at the first ``@``.
"""

from __future__ import annotations

import importlib
import re
import sys
from importlib.metadata import EntryPoint
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

from agent_stores.core import ObjectSessionStore, StoreError, StoreUnavailableError
from agent_stores.core import stores as stores_module
from agent_stores.core.memory import MemoryBackend
from agent_stores.core.redaction import redact_url
from agent_stores.core.urls import check_user_part, parse_bool

SCHEMES = ("urltest", "urltest+echonode", "urltest+echourl", "urltest+lenient")


class _Failing:
    """An object driver whose every call fails the way ``host`` does."""

    def __init__(self, error: Exception) -> None:
        self.error = error

    def __getattr__(self, name: str) -> Any:
        async def fail(*args: Any, **kwargs: Any) -> Any:
            raise self.error

        return fail


class URLTestBackend(MemoryBackend):
    """The core's in-process stores behind a ``urltest://`` URL (see the module docstring)."""

    def __init__(self, url: str, **options: Any) -> None:
        super().__init__("memory://", **options)
        scheme = url.split("://", 1)[0]
        if scheme != "urltest+echonode":
            check_user_part(url, what="urltest URL")
        parts = urlsplit(url)
        host, _, port = parts.netloc.rpartition("@")[2].partition(":")
        if port and not port.isdigit():
            if scheme == "urltest+echonode":
                raise ValueError(f"invalid port in urltest URL node {parts.netloc!r}")
            raise ValueError("invalid port in urltest URL: it must be a number")
        for name, value in parse_qsl(parts.query, keep_blank_values=True):
            if name != "verify":
                raise ValueError(f"unknown urltest URL option {name!r}")
            if scheme == "urltest+lenient":
                self.verify = value.lower() in {"1", "true", "yes", "on"}
            else:
                self.verify = parse_bool(value, option="verify")
        where = url if scheme == "urltest+echourl" else f"{host}:{port or 1}"
        self.error: Exception | None = {
            "unreachable": StoreUnavailableError(f"urltest at {where} did not answer"),
            "refusing": StoreError(f"urltest at {where} refused the credentials"),
            "badtls": StoreError(f"urltest at {where}: TLS certificate verification failed"),
        }.get(host)

    def session_store(self, **options: Any) -> ObjectSessionStore:
        if self.error is None:
            return super().session_store(**options)
        return ObjectSessionStore(_Failing(self.error), **options)  # pyright: ignore[reportArgumentType]


def register(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make ``open_stores`` (and so ``agent-stores check``) serve the ``urltest`` schemes."""
    real = stores_module.entry_points
    ours = [EntryPoint(scheme, f"{__name__}:URLTestBackend", stores_module.ENTRY_POINT_GROUP) for scheme in SCHEMES]

    def entry_points(**selection: Any) -> Any:
        found = list(real(**selection))
        return found + ours if selection.get("group") == stores_module.ENTRY_POINT_GROUP else found

    monkeypatch.setattr(stores_module, "entry_points", entry_points)


def _first_at(url: str) -> str:
    return re.sub(r"://[^@]*@", "://***@", url, count=1)


def break_redaction(monkeypatch: pytest.MonkeyPatch) -> None:
    """Swap ``redact_url`` everywhere it was imported for one that hides only up to the first ``@``."""
    importlib.import_module("agent_stores.cli._check")  # the command's modules, imported when it first runs
    importlib.import_module("agent_stores.cli._app")
    real = redact_url  # this module's own name is swapped too
    for module in list(sys.modules.values()):
        if getattr(module, "redact_url", None) is real:
            monkeypatch.setattr(module, "redact_url", _first_at)
