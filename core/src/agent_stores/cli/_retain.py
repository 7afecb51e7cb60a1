"""``agent-stores retain``: drop what a session's stored compactions excluded, or finish a retention that stopped."""

from __future__ import annotations

from typing import Any

from agent_stores.core import LogHistoryProvider, redact_url

from ._errors import CliError
from ._open import open_url
from ._scope import Scope

__all__ = ["retain"]


async def retain(url: str, session_id: str, scope: Scope) -> dict[str, Any]:
    """Run ``LogHistoryProvider.retain`` on one session of the store ``url`` names; return what it dropped."""
    async with open_url(url, must_exist=True) as stores:
        history: Any = scope.history(stores)
        if not isinstance(history, LogHistoryProvider):
            raise CliError(f"{redact_url(url)} keeps its history in {type(history).__name__}, which has no retention")
        dropped = await history.retain(session_id)
        left = await history.count_messages(session_id)
    return {
        "url": redact_url(url),
        "session_id": session_id,
        "dropped": dropped,
        "stored": left,
    }
