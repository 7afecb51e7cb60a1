"""Helpers the PostgreSQL tests share."""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def database_url(server_url: str, database: str) -> str:
    """``server_url`` naming ``database`` instead of its own."""
    parts = urlsplit(server_url)
    return urlunsplit(parts._replace(path=f"/{database}"))
