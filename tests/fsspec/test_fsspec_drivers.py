"""The driver conformance suites on ``FsspecObjectDriver`` (and the core's ``ObjectLogDriver`` over it).

Filesystems: a local temporary directory, fsspec's memory filesystem and SFTP (sshd started by
the fixture). Capabilities come from what each filesystem declares.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fsspec import AbstractFileSystem
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem

from agent_stores.core import ObjectLogDriver
from agent_stores.fsspec import FilesystemCapabilities, FsspecBackend, FsspecObjectDriver, parse_url
from agent_stores.testing import (
    OBJECT_LOG_DIVERGENCES,
    FakeClock,
    LogDriverConformance,
    ObjectDriverCapabilities,
    ObjectDriverConformance,
    declared,
)
from agent_stores.testing.servers.sftp import sftp_server, with_path

_REAL_PATHS = (
    "Objects are files at their real paths: a key that is also the directory of other keys ('a' and "
    "'a/b'), a directory marker with content ('a/' holding bytes), or an empty path segment ('a//b') "
    "cannot exist on a filesystem. Such keys are a NotADirectoryError/IsADirectoryError or ValueError "
    "here; the core's stores never make them (KeySpace and the framework's path rules)."
)

#: The clauses whose keys a filesystem cannot hold (see ``_REAL_PATHS``).
OBJECT_DIVERGENCES = {
    name: _REAL_PATHS
    for name in (
        "test_keys_are_exact",
        "test_list_without_delimiter_returns_every_key_under_the_prefix",
        "test_list_with_delimiter_folds_deeper_keys_into_common_prefixes",
        "test_list_orders_by_code_point",
        "test_list_prefix_is_literal",
        "test_paged_listing_equals_the_unpaged_listing",
        "test_list_matches_the_specification",
    )
}

_EMPTY_SEGMENT = (
    "Log keys ending with '/' or holding '//' put the log's folder at an empty path segment, which a "
    "filesystem cannot hold (ValueError); KeySpace keys never contain one."
)

#: The object log's own divergences plus the keys a filesystem cannot hold.
LOG_DIVERGENCES = OBJECT_LOG_DIVERGENCES | {
    "test_logs_with_related_keys_are_independent": _EMPTY_SEGMENT,
    "test_list_logs_prefix_is_literal": _EMPTY_SEGMENT,
}


def object_capabilities(filesystem: FilesystemCapabilities) -> ObjectDriverCapabilities:
    """The suite's capabilities, as the backend declares them on this filesystem (nothing probed)."""
    return declared(FsspecBackend.declared_on(filesystem), "object_driver")


class TestLocalObjectDriver(ObjectDriverConformance):
    """Without markers (object-store semantics), as history and sessions use it."""

    capabilities = object_capabilities(FilesystemCapabilities.local())
    divergences = OBJECT_DIVERGENCES

    @pytest.fixture
    def object_driver_factory(self, tmp_path: Path) -> Callable[[], FsspecObjectDriver]:
        return lambda: FsspecObjectDriver(LocalFileSystem(), str(tmp_path / "objects"), markers=False)


class TestMemoryObjectDriver(ObjectDriverConformance):
    capabilities = object_capabilities(FilesystemCapabilities.memory())
    divergences = OBJECT_DIVERGENCES

    @pytest.fixture
    def object_driver_factory(self) -> Callable[[], FsspecObjectDriver]:
        root = f"/agent-stores-{uuid.uuid4().hex}"
        return lambda: FsspecObjectDriver(MemoryFileSystem(), root, markers=False)


class TestLocalObjectLogDriver(LogDriverConformance):
    capabilities = declared(FsspecBackend.declared_on(FilesystemCapabilities.local()), "log_driver")
    divergences = LOG_DIVERGENCES
    fake_clock = True

    @pytest.fixture
    def log_driver_factory(self, tmp_path: Path, clock: FakeClock) -> Callable[[], ObjectLogDriver]:
        root = str(tmp_path / "log")
        return lambda: ObjectLogDriver(
            FsspecObjectDriver(LocalFileSystem(), root, markers=False), prefix="", owns_objects=True, clock=clock
        )


@pytest.fixture(scope="module")
def sftp_url() -> Iterator[str]:
    with sftp_server() as server:
        yield server.url


@pytest.fixture(scope="module")
def sftp_fs(sftp_url: str) -> Iterator[AbstractFileSystem]:
    fs = parse_url(sftp_url).create()
    yield fs
    client: Any = getattr(fs, "client", None)
    if client is not None:
        client.close()


class TestSftpObjectDriver(ObjectDriverConformance):
    capabilities = object_capabilities(FilesystemCapabilities.sftp())
    divergences = OBJECT_DIVERGENCES

    @pytest.fixture
    def object_driver_factory(self, sftp_url: str) -> Callable[[], FsspecObjectDriver]:
        url = with_path(sftp_url, f"objects-{uuid.uuid4().hex}")
        return lambda: FsspecObjectDriver.from_url(url, markers=False)
