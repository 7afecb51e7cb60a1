"""The history conformance suite against ``FsspecHistoryProvider`` on every filesystem we declare.

Local directory and SFTP declare atomic exclusive create across processes, so they run the
two-process clauses too; fsspec's memory filesystem lives in one process, so it declares
concurrency within the process only.
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

from agent_stores.fsspec import FilesystemCapabilities, FsspecBackend, FsspecHistoryProvider, parse_url
from agent_stores.testing import FakeClock, HistoryProviderConformance, declared, expires_on_the_real_clock
from agent_stores.testing.servers.sftp import sftp_server, with_path

ACROSS_PROCESSES = declared(FsspecBackend.declared_on(FilesystemCapabilities.local()), "history")
IN_PROCESS = declared(FsspecBackend.declared_on(FilesystemCapabilities.memory(), processes=False), "history")


def open_history(url: str, **options: Any) -> FsspecHistoryProvider:
    """The ``history_process_factory`` spec: a provider owning its own filesystem for ``url``."""
    return FsspecHistoryProvider.from_url(url, **options)


class TestLocalHistory(HistoryProviderConformance):
    capabilities = ACROSS_PROCESSES
    fake_clock = True

    @pytest.fixture
    def history_factory(self, tmp_path: Path, clock: FakeClock) -> Callable[..., FsspecHistoryProvider]:
        root = str(tmp_path / "history")
        return lambda **options: FsspecHistoryProvider(LocalFileSystem(), root, clock=clock, **options)

    @pytest.fixture
    def history_process_factory(self, tmp_path: Path) -> tuple[str, dict[str, Any]]:
        return f"{__name__}:open_history", {"url": f"file://{tmp_path}/history"}


class TestLocalHistoryFromUrl(HistoryProviderConformance):
    capabilities = ACROSS_PROCESSES
    fake_clock = True

    @pytest.fixture
    def history_factory(self, tmp_path: Path, clock: FakeClock) -> Callable[..., FsspecHistoryProvider]:
        return lambda **options: open_history(f"file://{tmp_path}/history", clock=clock, **options)

    @pytest.fixture
    def history_process_factory(self, tmp_path: Path) -> tuple[str, dict[str, Any]]:
        return f"{__name__}:open_history", {"url": f"file://{tmp_path}/history"}


class TestMemoryHistory(HistoryProviderConformance):
    capabilities = IN_PROCESS
    fake_clock = True

    @pytest.fixture
    def history_factory(self, clock: FakeClock) -> Callable[..., FsspecHistoryProvider]:
        root = f"/agent-stores-{uuid.uuid4().hex}"
        return lambda **options: FsspecHistoryProvider(MemoryFileSystem(), root, clock=clock, **options)


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


class TestSftpHistory(HistoryProviderConformance):
    capabilities = ACROSS_PROCESSES
    fake_clock = True

    @pytest.fixture
    def history_url(self, sftp_url: str) -> str:
        return with_path(sftp_url, f"history-{uuid.uuid4().hex}")

    @pytest.fixture
    def history_factory(
        self, sftp_fs: AbstractFileSystem, history_url: str, clock: FakeClock
    ) -> Callable[..., FsspecHistoryProvider]:
        root = parse_url(history_url).root
        return lambda **options: FsspecHistoryProvider(sftp_fs, root, clock=clock, **options)

    @pytest.fixture
    def history_process_factory(self, history_url: str) -> tuple[str, dict[str, Any]]:
        return f"{__name__}:open_history", {"url": history_url}


@pytest.mark.asyncio
async def test_expiry_on_the_real_clock(tmp_path: Path) -> None:
    """The fsspec backend's one test on the real clock (the suites' expiry clauses run on a fake one)."""
    async with FsspecHistoryProvider(LocalFileSystem(), str(tmp_path / "history"), ttl=0.5) as history:
        await expires_on_the_real_clock(history)
