"""What every benchmark subject shares, and nothing that names a backend.

``Subject`` (a history store under test), ``ProviderSubject`` (one driven through a framework
``HistoryProvider``), ``FileSubject`` (a file store under test), the session ids and warm-up
turn, and :func:`unavailable_reason`. The backend subject files (``_subjects_<backend>.py``)
import this module; the registries (``_subjects.SUBJECTS``, ``_file_subjects.FILE_SUBJECTS``)
import them, so no import goes in a circle.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_framework import AgentFileStore, HistoryProvider, Message

from _payloads import Turn, make_turns

__all__ = [
    "SESSION_ID",
    "WARMUP_SESSION_ID",
    "WARMUP_TURN",
    "FileSubject",
    "ProviderSubject",
    "Subject",
    "messages_of",
    "unavailable_reason",
]

SESSION_ID = "bench-session"
WARMUP_SESSION_ID = "bench-warmup"
_PREFILL_BATCH = 1000  # messages per prefill call

#: One turn written to another session before timing, so schema setup and connections are not measured.
WARMUP_TURN = make_turns(-1, 1)[0]


class Subject:
    """One store under test. Subclasses set ``name`` and implement the hooks."""

    name = ""
    #: The floor row this subject's ratios are computed against (the floor names itself).
    floor = "raw aiosqlite (floor)"
    #: The kind of server the subject needs (``redis``, ``redis-cluster``), started by the run; ``None``: none.
    server: str | None = None
    #: Largest history (messages) ``prefill`` reaches in reasonable time; ``None`` means any.
    max_history: int | None = None
    #: Why ``max_history`` is set, for the results.
    max_history_reason = ""
    #: Every save reads the whole stored history, so its cost grows with the session. Such stores
    #: are interleaved with each other, not with the rest: a slow store in the rotation evicts the
    #: CPU caches and makes every other store's operations measurably slower.
    rereads_history = False
    #: Modules (``module`` or ``module:attribute``) the subject needs beyond the default environment.
    requires: tuple[str, ...] = ()
    #: For a sealed row (``open_stores(..., encryption=...)``): the name of the same store unsealed,
    #: which its ``x plain`` ratios divide by; ``""`` for every other row.
    plain = ""

    def sealing(self) -> dict[str, Any]:
        """The ``open_stores`` options that seal this row's store (a new local keyring); none for a plain row."""
        if not self.plain:
            return {}
        from agent_stores.core.sealing import Keyring

        return {"encryption": Keyring.generate()}

    async def open(self, directory: Path) -> None:
        raise NotImplementedError

    async def save(self, turn: Turn) -> None:
        raise NotImplementedError

    async def load(self) -> int:
        """Load the session; return how many messages came back."""
        raise NotImplementedError

    async def prefill(self, turns: Sequence[Turn]) -> None:
        for start in range(0, len(turns), _PREFILL_BATCH // 2):
            await self._prefill_batch(turns[start : start + _PREFILL_BATCH // 2])

    async def _prefill_batch(self, turns: Sequence[Turn]) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        """Release what ``open`` acquired."""


def messages_of(turns: Sequence[Turn]) -> list[Message]:
    return [m for turn in turns for m in turn.messages]


class ProviderSubject(Subject):
    """A framework ``HistoryProvider``, called as an agent calls it."""

    provider: HistoryProvider

    def _state(self) -> dict[str, Any] | None:
        return None

    async def _save(self, session_id: str, messages: Sequence[Message]) -> None:
        await self.provider.save_messages(session_id, messages, state=self._state())

    async def save(self, turn: Turn) -> None:
        await self._save(SESSION_ID, turn.messages)

    async def load(self) -> int:
        return len(await self.provider.get_messages(SESSION_ID, state=self._state()))

    async def _prefill_batch(self, turns: Sequence[Turn]) -> None:
        await self._save(SESSION_ID, messages_of(turns))


class FileSubject:
    """One file store under test. Subclasses set ``name`` and implement ``open``."""

    name = ""
    #: Modules (``module`` or ``module:attribute``) the subject needs beyond the default environment.
    requires: tuple[str, ...] = ()
    #: A server the benchmark run starts for the subject (see ``Subject.server``); the
    #: file subjects start their own.
    server: str | None = None

    async def open(self, directory: Path) -> AgentFileStore:
        raise NotImplementedError

    async def close(self) -> None:
        """Release what ``open`` acquired."""


def unavailable_reason(subject: Subject, servers: dict[str, str] | None = None) -> str | None:
    """Return why ``subject`` cannot run here (a package or its server is missing), or ``None``.

    ``servers`` maps each server kind that could not be started to the reason.
    """
    if subject.server is not None and servers and subject.server in servers:
        return f"no {subject.server} server: {servers[subject.server]}"
    for requirement in subject.requires:
        module, _, name = requirement.partition(":")
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        if not found:
            return f"not installed ({module}); run with `uv run --group bench`"
        if name and not hasattr(importlib.import_module(module), name):
            return f"not available yet ({module} has no {name})"
    return None
