"""``agent-stores migrate-schema``: apply a backend's schema migrations ahead of deployment.

A backend whose stores keep a schema (tables, functions) sets it up lazily on first use. Teams
whose applications run without rights to change the schema run this once, with a role that
has them, before deploying; the stores then find the schema current and change nothing. A
backend offers it with an ``async migrate_schema() -> list[int]`` method on its
``open_stores`` backend (the numbers of the migrations it applied) and a ``schema_version``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, cast

from ._open import open_url, store_location

__all__ = ["SchemaReport", "migrate_schema"]


@dataclass
class SchemaReport:
    """What ``migrate-schema`` did."""

    url: str
    supported: bool
    applied: list[int] = field(default_factory=list[int])
    version: int | None = None

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` report."""
        return {"url": self.url, "supported": self.supported, "applied": self.applied, "version": self.version}


async def migrate_schema(url: str) -> SchemaReport:
    """Apply the migrations the store at ``url`` lacks, each once (safe beside running applications).

    Raises:
        CliError: The URL is malformed or its backend is not installed.
    """
    async with open_url(url, must_exist=False) as stores:
        location = store_location(stores)
        migrate = getattr(stores.backend, "migrate_schema", None)
        if not callable(migrate):
            return SchemaReport(location, supported=False)
        run = cast("Callable[[], Awaitable[Iterable[int]]]", migrate)
        applied = [int(v) for v in await run()]
        version = getattr(stores.backend, "schema_version", None)
        return SchemaReport(location, supported=True, applied=applied, version=version)
