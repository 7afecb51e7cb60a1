"""fsspec stores with ``must_exist``: the root folder (local, SFTP, memory) must exist, and nothing is created."""

from __future__ import annotations

import os
import uuid
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path

import pytest
from fsspec.implementations.memory import MemoryFileSystem

from agent_stores.core import StoreNotFoundError, open_stores
from agent_stores.fsspec import FsspecAgentFileStore, FsspecBackend, FsspecObjectDriver
from agent_stores.testing.servers import Server
from agent_stores.testing.servers.sftp import sftp_server, with_path

#: The ``reads_not_found`` fixture (``tests/conftest.py``): ``await reads_not_found(url, match)``.
NotFound = Callable[..., Awaitable[None]]


def listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


@pytest.mark.asyncio
async def test_a_missing_local_folder_is_an_error_and_stays_missing(tmp_path: Path, reads_not_found: NotFound) -> None:
    await reads_not_found(f"file://{tmp_path / 'typo'}", "folder '.*typo' does not exist")
    async with FsspecAgentFileStore.from_url(f"file://{tmp_path / 'typo'}", must_exist=True) as files:
        with pytest.raises(StoreNotFoundError):
            await files.write("a.md", "not written")  # a write does not create the store either
    assert listing(tmp_path) == []


@pytest.mark.asyncio
async def test_a_file_where_the_folder_should_be_is_an_error(tmp_path: Path, reads_not_found: NotFound) -> None:
    (tmp_path / "agent").write_text("a file")
    await reads_not_found(f"file://{tmp_path / 'agent'}", "is not a folder")


@pytest.mark.asyncio
async def test_a_folder_that_exists_reads_and_writes_as_usual(tmp_path: Path) -> None:
    async with open_stores(f"file://{tmp_path}", must_exist=True) as stores:
        assert await stores.file_store().list_children("") == []
        await stores.tenant("acme").file_store().write("a.md", "x")
        assert await stores.tenant("acme").file_store().read("a.md") == "x"


@pytest.mark.asyncio
async def test_a_borrowed_filesystem_is_checked_too() -> None:
    fs = MemoryFileSystem(skip_instance_cache=True)
    driver = FsspecObjectDriver(fs, f"/{uuid.uuid4().hex}", must_exist=True)
    with pytest.raises(StoreNotFoundError, match="does not exist"):
        await driver.get("k")
    assert not fs.exists(driver.root)


@pytest.fixture(scope="module")
def sftp() -> Iterator[Server]:
    with sftp_server() as server:
        yield server


@pytest.mark.asyncio
async def test_a_missing_sftp_folder_is_an_error_and_stays_missing(sftp: Server, reads_not_found: NotFound) -> None:
    name = f"missing-{uuid.uuid4().hex[:8]}"
    url = with_path(sftp.url, name)
    await reads_not_found(url, f"folder '.*{name}' does not exist")
    async with open_stores(url) as stores:  # created only by a store opened to write
        await stores.file_store().write("a.md", "x")
    async with open_stores(url, must_exist=True) as stores:
        assert await stores.file_store().read("a.md") == "x"


def test_the_location_of_a_local_folder_is_its_real_path(tmp_path: Path) -> None:
    os.symlink(tmp_path, tmp_path.parent / f"{tmp_path.name}-link")
    spellings = [f"file://{tmp_path}/", f"file://localhost{tmp_path}", f"file://{tmp_path.parent}/{tmp_path.name}-link"]
    assert {FsspecBackend(url).location() for url in spellings} == {f"file://{tmp_path}"}
