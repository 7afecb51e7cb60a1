"""The one error the command reports as a single line with exit code 2."""

from __future__ import annotations

__all__ = ["EXIT_CONFLICT", "EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "CliError"]

EXIT_OK = 0
#: A check found failing clauses, or a migration's verification failed.
EXIT_FAILED = 1
#: Bad input (usage, a missing module:attr, a factory that raises) or an unreachable store.
EXIT_USAGE = 2
#: A migration refused: the target holds different data for the same session, file or snapshot.
EXIT_CONFLICT = 3


class CliError(Exception):
    """Bad input or an unreachable store: printed as one line (a traceback only with ``--verbose``), exit 2."""
