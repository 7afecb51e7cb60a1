"""The errors the command reports as a single line, and its exit codes."""

from __future__ import annotations

__all__ = [
    "EXIT_CONFLICT",
    "EXIT_CORRUPT",
    "EXIT_FAILED",
    "EXIT_OK",
    "EXIT_PIPE",
    "EXIT_USAGE",
    "CliError",
    "CorruptDataError",
]

EXIT_OK = 0
#: A check found failing clauses, or a migration's verification failed.
EXIT_FAILED = 1
#: Bad input (usage, a missing module:attr, a factory that raises) or an unreachable store.
EXIT_USAGE = 2
#: A migration or repair refused: the target holds different data, or the session changed meanwhile.
EXIT_CONFLICT = 3
#: The store holds data that cannot be read (a gap in a history log, an undecodable record).
EXIT_CORRUPT = 4
#: The reader of stdout closed the pipe (``| head``): the status a shell gives a process ended by ``SIGPIPE``.
EXIT_PIPE = 128 + 13


class CliError(Exception):
    """Bad input or an unreachable store: printed as one line (a traceback only with ``--verbose``), exit 2."""

    exit_code = EXIT_USAGE


class CorruptDataError(CliError):
    """Stored data cannot be read: printed as one line, exit 4."""

    exit_code = EXIT_CORRUPT
