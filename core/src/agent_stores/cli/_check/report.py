"""What ``agent-stores check`` found: each clause's outcome, the report as printed and as ``--json``."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

__all__ = ["OUTCOMES", "CheckReport", "ClauseResult", "print_report"]

#: Every outcome a clause can have, in the order the summary lists them.
OUTCOMES = ("passed", "failed", "skipped", "divergent", "not-run")


@dataclass
class ClauseResult:
    """The outcome of one clause."""

    suite: str
    clause: str
    outcome: str  # one of OUTCOMES
    explanation: str = ""
    message: str = ""
    details: str = ""


@dataclass
class CheckReport:
    """Everything ``check`` found, as printed and as ``--json``."""

    target: str
    suites: list[str] = field(default_factory=list[str])
    capabilities: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    results: list[ClauseResult] = field(default_factory=list[ClauseResult])
    scratch: str = ""
    cleanup: str = ""
    notes: list[str] = field(default_factory=list[str])

    def count(self, outcome: str) -> int:
        """How many clauses ended with ``outcome``."""
        return sum(1 for r in self.results if r.outcome == outcome)

    @property
    def ok(self) -> bool:
        """Every clause that ran passed (or failed as a declared divergence), and at least one ran."""
        return self.count("failed") == 0 and self.count("passed") > 0

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` document."""
        return {
            "target": self.target,
            "ok": self.ok,
            "summary": {k: self.count(k) for k in OUTCOMES},
            "suites": self.suites,
            "capabilities": self.capabilities,
            "scratch": self.scratch,
            "cleanup": self.cleanup,
            "notes": self.notes,
            "clauses": [dataclasses.asdict(r) for r in self.results],
        }


def print_report(report: CheckReport, console: Console, *, verbose: bool) -> None:
    """Print ``report``: the notes, a table of counts per suite, each failing clause, the cleanup and a verdict."""
    console.print(f"[bold]agent-stores check[/] {escape(report.target)}")
    for note in report.notes:
        console.print(f"  {escape(note)}")
    table = Table(show_edge=False, box=None, pad_edge=False)
    for column in ("suite", "passed", "failed", "divergent", "skipped", "not run"):
        table.add_column(column, justify="left" if column == "suite" else "right")
    for suite in report.suites:
        rows = [r for r in report.results if r.suite == suite]

        def n(outcome: str, rows: list[ClauseResult] = rows) -> str:
            count = sum(1 for r in rows if r.outcome == outcome)
            return str(count) if count else "-"

        failed = n("failed")
        table.add_row(
            suite,
            n("passed"),
            f"[red]{failed}[/]" if failed != "-" else failed,
            n("divergent"),
            n("skipped"),
            n("not-run"),
        )
    console.print(table)
    _print_reasons(report, console)
    for result in report.results:
        if result.outcome != "failed":
            continue
        console.print(f"\n[bold red]FAIL[/] {result.suite}: [bold]{escape(result.clause)}[/]")
        console.print(f"  [red]{escape(result.message)}[/]")
        for line in result.explanation.splitlines():
            console.print(f"  {escape(line)}")
        if verbose and result.details:
            console.print(escape(result.details))
    if report.cleanup:
        console.print(f"\ncleanup: {escape(report.cleanup)}")
    passed, failed = report.count("passed"), report.count("failed")
    if report.ok:
        console.print(f"[bold green]ok[/]: {passed} clauses passed, {report.count('divergent')} declared divergences")
    else:
        console.print(f"[bold red]{failed} clauses failed[/], {passed} passed (--verbose for tracebacks)")


def reason(result: ClauseResult) -> str:
    """Why a clause did not run: its skip message (without pytest's ``Skipped:``), else its explanation's first line."""
    text = result.message.removeprefix("Skipped: ").strip() or result.explanation.strip()
    return text.splitlines()[0] if text else "no reason given"


def _print_reasons(report: CheckReport, console: Console) -> None:
    """Each reason clauses were skipped or not run, once, with the clauses it applies to."""
    for outcome in ("not-run", "skipped"):
        groups: dict[str, list[ClauseResult]] = {}
        for result in report.results:
            if result.outcome == outcome:
                groups.setdefault(reason(result), []).append(result)
        if not groups:
            continue
        console.print(f"\n{outcome.replace('-', ' ')}:")
        for why, results in groups.items():
            console.print(f"  {escape(why)}")
            for result in results:
                console.print(f"    {escape(result.suite)}: {escape(result.clause)}")
