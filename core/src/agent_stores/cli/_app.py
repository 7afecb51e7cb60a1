"""The ``agent-stores`` command line (typer, with rich output)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from ._errors import EXIT_FAILED, EXIT_USAGE, CliError

__all__ = ["app", "main"]

app = typer.Typer(
    name="agent-stores",
    help="Check, look inside, migrate and demo durable stores for Microsoft Agent Framework agents.\n\n"
    "Exit codes: 0 ok, 1 a check or verification failed, 2 bad input or an unreachable store.",
    no_args_is_help=True,
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    add_completion=False,
)


@app.callback()
def _root() -> None:
    """Check, look inside, migrate and demo durable stores for Microsoft Agent Framework agents."""


out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)

T = TypeVar("T")

JsonOption = Annotated[bool, typer.Option("--json", help="Print one JSON document on stdout (for scripts and CI).")]
VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks and full failure details.")]


def fail(error: BaseException, *, verbose: bool) -> NoReturn:
    """Print ``error`` as one line (and its traceback with ``--verbose``), exit 2."""
    if verbose:
        import traceback

        err.print(escape("".join(traceback.format_exception(error))))
    err.print(f"[bold red]error:[/] {escape(str(error))}")
    raise typer.Exit(EXIT_USAGE)


def guarded(verbose: bool, action: Callable[[], T]) -> T:
    """Run ``action``; a :class:`CliError` (or a store error outside it) is a one-line error and exit 2."""
    try:
        return action()
    except (typer.Exit, typer.Abort, KeyboardInterrupt):
        raise
    except CliError as error:
        fail(error, verbose=verbose)
    except Exception as error:
        fail(CliError(f"{type(error).__name__}: {error}"), verbose=verbose)


def print_json(document: Any) -> None:
    """Write ``document`` as JSON on stdout, untouched by rich."""
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def progress_bar(*, transient: bool = False) -> Progress:
    """A progress bar on stderr, so ``--json`` output on stdout stays clean."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=transient,
    )


# -- check ----------------------------------------------------------------------------------------


@app.command(
    epilog="[bold]Examples[/]\n\n"
    "  agent-stores check sqlite:///agent.db\n\n"
    "  agent-stores check redis://localhost:6379/0 --suite history --suite sessions\n\n"
    "  agent-stores check file:///srv/agent --json > conformance.json\n\n"
    "  agent-stores check my_package.stores:open_history --capability windowed_load\n\n"
    "  agent-stores check my_package.stores:open_files -k search",
)
def check(
    target: Annotated[str, typer.Argument(help="A store URL (scheme://...) or module:attr, a factory of your store.")],
    suite: Annotated[
        list[str] | None,
        typer.Option(
            "--suite",
            "-s",
            help="With a URL: run only this suite (history, files, sessions, checkpoints, todos, "
            "log_driver, object_driver); repeat for more.",
        ),
    ] = None,
    capability: Annotated[
        list[str] | None,
        typer.Option(
            "--capability",
            "-c",
            help="Declare a capability: [SUITE.]NAME[=VALUE] (bare name = true, VALUE is JSON); repeatable. "
            "Overrides what the backend or the factory declares.",
        ),
    ] = None,
    clause: Annotated[
        str | None, typer.Option("--clause", "-k", help="Run only clauses matching this pytest -k expression.")
    ] = None,
    allow_purge: Annotated[
        bool,
        typer.Option(
            "--allow-purge",
            help="With a URL: also run the purge_expired clauses "
            "(they remove already-expired data of the whole store).",
        ),
    ] = False,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Run the conformance suites against a live store URL or a factory of your own store.

    A [bold]URL[/] runs every suite its backend offers, with the capabilities the backend
    declares, in a scratch namespace / prefix of its own; what the check wrote is removed at
    the end, and nothing else is touched. A [bold]module:attr[/] is a callable returning a
    history provider, file store, session store, checkpoint storage, todo store, log driver
    or object driver (sync or async, over the same data on every call); its suite is chosen
    by what it returns, its capabilities come from a `capabilities` attribute on it and
    `--capability` flags.

    Exit 0 when every clause passes, 1 when any fails, 2 on bad input or an unreachable store.
    """
    from ._check import run_check

    with progress_bar(transient=True) as progress:
        task = progress.add_task("conformance", total=None)

        def advance(done: int, total: int, clause: str) -> None:
            progress.update(task, completed=done, total=total or None, description=clause[:48] or "conformance")

        report = guarded(
            verbose,
            lambda: run_check(
                target,
                capability_flags=capability or [],
                suites=suite or [],
                clause_filter=clause,
                allow_purge=allow_purge,
                progress=advance,
            ),
        )
    if as_json:
        print_json(report.to_json())
    else:
        _print_check(report, verbose=verbose)
    if not report.ok:
        raise typer.Exit(EXIT_FAILED)


def _print_check(report: Any, *, verbose: bool) -> None:
    out.print(f"[bold]agent-stores check[/] {escape(report.target)}")
    for note in report.notes:
        out.print(f"  {escape(note)}")
    table = Table(show_edge=False, box=None, pad_edge=False)
    for column in ("suite", "passed", "failed", "divergent", "skipped", "not run"):
        table.add_column(column, justify="left" if column == "suite" else "right")
    for suite in report.suites:
        rows = [r for r in report.results if r.suite == suite]

        def n(outcome: str, rows: list[Any] = rows) -> str:
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
    out.print(table)
    for result in report.results:
        if result.outcome != "failed":
            continue
        out.print(f"\n[bold red]FAIL[/] {result.suite}: [bold]{escape(result.clause)}[/]")
        out.print(f"  [red]{escape(result.message)}[/]")
        for line in result.explanation.splitlines():
            out.print(f"  {escape(line)}")
        if verbose and result.details:
            out.print(escape(result.details))
    if report.cleanup:
        out.print(f"\ncleanup: {escape(report.cleanup)}")
    passed, failed = report.count("passed"), report.count("failed")
    if report.ok:
        out.print(f"[bold green]ok[/]: {passed} clauses passed, {report.count('divergent')} declared divergences")
    else:
        out.print(f"[bold red]{failed} clauses failed[/], {passed} passed (--verbose for tracebacks)")


def main() -> None:
    """Entry point of the ``agent-stores`` script."""
    import warnings

    from agent_framework._feature_stage import ExperimentalWarning

    # The framework marks its storage protocols experimental on import; the command's output is about the stores.
    warnings.filterwarnings("ignore", category=ExperimentalWarning)
    app()
