"""Operations commands: ``stats`` (what a store holds) and ``sweep`` (retention), read and printed here."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from rich.markup import escape
from rich.table import Table

from agent_stores.core import redact_url
from agent_stores.core.retention import SweepReport
from agent_stores.core.stats import StoreStats, collect_stats

from ._errors import CliError
from ._open import open_url
from ._output import out, print_table

__all__ = ["print_stats", "print_sweep", "read_stats", "run_sweep"]


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
    print_table(table)
    if estimated:
        out.print(f"≈ sampled: estimated from {stats.sample} sessions per namespace read at random (--sample)")
    if partial:
        out.print(f"≥ at least: a listing stopped at {stats.max_keys:,} entries (--max-keys)")
    out.print("activity: checkpoint timestamps and the changes retention sweeps observed ('-': none recorded)")
    if stats.next_after:
        out.print(f"more: --after {escape(stats.next_after)}")


async def run_sweep(
    url: str,
    *,
    idle: str | None,
    age: str | None,
    keep_last: int | None,
    kinds: list[str] | None,
    tenants: list[str] | None,
    dry_run: bool,
    concurrency: int,
    progress: Callable[[str, int, int], None] | None = None,
) -> SweepReport:
    """:func:`~agent_stores.core.retention.sweep` on the store ``url`` names (which must exist)."""
    from agent_stores.core.retention import KINDS, RetentionRule, parse_duration, sweep

    chosen = [k.strip() for group in kinds or [] for k in group.split(",") if k.strip()] or None
    unknown = sorted(set(chosen or ()) - set(KINDS))
    if unknown:
        raise CliError(f"--kind takes {', '.join(KINDS)}; got {', '.join(unknown)}")
    try:
        rule = RetentionRule(
            idle=None if idle is None else parse_duration(idle),
            age=None if age is None else parse_duration(age),
            keep_last=keep_last,
        )
    except ValueError as err:
        raise CliError(f"{err} (give --idle, --age or --keep-last)") from err
    async with open_url(url, must_exist=True) as stores:
        if not stores.offers_drivers:
            raise CliError(f"the backend of {redact_url(url)} does not hand out its drivers: it cannot be swept")
        return await sweep(
            stores, rule, kinds=chosen, tenants=tenants, dry_run=dry_run, concurrency=concurrency, progress=progress
        )


def _days(seconds: float) -> str:
    return f"{seconds / 86400:.1f}d" if seconds >= 86400 else f"{seconds / 3600:.1f}h"


def print_sweep(report: SweepReport, *, verbose: bool, shown: int = 50) -> None:
    """What went (or would go), per kind, and what was kept because it was written meanwhile."""
    plan = report.plan
    seen = ", ".join(f"{count} {kind}" for kind, count in sorted(plan.seen.items())) or "nothing"
    out.print(f"[bold]agent-stores sweep[/]{' (dry run)' if plan.dry_run else ''}: looked at {seen}")
    if plan.first_seen:
        out.print(
            f"{plan.first_seen} item(s) new or changed since the last sweep: their idle time starts "
            f"{'at the next real sweep' if plan.dry_run else 'now'}"
        )
    verb = "would delete" if plan.dry_run else "deleted"
    action = "delete" if plan.dry_run else "deleted"
    by_kind: dict[str, int] = {}
    for item in report.items:
        if item.action == action:
            by_kind[item.kind] = by_kind.get(item.kind, 0) + 1
    out.print(f"{verb}: " + (", ".join(f"{n} {k}" for k, n in sorted(by_kind.items())) or "nothing"))
    if plan.orphan_marks:
        verb_marks = "would forget" if plan.dry_run else "forgot"
        out.print(f"{verb_marks} {len(plan.orphan_marks)} mark(s) of items removed by other means")
    for name, what in (("changed", "kept, written since the sweep looked"), ("gone", "already removed by another")):
        if report.count(name):
            out.print(f"{report.count(name)} {what}")
    for index, item in enumerate(report.items):
        if index >= shown and not verbose:
            out.print(f"... {len(report.items) - shown} more (--verbose or --json lists every item)")
            break
        where = f"{item.tenant or item.tenant_segment}: " if item.tenant_segment is not None else ""
        detail = f" {item.detail}" if item.detail else ""
        out.print(
            f"  {item.action:<8} {item.kind:<11} {escape(where + item.key)} "
            f"(idle {_days(item.idle)}, age {_days(item.age)}){escape(detail)}"
        )
    unconditional = [i for i in report.items if not i.conditional]
    if unconditional:
        out.print(
            f"{len(unconditional)} histories were deleted after re-reading their version (this backend's log "
            "driver has no conditional delete; see docs/cli.md)"
        )
