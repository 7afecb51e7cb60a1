"""The fsspec rows of the history and file benchmarks, on a local directory.

Compared to ``framework FileHistoryProvider`` (the ``floor`` of these rows): it is the
framework's own history on files in the same local directory, the store a user of a folder
would otherwise pick, and the issue's targets are stated against it (append at least 5x, save
cost flat up to 10k messages where the file store re-reads the whole session on each save).
The SQLite floor measures a database, not a filesystem, so it is the wrong yardstick here.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agent_framework import AgentFileStore

from _payloads import Turn
from _subject_base import SESSION_ID, WARMUP_SESSION_ID, WARMUP_TURN, FileSubject, ProviderSubject, messages_of

__all__ = ["OursFsspecLocal", "OursFsspecLocalFiles", "OursSealedFsspecLocal"]


class OursFsspecLocal(ProviderSubject):
    """``FsspecHistoryProvider`` through ``open_stores("file:///...")``: one segment file per save."""

    name = "ours: FsspecHistoryProvider (local dir)"
    floor = "framework FileHistoryProvider"
    requires = ("agent_stores.fsspec:FsspecHistoryProvider",)

    async def open(self, directory: Path) -> None:
        from agent_stores.core import open_stores

        self._stores = open_stores(f"file://{directory / 'fsspec'}", **self.sealing())
        self.provider = self._stores.history_provider()
        await self._save(WARMUP_SESSION_ID, WARMUP_TURN.messages)

    async def _prefill_batch(self, turns: Sequence[Turn]) -> None:
        await self.provider.import_messages(SESSION_ID, messages_of(turns))  # type: ignore[attr-defined]

    async def close(self) -> None:
        await self._stores.aclose()


class OursSealedFsspecLocal(OursFsspecLocal):
    """Ours through ``open_stores(..., encryption=Keyring)``: sealed records."""

    name = "ours: sealed FsspecHistoryProvider (local dir, AES-256-GCM)"
    plain = OursFsspecLocal.name


class OursFsspecLocalFiles(FileSubject):
    """``FsspecAgentFileStore`` on a local directory: the same files ``FileSystemAgentFileStore`` keeps."""

    name = "ours: FsspecAgentFileStore (local dir)"
    requires = ("agent_stores.fsspec:FsspecAgentFileStore",)

    async def open(self, directory: Path) -> AgentFileStore:
        from agent_stores.fsspec import FsspecAgentFileStore

        self._store: Any = FsspecAgentFileStore.from_url(f"file://{directory / 'fsspec-files'}")
        return self._store

    async def close(self) -> None:
        await self._store.aclose()
