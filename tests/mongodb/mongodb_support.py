"""Helpers the MongoDB test modules import: client options, URLs, the stand-in's divergences.

The fixtures themselves (``mongodb``, ``stand_in``, ``collection_prefix``) live in this folder's
``conftest.py``; this plain module holds what test modules import by name.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CLIENT_OPTIONS",
    "SERVER",
    "client_options",
    "stand_in_divergences",
    "url_with_database",
]

#: Client options of every store the tests open: fail fast when the server is gone.
CLIENT_OPTIONS: dict[str, Any] = {"serverSelectionTimeoutMS": 5000}

#: Filled once per run by the ``stand_in`` fixture: whether the server is the nx-27017 stand-in.
SERVER: dict[str, bool] = {}


def client_options() -> dict[str, Any]:
    return dict(CLIENT_OPTIONS)


def url_with_database(url: str, database: str) -> str:
    """``url`` naming ``database`` instead of its own (query options kept)."""
    scheme, _, rest = url.partition("://")
    hosts, _, tail = rest.partition("/")
    _, question, query = tail.partition("?")
    return f"{scheme}://{hosts}/{database}" + (f"?{query}" if question else "")


def stand_in_divergences(divergences: dict[str, str]) -> dict[str, str]:
    """``divergences`` when this run's server is the stand-in, else none (real MongoDB must pass every clause).

    Read by the conformance classes' ``divergences`` property, after the session fixture
    ``stand_in`` ran (session-scoped fixtures are set up before the clause rules).
    """
    return divergences if SERVER.get("stand_in") else {}
