"""The file stores ``files_bench.py`` compares, each behind the same small interface.

A subject opens one ``AgentFileStore`` in a fresh directory (``open``, not timed) and releases
it (``close``). Later backends add a row by adding a subject here (one line in ``FILE_SUBJECTS``),
its class living in their own ``_subjects_<backend>.py``.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_framework import AgentFileStore, FileSystemAgentFileStore, InMemoryAgentFileStore

__all__ = ["FILE_SUBJECTS", "REFERENCE", "FileSubject"]

#: The row every other row is compared to.
REFERENCE = "framework FileSystemAgentFileStore (reference)"


class FileSubject:
    """One file store under test. Subclasses set ``name`` and implement ``open``."""

    name = ""
    #: Modules (``module`` or ``module:attribute``) the subject needs beyond the default environment.
    requires: tuple[str, ...] = ()
    #: A server the benchmark run starts for the subject (see ``_subjects.Subject.server``); the
    #: file subjects start their own.
    server: str | None = None

    async def open(self, directory: Path) -> AgentFileStore:
        raise NotImplementedError

    async def close(self) -> None:
        """Release what ``open`` acquired."""


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
    lambda: importlib.import_module("_subjects_s3").OursS3Files(),
    lambda: importlib.import_module("_subjects_fsspec").OursFsspecLocalFiles(),
)
