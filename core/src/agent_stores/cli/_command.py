"""The command classes every ``agent-stores`` command uses: help as it reads best, and a closed pipe ending quietly."""

from __future__ import annotations

import os
import sys
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from ._errors import EXIT_PIPE
from ._output import print_json_error

__all__ = ["Command", "Group", "unwrap_paragraphs"]


def unwrap_paragraphs(text: str | None) -> str | None:
    r"""``text`` with each paragraph on one line, so the terminal wraps it (a ``\b`` paragraph stays as written)."""
    if not text:
        return text
    paragraphs = [p if p.startswith("\b") else " ".join(p.split()) for p in text.strip().split("\n\n")]
    return "\n\n".join(paragraphs)


def _hide_flag_types(command: Any, ctx: Any) -> None:
    """Show no value type (``<bool>``) beside a flag: it takes none."""
    for param in command.get_params(ctx):
        if getattr(param, "is_flag", False) and getattr(param, "metavar", None) is None:
            param.metavar = ""


def _quiet_stdout() -> None:
    """Point stdout at ``/dev/null``: what is still buffered for a closed pipe goes nowhere, silently."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout is no file (a test runner's buffer)
        pass


class _Polished:
    """Help paragraphs unwrapped, no value type shown beside a flag, and ``--json`` usage errors as JSON too."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["help"] = unwrap_paragraphs(kwargs.get("help"))
        super().__init__(*args, **kwargs)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        _hide_flag_types(self, ctx)
        super().format_help(ctx, formatter)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType]

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        as_json = "--json" in args  # the parser consumes ``args``
        try:
            return super().make_context(info_name, args, parent=parent, **extra)  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]
        except typer.TyperException as err:
            if as_json:
                print_json_error(err.format_message(), err.exit_code)
            raise


class Command(_Polished, TyperCommand):
    """An ``agent-stores`` command (see :class:`_Polished`)."""


class Group(_Polished, TyperGroup):
    """The ``agent-stores`` group (see :class:`_Polished`); bare ``agent-stores`` shows its help and exits 0.

    A pipe closed by its reader (``agent-stores history ... | head``) ends the command quietly,
    with the shell's status for it (141, as for a process killed by ``SIGPIPE``).
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if not args and not ctx.resilient_parsing:
            text = ctx.get_help()  # rich help prints itself and returns nothing
            if text:
                typer.echo(text)
            ctx.exit(0)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            _quiet_stdout()
            raise typer.Exit(EXIT_PIPE) from None
