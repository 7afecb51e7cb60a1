"""Operations commands: ``stats`` (what a store holds) and ``sweep`` (retention), read and printed here."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.markup import escape
from rich.table import Table

from agent_stores.core import redact_url
from agent_stores.core.stats import StoreStats, collect_stats

from ._errors import CliError
from ._open import open_url
from ._output import out

__all__ = ["print_stats", "read_stats"]


async def read_stats(
    url: str, *, tenant: str | None, after: str | None, limit: int, sample: int, max_keys: int
) -> StoreStats:
    """:func:`~agent_stores.core.stats.collect_stats` on the store ``url`` names (read only)."""
    async with open_url(url, must_exist=True) as stores:
        if not stores.offers_drivers:
            raise CliError(f"the backend of {redact_url(url)} does not hand out its drivers: it cannot be counted")
        return await collect_stats(stores, tenant=tenant, after=after, limit=limit, sample=sample, max_keys=max_keys)


def _when(moment: datetime | None) -> str:
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M")


def _about(value: int, estimated: bool, complete: bool) -> str:
    return f"{'≈' if estimated else ''}{'≥' if not complete else ''}{value:,}"


def print_stats(stats: StoreStats) -> None:
    """The table: one row per tenant and namespace; files and snapshots on each tenant's first row."""
    table = Table(show_edge=False, box=None)
    table.add_column("tenant")
    table.add_column("namespace")
    for column in ("sessions", "messages", "bytes", "files", "snapshots", "checkpoints", "todos"):
        table.add_column(column, justify="right")
    table.add_column("oldest activity", no_wrap=True)
    table.add_column("newest activity", no_wrap=True)
    estimated = partial = False
    for tenant in stats.tenants:
        name = "(none)" if tenant.tenant_segment is None else tenant.tenant or f"[{tenant.tenant_segment}]"
        rows: list[Any] = tenant.namespaces or [None]
        for index, namespace in enumerate(rows):
            first = index == 0
            tenant_cells = [f"{tenant.files:,}", f"{tenant.snapshots:,}"] if first else ["", ""]
            if namespace is None:
                table.add_row(escape(name), "-", "0", "0", "0", *tenant_cells, "0", "0", "-", "-")
                continue
            estimated |= namespace.sampled
            partial |= not namespace.complete
            label = namespace.namespace if namespace.namespace is not None else f"[{namespace.namespace_segment}]"
            table.add_row(
                escape(name) if first else "",
                escape(repr(label) if label == "" else label),
                _about(namespace.sessions, False, namespace.complete),
                _about(namespace.messages, namespace.sampled, namespace.complete),
                _about(namespace.bytes, namespace.sampled, namespace.complete),
                *tenant_cells,
                _about(namespace.checkpoints, False, namespace.complete),
                _about(namespace.todos, False, namespace.complete),
                _when(namespace.oldest_activity),
                _when(namespace.newest_activity),
            )
        partial |= not tenant.complete
    out.print(table)
    if estimated:
        out.print(f"≈ sampled: estimated from {stats.sample} sessions per namespace read at random (--sample)")
    if partial:
        out.print(f"≥ at least: a listing stopped at {stats.max_keys:,} entries (--max-keys)")
    out.print("activity: checkpoint timestamps and the changes retention sweeps observed ('-': none recorded)")
    if stats.next_after:
        out.print(f"more: --after {escape(stats.next_after)}")
