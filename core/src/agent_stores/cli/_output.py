"""Where the command writes: the report on stdout, errors and progress on stderr, JSON untouched by rich."""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Generator
from typing import Any, NoReturn, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Table
from rich.text import Text

from ._errors import EXIT_USAGE, CliError, CorruptDataError

__all__ = [
    "err",
    "fail",
    "guarded",
    "out",
    "phased_progress",
    "plural",
    "print_json",
    "print_json_error",
    "print_table",
    "progress_bar",
]


class _Console(Console):
    """A rich console that leaves a closed pipe to the command group (rich itself would exit with status 1)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


out = _Console(highlight=False, soft_wrap=True)
err = _Console(stderr=True, highlight=False, soft_wrap=True)

T = TypeVar("T")


def print_table(table: Table) -> None:
    """Print ``table`` at its natural width: a narrow terminal or a pipe wraps lines, never cuts a name to "…"."""
    needed = Measurement.get(out, out.options.update_width(10_000), table).maximum
    if needed <= out.width:
        out.print(table)
        return
    wide: Any = Console(file=out.file, width=needed, force_terminal=out.is_terminal, highlight=False, soft_wrap=True)
    wide.print(table, crop=False)


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``"1 item"``, ``"2 items"`` (``many`` for an irregular plural)."""
    return f"{count} {noun if count == 1 else many or noun + 's'}"


def print_json(document: Any) -> None:
    """Write ``document`` as JSON on stdout, untouched by rich."""
    sys.stdout.write(json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n")
    sys.stdout.flush()


def print_json_error(message: str, exit_code: int) -> None:
    """Write the ``--json`` document of a failure on stdout: ``{"ok": false, "error": ..., "exit_code": ...}``."""
    print_json({"ok": False, "error": message, "exit_code": exit_code})


def fail(error: BaseException, *, verbose: bool, as_json: bool = False) -> NoReturn:
    """Print ``error`` as one line on stderr (and its traceback with ``--verbose``), exit with its code (2 by default).

    With ``as_json`` the error is also a JSON document on stdout (:func:`print_json_error`).
    """
    code: int = getattr(error, "exit_code", EXIT_USAGE)
    if verbose:
        import traceback

        err.print(escape("".join(traceback.format_exception(error))))
    if as_json:
        print_json_error(str(error), code)
    err.print(f"[bold red]error:[/] {escape(str(error))}")
    raise typer.Exit(code)


def guarded(verbose: bool, action: Callable[[], T], *, as_json: bool = False) -> T:
    """Run ``action``; a :class:`CliError` (or a store error outside it) is a one-line error and exit 2.

    Stored data that cannot be read (a ``CorruptRecordError``) exits 4. A closed stdout pipe
    (``BrokenPipeError``) is left to the command group, which ends quietly.
    """
    try:
        return action()
    except (typer.Exit, typer.Abort, KeyboardInterrupt, BrokenPipeError):
        raise
    except CliError as error:
        fail(error, verbose=verbose, as_json=as_json)
    except Exception as error:
        from agent_stores.core import CorruptRecordError

        wrapper = CorruptDataError if isinstance(error, CorruptRecordError) else CliError
        wrapped = wrapper(f"{type(error).__name__}: {error}")
        wrapped.__cause__ = error  # --verbose shows where it came from
        fail(wrapped, verbose=verbose, as_json=as_json)


class _RateColumn(ProgressColumn):
    """Items per second of the current phase, once there is a rate to show."""

    def render(self, task: Task) -> Text:
        speed = task.speed
        return Text("" if speed is None else f"{speed:,.0f}/s")


def progress_bar(*, transient: bool = False) -> Progress:
    """A progress bar on stderr (so ``--json`` output on stdout stays clean): count, rate, time spent and left."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        _RateColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=transient,
    )


@contextlib.contextmanager
def phased_progress(first: str) -> Generator[Callable[[str, int, int], None]]:
    """A transient progress bar; ``advance(phase, done, total)`` gives each new phase its own rate and time left."""
    with progress_bar(transient=True) as progress:
        task = progress.add_task(first, total=None)
        phases = [first]

        def advance(phase: str, done: int, total: int) -> None:
            if phase != phases[-1]:
                phases.append(phase)
                progress.reset(task, description=phase, total=total or None)
            progress.update(task, completed=done, total=total or None)

        yield advance
