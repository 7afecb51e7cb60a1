"""The conformance suites on s3fs against SeaweedFS (the S3 fixture), through fsspec+s3:// URLs.

The object driver and file store suites run every time: they are what s3fs changes (its
conditional writes, listings and directories). The session and history suites are the core's
stores over that driver, proven on every run on the local, memory and SFTP filesystems and on
SeaweedFS through the S3 backend; over s3fs they run with ``AGENT_STORES_HEAVY=1``.

s3fs is used through its async API; its conditional ``PutObject`` (``If-None-Match``,
``If-Match``) makes exclusive create atomic across processes, so history runs the two-process
clauses too.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any
from urllib.parse import quote

import pytest
from fsspec import AbstractFileSystem

from agent_stores.core import StoreConflictError, open_stores
from agent_stores.fsspec import (
    FilesystemCapabilities,
    FsspecAgentFileStore,
    FsspecBackend,
    FsspecHistoryProvider,
    FsspecObjectDriver,
    FsspecSessionStore,
    parse_url,
)
from agent_stores.testing import (
    FakeClock,
    FileStoreConformance,
    HistoryProviderConformance,
    ObjectDriverConformance,
    SessionStoreConformance,
    corrupt_object_session,
    declared,
)
from agent_stores.testing.servers.s3 import provide_seaweedfs, s3_endpoint

S3 = FilesystemCapabilities.s3()

_HEAVY = os.environ.get("AGENT_STORES_HEAVY", "").strip().lower() in {"1", "true", "yes", "on"}
every_store_suite = pytest.mark.skipif(
    not _HEAVY, reason="store suite over s3fs: set AGENT_STORES_HEAVY=1 (its driver and file suites run always)"
)


@pytest.fixture(scope="module")
def bucket_url() -> Iterator[str]:
    """An ``fsspec+s3://`` URL of a fresh bucket on the S3 server (credentials as storage options)."""
    with provide_seaweedfs() as server:
        endpoint = s3_endpoint(server)
        bucket = f"fsspec-{uuid.uuid4().hex[:12]}"
        query = [f"endpoint_url={quote(endpoint.endpoint_url or '', safe=':/')}"]
        if endpoint.access_key is not None:
            query += [f"key={quote(endpoint.access_key)}", f"secret={quote(endpoint.secret_key or '')}"]
        url = f"fsspec+s3://{bucket}?{'&'.join(query)}"
        fs: Any = parse_url(f"fsspec+s3://{bucket}/x?{'&'.join(query)}").create()
        fs.mkdir(bucket)
        yield url


def under(url: str, path: str) -> str:
    base, _, query = url.partition("?")
    return f"{base}/{path}?{query}"


@pytest.fixture(scope="module")
def s3_fs(bucket_url: str) -> AbstractFileSystem:
    return parse_url(under(bucket_url, "x")).create()


class TestS3Files(FileStoreConformance):
    capabilities = declared(FsspecBackend.declared_on(S3), "files")

    @pytest.fixture
    def file_store_factory(self, s3_fs: AbstractFileSystem, bucket_url: str) -> Callable[..., FsspecAgentFileStore]:
        root = parse_url(under(bucket_url, f"files-{uuid.uuid4().hex}")).root
        return lambda **options: FsspecAgentFileStore(s3_fs, root, **options)


@every_store_suite
class TestS3Sessions(SessionStoreConformance):
    capabilities = declared(FsspecBackend.declared_on(S3), "sessions")

    @pytest.fixture
    def session_store_factory(self, bucket_url: str) -> Callable[[], FsspecSessionStore]:
        url = under(bucket_url, f"sessions-{uuid.uuid4().hex}")
        return lambda: FsspecSessionStore.from_url(url)

    @pytest.fixture
    def corrupt_session(self) -> Any:
        return corrupt_object_session


def open_history(url: str, **options: Any) -> FsspecHistoryProvider:
    return FsspecHistoryProvider.from_url(url, **options)


@every_store_suite
class TestS3History(HistoryProviderConformance):
    capabilities = declared(FsspecBackend.declared_on(S3), "history")
    fake_clock = True

    @pytest.fixture
    def history_url(self, bucket_url: str) -> str:
        return under(bucket_url, f"history-{uuid.uuid4().hex}")

    @pytest.fixture
    def history_factory(
        self, s3_fs: AbstractFileSystem, history_url: str, clock: FakeClock
    ) -> Callable[..., FsspecHistoryProvider]:
        root = parse_url(history_url).root
        return lambda **options: FsspecHistoryProvider(s3_fs, root, clock=clock, **options)

    @pytest.fixture
    def history_process_factory(self, history_url: str) -> tuple[str, dict[str, Any]]:
        return f"{__name__}:open_history", {"url": history_url}


@pytest.mark.asyncio
async def test_s3_driver_is_async_and_conditional(bucket_url: str) -> None:
    driver = FsspecObjectDriver.from_url(under(bucket_url, f"driver-{uuid.uuid4().hex}"))
    assert driver.capabilities == S3
    version = await driver.put("a/b.txt", b"one")
    with pytest.raises(StoreConflictError):
        await driver.put("a/b.txt", b"two", if_absent=True)
    with pytest.raises(StoreConflictError):
        await driver.put("a/b.txt", b"two", if_version="0" * 32)
    with pytest.raises(StoreConflictError):
        await driver.put("missing.txt", b"two", if_version=version)
    new = await driver.put("a/b.txt", b"two", if_version=version)
    assert await driver.get("a/b.txt") == (b"two", new)
    await driver.put("a/", b"")
    assert await driver.list("a/") == (["a/", "a/b.txt"], [])
    assert await driver.delete("a/b.txt")
    assert not await driver.delete("a/b.txt")
    await driver.aclose()


@pytest.mark.asyncio
async def test_open_stores_on_s3(bucket_url: str) -> None:
    async with open_stores(under(bucket_url, f"backend-{uuid.uuid4().hex}")) as stores:
        assert isinstance(stores.backend, FsspecBackend)
        files = stores.file_store()
        await files.write("notes/a.md", "memo")
        assert await files.read("notes/a.md") == "memo"


@pytest.mark.asyncio
async def test_must_exist_on_a_missing_bucket_is_an_error_and_creates_nothing(
    bucket_url: str, s3_fs: Any, reads_not_found: Callable[..., Awaitable[None]]
) -> None:
    bucket = bucket_url.split("://", 1)[1].split("?", 1)[0]
    missing = f"fsspec-missing-{uuid.uuid4().hex[:8]}"
    await reads_not_found(bucket_url.replace(f"://{bucket}?", f"://{missing}/agent?", 1), missing)
    assert not s3_fs.exists(missing)
    async with open_stores(under(bucket_url, "fresh-prefix"), must_exist=True) as stores:
        assert await stores.session_store().get("s") is None  # a prefix needs no folder: the bucket is the store


_S3_KEY_RULES = (
    "The driver's key rules are the same on every filesystem: an empty path segment ('a//b') is a "
    "ValueError and a directory marker ('a/') holds no bytes, although S3 itself could store both; "
    "the core's stores never make such keys."
)


class TestS3ObjectDriver(ObjectDriverConformance):
    # Keys go under the root folder objects-<32 hex>/ (41 bytes of S3's 1,024).
    capabilities = declared(FsspecBackend.declared_on(S3), "object_driver", max_key_bytes=1024 - 41)
    divergences = {
        name: _S3_KEY_RULES
        for name in (
            "test_keys_are_exact",
            "test_list_without_delimiter_returns_every_key_under_the_prefix",
            "test_list_with_delimiter_folds_deeper_keys_into_common_prefixes",
            "test_list_prefix_is_literal",
            "test_paged_listing_equals_the_unpaged_listing",
            "test_list_matches_the_specification",
        )
    }

    @pytest.fixture
    def object_driver_factory(self, bucket_url: str) -> Callable[[], FsspecObjectDriver]:
        url = under(bucket_url, f"objects-{uuid.uuid4().hex}")
        return lambda: FsspecObjectDriver.from_url(url)
