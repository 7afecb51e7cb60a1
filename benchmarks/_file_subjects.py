"""The file stores ``files_bench.py`` compares, each behind the same small interface.

A subject opens one ``AgentFileStore`` in a fresh directory (``open``, not timed) and releases
it (``close``). Later backends add a row by adding a subject here (one line in ``FILE_SUBJECTS``),
its class living in their own ``_subjects_<backend>.py``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_framework import AgentFileStore, FileSystemAgentFileStore, InMemoryAgentFileStore

from _subject_base import FileSubject
from _subjects_fsspec import OursFsspecLocalFiles
from _subjects_s3 import OursS3Files

__all__ = ["FILE_SUBJECTS", "REFERENCE", "FileSubject"]

#: The row every other row is compared to.
REFERENCE = "framework FileSystemAgentFileStore (reference)"


class FrameworkFileSystem(FileSubject):
    """The framework's ``FileSystemAgentFileStore``: one file per path on the local disk."""

    name = REFERENCE

    async def open(self, directory: Path) -> AgentFileStore:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # ExperimentalWarning: expected, not news for a benchmark
            return FileSystemAgentFileStore(directory / "files")


class FrameworkInMemory(FileSubject):
    """The framework's ``InMemoryAgentFileStore``: a dict in this process."""

    name = "framework InMemoryAgentFileStore"

    async def open(self, directory: Path) -> AgentFileStore:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return InMemoryAgentFileStore()


class CoreInProcess(FileSubject):
    """The core's ``ObjectAgentFileStore`` on ``MemoryObjectDriver``: our rules, no I/O."""

    name = "core in-process (no I/O)"

    async def open(self, directory: Path) -> AgentFileStore:
        from agent_stores.core import ObjectAgentFileStore
        from agent_stores.core.memory import MemoryObjectDriver

        return ObjectAgentFileStore(MemoryObjectDriver())


class OursSQLite(FileSubject):
    """``agent_stores.sqlite.SQLiteAgentFileStore`` on a database file."""

    name = "ours: SQLiteAgentFileStore"
    requires = ("agent_stores.sqlite:SQLiteAgentFileStore",)

    async def open(self, directory: Path) -> AgentFileStore:
        from agent_stores.sqlite import SQLiteAgentFileStore

        self._store: Any = SQLiteAgentFileStore.from_path(directory / "files.db")
        return self._store

    async def close(self) -> None:
        await self._store.aclose()


#: Every file-store subject, the reference first.
FILE_SUBJECTS: tuple[Callable[[], FileSubject], ...] = (
    FrameworkFileSystem,
    FrameworkInMemory,
    CoreInProcess,
    OursSQLite,
    OursS3Files,
    OursFsspecLocalFiles,
)
