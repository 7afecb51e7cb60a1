"""Where in a store a command looks (tenant, namespace, source id), and how every command says what is not there."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._errors import CliError

if TYPE_CHECKING:
    from agent_stores.core import Stores

__all__ = ["Scope", "no_folder", "no_session"]


@dataclass(frozen=True)
class Scope:
    """The part of a store a command reads: a tenant's stores (or the unscoped ones), a namespace, a source id."""

    tenant: str | None = None
    namespace: str = ""
    source_id: str = "history"

    def history(self, stores: Stores) -> Any:
        """The history provider of this scope."""
        return stores.history_provider(self.source_id, namespace=self.namespace, tenant=self.tenant)

    def describe(self, *, history: bool = True) -> str:
        """``" (tenant 'acme', namespace 'n')"``: what is not the default, for messages (``""`` when nothing)."""
        parts = [f"tenant {self.tenant!r}"] if self.tenant is not None else []
        if history:
            parts += [f"namespace {self.namespace!r}"] if self.namespace else []
            parts += [f"source id {self.source_id!r}"] if self.source_id != "history" else []
        return f" ({', '.join(parts)})" if parts else ""

    def flags(self, *, history: bool = True) -> str:
        """The command-line options that select this scope (``" --tenant acme"``)."""
        flags = f" --tenant {shlex.quote(self.tenant)}" if self.tenant is not None else ""
        if history:
            flags += f" --namespace {shlex.quote(self.namespace)}" if self.namespace else ""
            flags += f" --source-id {shlex.quote(self.source_id)}" if self.source_id != "history" else ""
        return flags


def no_session(url: str, session_id: str, scope: Scope, *, snapshot: bool = False) -> CliError:
    """The error of every command asked for a session the store does not hold (exit 2)."""
    from agent_stores.core import redact_url

    what = "no snapshot" if snapshot else "no history"
    listing = "sessions --snapshots" if snapshot else "sessions"
    return CliError(
        f"no session {session_id!r} in {redact_url(url)}{scope.describe(history=not snapshot)}: {what} is stored "
        f"(agent-stores {listing} lists what is)"
    )


def no_folder(url: str, folder: str, scope: Scope) -> CliError:
    """The error of a folder the file store does not hold (exit 2)."""
    from agent_stores.core import redact_url

    return CliError(f"no folder {folder!r} in {redact_url(url)}{scope.describe(history=False)}")
