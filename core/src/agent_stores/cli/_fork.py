"""``agent-stores fork``: start a session as a copy of another (history up to a message, snapshot, todos, files)."""

from __future__ import annotations

from typing import Any

from agent_stores.core import fork_session, redact_url

from ._errors import EXIT_CONFLICT, CliError
from ._open import open_url
from ._scope import Scope

__all__ = ["ForkConflict", "fork"]


class ForkConflict(CliError):
    """The destination session already holds something; nothing was copied (exit 3)."""

    exit_code = EXIT_CONFLICT


async def fork(url: str, src: str, dst: str, scope: Scope, *, upto: int | None) -> dict[str, Any]:
    """Fork ``src`` into ``dst`` in the store ``url`` names; return what was copied."""
    async with open_url(url, must_exist=True) as stores:
        try:
            report = await fork_session(
                stores,
                src,
                dst,
                upto=upto,
                source_id=scope.source_id,
                namespace=scope.namespace,
                tenant=scope.tenant,
            )
        except FileExistsError as err:
            raise ForkConflict(f"{err} in {redact_url(url)}{scope.describe()}; nothing was copied") from err
        except (ValueError, TypeError) as err:
            raise CliError(f"{err} ({redact_url(url)}{scope.describe()})") from err
    return {
        "url": redact_url(url),
        "src": src,
        "dst": dst,
        "upto": upto,
        "messages": report.messages,
        "compactions": report.compactions,
        "snapshot": report.snapshot,
        "todos": report.todos,
        "files": report.files,
    }
