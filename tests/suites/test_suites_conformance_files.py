"""The file-store conformance suite against the framework's reference stores and the core's object store.

Each run also seeds a file outside the clauses' directories and checks afterwards that it is
untouched, so the suite is shown to work on a non-empty store without disturbing it.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from agent_framework import AgentFileStore, FileSystemAgentFileStore, InMemoryAgentFileStore

from agent_stores.core.files import ObjectAgentFileStore
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.testing import FileStoreCapabilities, FileStoreConformance, unique_id

StoreFactory = Callable[..., AgentFileStore]


class _SeededForeignData:
    """Mixin: a foreign file exists before every clause and is unchanged after it."""

    @pytest_asyncio.fixture(autouse=True)
    async def _foreign_file_survives(self, file_store_factory: StoreFactory) -> AsyncIterator[None]:
        store = file_store_factory()
        path = f"{unique_id('foreign')}/keep.txt"
        await store.write(path, "not the suite's\r\n")
        yield
        assert await store.read(path) == "not the suite's\r\n"


# The framework trims a whole path, never a name inside it: a file written at "b /c.txt" lies in
# the folder "b ", which list_children("b ") cannot reach (it lists "b").
SPACED_NAMES = {
    "test_a_file_is_listed_in_its_folder_whatever_the_names_spacing": (
        "the framework's path rules trim a whole path, not the names in it: a file written at 'b /c.txt' lies in "
        "the folder 'b ', and list_children('b ') lists the folder 'b' instead"
    )
}


class TestInMemoryAgentFileStore(_SeededForeignData, FileStoreConformance):
    # The store lowercases its keys, creates no directories, and has no name limit. Exclusive
    # create is atomic only under the instance's own lock: two instances never share data, so
    # the cross-instance race is not declared (the factory's one instance would only re-run the
    # single-instance race).
    capabilities = FileStoreCapabilities(
        case_sensitive=False,
        empty_directories=False,
        atomic_create_across_instances=False,
        rejects_file_directory_conflicts=False,
        long_names=True,
    )
    divergences = SPACED_NAMES

    @pytest.fixture
    def file_store_factory(self) -> StoreFactory:
        # InMemoryAgentFileStore keeps its files in the instance: a second instance would be a
        # second, empty store. The factory contract is "every call opens the same backing
        # data", so every call returns the same instance.
        store = InMemoryAgentFileStore()

        def open_store(**options: Any) -> AgentFileStore:
            del options
            return store

        return open_store


class TestFileSystemAgentFileStore(_SeededForeignData, FileStoreConformance):
    # Linux and other POSIX file systems here are case sensitive (macOS and Windows defaults are
    # not). O_EXCL makes exclusive create atomic across instances and processes; a file and a
    # directory cannot share a path; a segment is capped at 255 bytes (NAME_MAX).
    capabilities = FileStoreCapabilities(
        case_sensitive=sys.platform not in ("darwin", "win32"),
        empty_directories=True,
        atomic_create_across_instances=True,
        rejects_file_directory_conflicts=True,
        long_names=False,
    )
    divergences = SPACED_NAMES

    @pytest.fixture
    def file_store_factory(self, tmp_path: Path) -> StoreFactory:
        root = tmp_path / "files"

        def open_store(**options: Any) -> AgentFileStore:
            del options
            return FileSystemAgentFileStore(root)

        return open_store


class TestObjectAgentFileStore(_SeededForeignData, FileStoreConformance):
    # Keys are the exact normalized paths; create_directory stores a marker; the driver's
    # if-absent put is atomic for every store built on it; a key "x" and keys under "x/" coexist.
    capabilities = FileStoreCapabilities(
        case_sensitive=True,
        empty_directories=True,
        atomic_create_across_instances=True,
        rejects_file_directory_conflicts=False,
        long_names=True,
    )

    @pytest.fixture
    def file_store_factory(self) -> StoreFactory:
        driver = MemoryObjectDriver()  # one driver per test: every store opened here shares it

        def open_store(**options: Any) -> AgentFileStore:
            return ObjectAgentFileStore(driver, **options)

        return open_store
