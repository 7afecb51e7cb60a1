"""S3ObjectDriver on real servers (SeaweedFS and moto): listing order and paging, conditions, bad keys, faults.

Listings are checked against the core's ``MemoryObjectDriver`` holding the same keys: it is the
reference implementation of the ``ObjectDriver.list`` contract.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from botocore.exceptions import ClientError, EndpointConnectionError

from agent_stores.core import StoreConflictError, StoreError, StoreUnavailableError
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.s3 import MAX_KEY_BYTES, S3AgentFileStore, S3ObjectDriver, S3SessionStore, check_key
from agent_stores.s3 import _driver as driver_module
from agent_stores.testing.servers import free_port
from s3_support import S3Target


@pytest_asyncio.fixture
async def driver(s3: S3Target) -> AsyncIterator[S3ObjectDriver]:
    client = s3.client()
    objects = S3ObjectDriver(client, s3.bucket, **s3.driver_options)
    yield objects
    await objects.aclose()
    client.close()


# Keys whose order differs between naive string handling and S3's UTF-8 byte order, with
# "/" (0x2f) sorting before "0" (0x30) and folding into common prefixes.
_NAMES = ["a", "a/1", "a/2", "a0", "b/", "b/x/y", "c", "é", "z", "\u00ff", "\u4e00", "😀", "A", "a.b", "a-b"]


async def _fill(objects: S3ObjectDriver, base: str) -> MemoryObjectDriver:
    reference = MemoryObjectDriver()
    for name in _NAMES:
        await objects.put(base + name, name.encode())
        await reference.put(base + name, name.encode())
    return reference


@pytest.mark.asyncio
@pytest.mark.parametrize("delimiter", ["/", None])
async def test_list_matches_the_reference_for_every_page_size(
    driver: S3ObjectDriver, s3_prefix: str, delimiter: str | None
) -> None:
    """Ordered, paged listing: every page size and start point gives exactly the reference's entries."""
    base = f"{s3_prefix}/list/"
    reference = await _fill(driver, base)
    assert await driver.list(base, delimiter=delimiter) == await reference.list(base, delimiter=delimiter)
    full = await reference.list(base, delimiter=delimiter)
    starts = [None, base, *full.keys, *full.prefixes, base + "a/1", base + "b", base + "zz"]
    for after in starts:
        for limit in (1, 2, 3, 100):
            expected = await reference.list(base, delimiter=delimiter, after=after, limit=limit)
            assert await driver.list(base, delimiter=delimiter, after=after, limit=limit) == expected, (after, limit)


@pytest.mark.asyncio
async def test_paging_by_after_walks_every_entry_once(driver: S3ObjectDriver, s3_prefix: str) -> None:
    """Pages of 2 chained by ``after`` (the largest entry of the last page) visit every entry once, in order."""
    base = f"{s3_prefix}/walk/"
    reference = await _fill(driver, base)
    full = await reference.list(base)
    expected = sorted(full.keys + full.prefixes)
    seen: list[str] = []
    after: str | None = None
    while True:
        page = await driver.list(base, after=after, limit=2)
        entries = sorted(page.keys + page.prefixes)
        seen += entries
        if len(entries) < 2:
            break
        after = entries[-1]
    assert seen == expected


@pytest.mark.asyncio
async def test_listing_follows_continuation_tokens(
    driver: S3ObjectDriver, s3_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A listing longer than one S3 page (shrunk to 3 here) is followed to its end, with and without a limit."""
    monkeypatch.setattr(driver_module, "_PAGE", 3)
    base = f"{s3_prefix}/pages/"
    reference = await _fill(driver, base)
    for delimiter in ("/", None):
        assert await driver.list(base, delimiter=delimiter) == await reference.list(base, delimiter=delimiter)
        expected = await reference.list(base, delimiter=delimiter, after=base + "a", limit=7)
        assert await driver.list(base, delimiter=delimiter, after=base + "a", limit=7) == expected


@pytest.mark.asyncio
async def test_seaweedfs_lists_in_component_order(seaweedfs: S3Target, s3_prefix: str) -> None:
    """Why SeaweedFS declares ``ordered_listing=False``: it puts ``a/`` where ``a`` sorts, before ``a-b``.

    If this fails, SeaweedFS now lists in S3's byte order and the declaration can go.
    """
    client = seaweedfs.client()
    try:
        for key in ("a/1", "a-b"):
            client.put_object(Bucket=seaweedfs.bucket, Key=f"{s3_prefix}/o/{key}", Body=b"")
        page = client.list_objects_v2(Bucket=seaweedfs.bucket, Prefix=f"{s3_prefix}/o/", Delimiter="/", MaxKeys=1)
    finally:
        client.close()
    assert [p["Prefix"] for p in page.get("CommonPrefixes", [])] == [f"{s3_prefix}/o/a/"]  # S3 would give a-b


@pytest.mark.asyncio
async def test_get_many_spread_over_the_threads_keeps_the_order(s3: S3Target, s3_prefix: str) -> None:
    """More keys than threads: each thread GETs a share, and the answer is still ``get`` of each, in order."""
    client = s3.client()
    objects = S3ObjectDriver(client, s3.bucket, max_concurrency=4, **s3.driver_options)
    try:
        keys = [f"{s3_prefix}/many/{i:03d}" for i in range(30)]
        await asyncio.gather(*(objects.put(k, k.encode()) for k in keys if not k.endswith("7")))
        asked = [*reversed(keys), f"{s3_prefix}/many/absent", keys[0], keys[0]]
        found = await objects.get_many(asked)
        assert found == [await objects.get(k) for k in asked]
        assert [None if f is None else f.data.decode() for f in found[:3]] == [keys[29], keys[28], None]
        assert await objects.get_many([keys[1]]) == [await objects.get(keys[1])]
        with pytest.raises(ValueError):
            await objects.get_many([keys[0], ""])
    finally:
        await objects.aclose()
        client.close()


@pytest.mark.asyncio
async def test_list_rejects_a_limit_that_is_not_positive(driver: S3ObjectDriver) -> None:
    with pytest.raises(ValueError, match="limit"):
        await driver.list("x/", limit=0)


@pytest.mark.asyncio
async def test_conditional_put_and_delete(driver: S3ObjectDriver, s3_prefix: str) -> None:
    """If-None-Match and If-Match: every failed condition is a conflict and changes nothing."""
    key = f"{s3_prefix}/cond"
    first = await driver.put(key, b"one", if_absent=True)
    with pytest.raises(StoreConflictError):
        await driver.put(key, b"two", if_absent=True)
    second = await driver.put(key, b"two", if_version=first)
    with pytest.raises(StoreConflictError):
        await driver.put(key, b"three", if_version=first)
    with pytest.raises(StoreConflictError):
        await driver.delete(key, if_version=first)
    assert await driver.get(key) == (b"two", second)
    assert await driver.head(key) == second
    with pytest.raises(StoreConflictError):  # If-Match on an absent key: 412 or NoSuchKey, a conflict either way
        await driver.put(f"{s3_prefix}/absent", b"x", if_version=second)
    with pytest.raises(StoreConflictError):
        await driver.delete(f"{s3_prefix}/absent", if_version=second)
    assert await driver.get(f"{s3_prefix}/absent") is None
    assert await driver.delete(key, if_version=second) is True
    assert await driver.get(key) is None
    assert await driver.head(key) is None
    assert await driver.delete(key) is False


@pytest.mark.asyncio
async def test_exactly_one_exclusive_create_wins(driver: S3ObjectDriver, s3_prefix: str) -> None:
    key = f"{s3_prefix}/race"
    results = await asyncio.gather(
        *(driver.put(key, str(i).encode(), if_absent=True) for i in range(8)), return_exceptions=True
    )
    winners = [i for i, r in enumerate(results) if isinstance(r, str)]
    assert len(winners) == 1
    assert all(isinstance(r, StoreConflictError) for r in results if not isinstance(r, str))
    stored = await driver.get(key)
    assert stored is not None and stored.data == str(winners[0]).encode()


@pytest.mark.asyncio
@pytest.mark.parametrize("conditional_delete", [True, False])
async def test_concurrent_deletes_report_one_deletion(s3: S3Target, s3_prefix: str, conditional_delete: bool) -> None:
    """With conditional deletes exactly one of racing deletes reports the key existed; the fallback at least one."""
    client = s3.client()
    objects = S3ObjectDriver(client, s3.bucket, **(s3.driver_options | {"conditional_delete": conditional_delete}))
    try:
        for round_ in range(3):
            key = f"{s3_prefix}/del{round_}"
            await objects.put(key, b"x")
            results = await asyncio.gather(*(objects.delete(key) for _ in range(6)))
            if conditional_delete:
                assert results.count(True) == 1
            else:
                assert results.count(True) >= 1
            assert await objects.get(key) is None
        key = f"{s3_prefix}/versioned"
        version = await objects.put(key, b"v1")
        with pytest.raises(StoreConflictError):
            await objects.delete(key, if_version='"not-the-etag"')
        assert await objects.delete(key, if_version=version) is True
    finally:
        await objects.aclose()
        client.close()


_PATH_ALIASES = ["../escape", "a/../../escape", "a/./b", "/absolute", "a//b"]


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "bad",
    [
        "nul\x00byte",
        "x" * (MAX_KEY_BYTES + 1),
        "é" * (MAX_KEY_BYTES // 2 + 1),
        "lone\ud800surrogate",
        "",
        *_PATH_ALIASES,
    ],
)
async def test_bad_keys_are_value_errors_and_write_nothing(driver: S3ObjectDriver, s3_prefix: str, bad: str) -> None:
    """Keys S3 cannot store are refused everywhere; keys a path-keyed server would alias, there (SeaweedFS)."""
    base = f"{s3_prefix}/bad/"
    key = base + bad if bad else bad
    if bad in _PATH_ALIASES and not driver.path_keys:
        assert await driver.put(key, b"x")  # S3 proper stores it verbatim: nothing to refuse
        assert (await driver.list(base, delimiter=None)).keys == [key]
        stored = await driver.get(key)
        assert stored is not None and stored.data == b"x"
        return
    with pytest.raises(ValueError):
        await driver.put(key, b"x")
    for call in (driver.get(key), driver.head(key), driver.delete(key)):
        with pytest.raises(ValueError):
            await call
    assert await driver.list(s3_prefix + "/", delimiter=None) == ([], [])


def test_check_key_accepts_what_s3_stores_verbatim() -> None:
    for key in ("a", "a/b", "dir/", "x" * MAX_KEY_BYTES, "é" * (MAX_KEY_BYTES // 2), "~fyxa/..json", "a b/c~d"):
        assert check_key(key) == key
        assert check_key(key, path_keys=True) == key
    for key in _PATH_ALIASES:
        assert check_key(key) == key
        with pytest.raises(ValueError):
            check_key(key, path_keys=True)


@pytest.mark.asyncio
async def test_file_paths_over_the_key_limit_or_escaping_are_refused(s3: S3Target, s3_prefix: str) -> None:
    """Files: ``..``, rooted paths, NUL and paths past 1,024 bytes are ``ValueError``; nothing is written."""
    async with s3.files(s3_prefix) as files:
        for bad in ("../up.txt", "/etc/passwd", "a/../../b", "n\x00ul", "d/" + "x" * MAX_KEY_BYTES):
            with pytest.raises(ValueError):
                await files.write(bad, "text")
        assert await files.list_children("") == []
        assert await files.driver.list(f"{s3_prefix}/", delimiter=None) == ([], [])


@pytest.mark.asyncio
async def test_a_missing_bucket_is_a_clear_error_naming_it(s3: S3Target) -> None:
    bucket = f"agent-stores-missing-{uuid.uuid4().hex[:8]}"
    client = s3.client()
    try:
        objects = S3ObjectDriver(client, bucket)
        for call in (objects.get("k"), objects.put("k", b"x"), objects.list("")):
            with pytest.raises(StoreError, match=bucket) as caught:
                await call
            assert not isinstance(caught.value, StoreUnavailableError)  # retrying never creates it
            assert isinstance(caught.value.__cause__, ClientError)
        with pytest.raises(ClientError):
            client.head_bucket(Bucket=bucket)  # nothing was created
        await objects.aclose()
    finally:
        client.close()


@pytest.mark.asyncio
async def test_create_bucket_creates_it_on_first_use(s3: S3Target) -> None:
    bucket = f"agent-stores-created-{uuid.uuid4().hex[:8]}"
    async with S3AgentFileStore.from_url(s3.url(), session=s3.session(), create_bucket=True) as _:
        pass  # nothing is contacted before first use
    files = S3AgentFileStore.from_url(s3.url().replace(s3.bucket, bucket, 1), session=s3.session(), create_bucket=True)
    async with files:
        await files.write("a.txt", "made")
        assert await files.read("a.txt") == "made"


@pytest.mark.asyncio
async def test_wrong_credentials_are_a_store_error_never_unavailable(seaweedfs: S3Target) -> None:
    """SeaweedFS checks signatures (moto accepts any): a wrong secret is a StoreError (not retried), cause chained."""
    import boto3

    kwargs = seaweedfs.endpoint.client_kwargs() | {"aws_secret_access_key": "wrong"}
    store = S3SessionStore.from_url(seaweedfs.url("creds"), session=boto3.Session(**kwargs), max_attempts=1)
    async with store:
        with pytest.raises(StoreError, match="credentials") as caught:
            await store.get("any")
        assert not isinstance(caught.value, StoreUnavailableError)
        assert isinstance(caught.value.__cause__, ClientError)


@pytest.mark.asyncio
async def test_an_unreachable_endpoint_is_store_unavailable() -> None:
    import boto3

    url = f"s3://some-bucket/p?endpoint_url=http://127.0.0.1:{free_port()}&region=us-east-1"
    session = boto3.Session(aws_access_key_id="k", aws_secret_access_key="s", region_name="us-east-1")
    async with S3AgentFileStore.from_url(url, session=session, max_attempts=1, connect_timeout=1) as files:
        with pytest.raises(StoreUnavailableError) as caught:
            await files.read("a.txt")
        assert isinstance(caught.value.__cause__, EndpointConnectionError)


@pytest.mark.asyncio
async def test_a_borrowed_client_stays_open(s3: S3Target, s3_prefix: str) -> None:
    client = s3.client()
    try:
        async with S3AgentFileStore(client, s3.bucket, prefix=s3_prefix) as files:
            await files.write("x.txt", "x")
        assert client.get_object(Bucket=s3.bucket, Key=f"{s3_prefix}/files/x.txt")["Body"].read() == b"x"
        with pytest.raises(StoreUnavailableError, match="closed"):
            await files.read("x.txt")
    finally:
        client.close()


@pytest.mark.asyncio
async def test_a_put_cancelled_while_it_waits_for_a_thread_is_not_made(s3: S3Target, s3_prefix: str) -> None:
    """A caller cancelled before a worker thread takes its call writes nothing; the call ahead of it still answers."""
    options: dict[str, Any] = {**s3.driver_options, "max_concurrency": 1}  # one worker thread
    driver = S3ObjectDriver(s3.client(), s3.bucket, owns_client=True, **options)
    busy, release = threading.Event(), threading.Event()

    def hold(client: object) -> str:
        busy.set()
        release.wait()
        return "held"

    try:
        holding = asyncio.ensure_future(driver._run(hold))  # pyright: ignore[reportPrivateUsage]
        await asyncio.to_thread(busy.wait)  # the only worker thread is taken
        queued = asyncio.ensure_future(driver.put(f"{s3_prefix}/cancelled", b"x", if_absent=True))
        await asyncio.sleep(0)  # one turn of the loop: the PUT is handed to the (busy) pool
        queued.cancel()
        release.set()
        assert await holding == "held"
        with pytest.raises(asyncio.CancelledError):
            await queued
        assert await driver.put(f"{s3_prefix}/after", b"y")  # the thread is free again
        assert await driver.get(f"{s3_prefix}/cancelled") is None
    finally:
        release.set()
        await driver.aclose()


@pytest.mark.asyncio
async def test_errors_raised_in_the_worker_thread_reach_the_caller(driver: S3ObjectDriver, s3_prefix: str) -> None:
    """A failing call is translated (a conflict) or propagates as raised (anything else)."""
    await driver.put(f"{s3_prefix}/taken", b"x", if_absent=True)
    with pytest.raises(StoreConflictError):
        await driver.put(f"{s3_prefix}/taken", b"y", if_absent=True)

    def fail(client: object) -> None:
        raise LookupError("raised in the worker")

    with pytest.raises(LookupError, match="raised in the worker"):
        await driver._run(fail)  # pyright: ignore[reportPrivateUsage]


@pytest.mark.asyncio
async def test_keys_are_the_real_paths(s3: S3Target, s3_prefix: str) -> None:
    """The bucket stays browsable: files at ``<prefix>/files/<path>``, sessions under ``<prefix>/sessions/``."""
    from agent_framework import AgentSession

    async with s3.files(s3_prefix) as files, s3.sessions(s3_prefix) as sessions:
        await files.write("notes/today.md", "# Today")
        await sessions.set("s1", AgentSession(session_id="s1"))
    client = s3.client(skimmed=False)  # botocore's own answer, Contents and all
    try:
        listed = client.list_objects_v2(Bucket=s3.bucket, Prefix=f"{s3_prefix}/")
        keys = sorted(o["Key"] for o in listed.get("Contents", []))
    finally:
        client.close()
    assert keys == [f"{s3_prefix}/files/notes/today.md", f"{s3_prefix}/sessions/s1.json"]


@pytest.mark.asyncio
async def test_search_reads_every_candidate_once_in_parallel_windows(s3: S3Target, s3_prefix: str) -> None:
    """Search over more files than one prefetch window finds exactly the matching files."""
    async with s3.files(s3_prefix) as files:
        await asyncio.gather(
            *(files.write(f"docs/f{i:03}.txt", "needle here\n" if i % 3 == 0 else "hay\n") for i in range(80))
        )
        await files.write("docs/sub/deep.txt", "needle deep\n")
        found = await files.search("docs", "NEEDLE")
        assert sorted(r.file_name for r in found) == [f"f{i:03}.txt" for i in range(0, 80, 3)]
        deep = await files.search("docs", "needle", recursive=True)
        assert len(deep) == 28 and "sub/deep.txt" in {r.file_name for r in deep}
        # Reads outside a search are plain reads again.
        assert await files.read("docs/f000.txt") == "needle here\n"


@pytest.mark.asyncio
async def test_a_server_that_goes_away_is_store_unavailable_and_loses_nothing_written() -> None:
    """A server stopped between operations: the next one is StoreUnavailableError (cause chained), not a hang."""
    import boto3

    from agent_stores.testing.servers import ServerUnavailable
    from agent_stores.testing.servers.s3 import moto_local, s3_endpoint

    try:
        context = moto_local()
        server = context.__enter__()
    except ServerUnavailable as err:
        pytest.skip(str(err))
    endpoint = s3_endpoint(server)
    session = boto3.Session(**endpoint.client_kwargs())
    url = f"s3://gone/p?endpoint_url={endpoint.endpoint_url}&region=us-east-1&create_bucket=true"
    files = S3AgentFileStore.from_url(url, session=session, max_attempts=2, connect_timeout=1, read_timeout=2)
    try:
        await files.write("kept.txt", "written before the outage")
        assert await files.read("kept.txt") == "written before the outage"
    finally:
        context.__exit__(None, None, None)
    try:
        for call in (files.read("kept.txt"), files.write("new.txt", "x"), files.list_children("")):
            with pytest.raises(StoreUnavailableError) as caught:
                await call
            assert caught.value.__cause__ is not None
    finally:
        await files.aclose()
