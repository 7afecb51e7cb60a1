"""The file and session conformance suites against the fsspec stores, on every filesystem we declare.

Filesystems: a local temporary directory, fsspec's in-process memory filesystem, and SFTP
against an OpenSSH ``sshd`` the fixture starts (``agent_stores.testing.servers.sftp``). Every
store a factory opens in one clause shares one root, as separate processes would.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fsspec import AbstractFileSystem
from fsspec.implementations.dirfs import DirFileSystem
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from agent_stores.fsspec import (
    FilesystemCapabilities,
    FsspecAgentFileStore,
    FsspecBackend,
    FsspecHistoryProvider,
    FsspecSessionStore,
    parse_url,
)
from agent_stores.testing import (
    FakeClock,
    FileStoreCapabilities,
    FileStoreConformance,
    HistoryProviderConformance,
    SessionStoreConformance,
    corrupt_object_session,
    declared,
)
from agent_stores.testing.servers.sftp import sftp_server, with_path


def file_capabilities(filesystem: FilesystemCapabilities) -> FileStoreCapabilities:
    """The suite's capabilities, as the backend declares them on this filesystem (nothing probed)."""
    return declared(FsspecBackend.declared_on(filesystem), "files")


class TestLocalFiles(FileStoreConformance):
    capabilities = file_capabilities(FilesystemCapabilities.local())

    @pytest.fixture
    def file_store_factory(self, tmp_path: Path) -> Callable[..., FsspecAgentFileStore]:
        # A fresh LocalFileSystem each time: fsspec caches instances, the store must not rely on it.
        return lambda **options: FsspecAgentFileStore(LocalFileSystem(), str(tmp_path / "files"), **options)


class TestLocalFilesFromUrl(FileStoreConformance):
    capabilities = file_capabilities(FilesystemCapabilities.local())

    @pytest.fixture
    def file_store_factory(self, tmp_path: Path) -> Callable[..., FsspecAgentFileStore]:
        return lambda **options: FsspecAgentFileStore.from_url(f"file://{tmp_path}/files", **options)


class TestMemoryFiles(FileStoreConformance):
    capabilities = file_capabilities(FilesystemCapabilities.memory())

    @pytest.fixture
    def file_store_factory(self) -> Callable[..., FsspecAgentFileStore]:
        root = f"/agent-stores-{uuid.uuid4().hex}"
        return lambda **options: FsspecAgentFileStore(MemoryFileSystem(), root, **options)


class TestLocalSessions(SessionStoreConformance):
    capabilities = declared(FsspecBackend, "sessions")

    @pytest.fixture
    def session_store_factory(self, tmp_path: Path) -> Callable[[], FsspecSessionStore]:
        return lambda: FsspecSessionStore(LocalFileSystem(), str(tmp_path / "sessions"))

    @pytest.fixture
    def corrupt_session(self) -> Any:
        return corrupt_object_session


class TestMemorySessions(SessionStoreConformance):
    capabilities = declared(FsspecBackend, "sessions")

    @pytest.fixture
    def session_store_factory(self) -> Callable[[], FsspecSessionStore]:
        root = f"memory://agent-stores-{uuid.uuid4().hex}"
        return lambda: FsspecSessionStore.from_url(f"fsspec+{root}")

    @pytest.fixture
    def corrupt_session(self) -> Any:
        return corrupt_object_session


# -- SFTP: OpenSSH sshd started by the fixture (or $AGENT_STORES_SFTP_URL) ------------------


@pytest.fixture(scope="module")
def sftp_url() -> Iterator[str]:
    with sftp_server() as server:
        yield server.url


@pytest.fixture(scope="module")
def sftp_fs(sftp_url: str) -> Iterator[AbstractFileSystem]:
    """One SSH connection for the module, borrowed by every store (as a user's own filesystem would be)."""
    fs = parse_url(sftp_url).create()
    yield fs
    client: Any = getattr(fs, "client", None)
    if client is not None:
        client.close()


def sftp_root(sftp_url: str, name: str) -> str:
    return parse_url(with_path(sftp_url, f"{name}-{uuid.uuid4().hex}")).root


class TestSftpFiles(FileStoreConformance):
    capabilities = file_capabilities(FilesystemCapabilities.sftp())

    @pytest.fixture
    def file_store_factory(self, sftp_fs: AbstractFileSystem, sftp_url: str) -> Callable[..., FsspecAgentFileStore]:
        root = sftp_root(sftp_url, "files")
        return lambda **options: FsspecAgentFileStore(sftp_fs, root, **options)


class TestSftpFilesOwnConnections(FileStoreConformance):
    """Each store opens and owns its own SSH connection: exclusive create across connections."""

    capabilities = file_capabilities(FilesystemCapabilities.sftp())

    @pytest.fixture
    def file_store_factory(self, sftp_url: str) -> Callable[..., FsspecAgentFileStore]:
        url = with_path(sftp_url, f"files-{uuid.uuid4().hex}")
        return lambda **options: FsspecAgentFileStore.from_url(url, **options)


class TestSftpSessions(SessionStoreConformance):
    capabilities = declared(FsspecBackend, "sessions")

    @pytest.fixture
    def session_store_factory(self, sftp_fs: AbstractFileSystem, sftp_url: str) -> Callable[[], FsspecSessionStore]:
        root = sftp_root(sftp_url, "sessions")
        return lambda: FsspecSessionStore(sftp_fs, root)

    @pytest.fixture
    def corrupt_session(self) -> Any:
        return corrupt_object_session


# -- any other filesystem: the plain fsspec API (here fsspec's DirFileSystem over a local dir) --

#: What DirFileSystem over a local directory does through the plain API: real directories,
#: conflicts checked before writing, but nothing atomic (declared by the user, as they must
#: for a filesystem the backend does not know).
DIR_OVER_LOCAL = FilesystemCapabilities(
    name="dir over local (plain fsspec API)",
    atomic_create=False,
    atomic_compare_and_set=False,
    atomic_replace=False,
    case_sensitive=True,
    empty_directories=True,
    rejects_file_directory_conflicts=True,
    long_names=False,
)


def dir_filesystem(path: Path) -> AbstractFileSystem:
    path.mkdir(exist_ok=True)
    return DirFileSystem(str(path), LocalFileSystem())


class TestGenericFiles(FileStoreConformance):
    capabilities = file_capabilities(DIR_OVER_LOCAL)

    @pytest.fixture
    def file_store_factory(self, tmp_path: Path) -> Callable[..., FsspecAgentFileStore]:
        return lambda **options: FsspecAgentFileStore(
            dir_filesystem(tmp_path), "files", capabilities=DIR_OVER_LOCAL, **options
        )


class TestGenericSessions(SessionStoreConformance):
    capabilities = declared(FsspecBackend, "sessions")

    @pytest.fixture
    def session_store_factory(self, tmp_path: Path) -> Callable[[], FsspecSessionStore]:
        return lambda: FsspecSessionStore(dir_filesystem(tmp_path), "sessions", capabilities=DIR_OVER_LOCAL)

    @pytest.fixture
    def corrupt_session(self) -> Any:
        return corrupt_object_session


class TestGenericHistory(HistoryProviderConformance):
    """No atomic create: one writer per session at a time, so no concurrency clause is declared."""

    capabilities = declared(FsspecBackend.declared_on(DIR_OVER_LOCAL), "history")
    fake_clock = True

    @pytest.fixture
    def history_factory(self, tmp_path: Path, clock: FakeClock) -> Callable[..., FsspecHistoryProvider]:
        return lambda **options: FsspecHistoryProvider(
            dir_filesystem(tmp_path), "history", capabilities=DIR_OVER_LOCAL, clock=clock, **options
        )
