"""fsspec backend behaviour beyond the conformance suites: URLs, layout, interop, path safety, faults."""

from __future__ import annotations

import asyncio
import errno
import os
import threading
from pathlib import Path
from typing import Any, NoReturn

import pytest
from agent_framework import AgentSession, FileSystemAgentFileStore, Message
from fsspec.implementations.local import LocalFileSystem
from fsspec.implementations.memory import MemoryFileSystem
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_stores.core import StoreConflictError, StoreUnavailableError, open_stores
from agent_stores.core.memory import MemoryBackend, MemoryObjectDriver
from agent_stores.fsspec import (
    FilesystemCapabilities,
    FsspecAgentFileStore,
    FsspecBackend,
    FsspecHistoryProvider,
    FsspecObjectDriver,
    FsspecSessionStore,
    parse_url,
)
from agent_stores.fsspec import _local as local_ops
from agent_stores.testing.servers import ServerUnavailable, is_required
from agent_stores.testing.servers.sftp import local_sshd, with_path

pytestmark = pytest.mark.asyncio


def _tree(path: Path) -> list[str]:
    """Every file and directory below ``path``, relative, sorted."""
    return sorted(str(p.relative_to(path)) for p in path.rglob("*"))


# -- URLs ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "protocol", "root"),
    [
        ("file:///srv/agent", "file", "/srv/agent"),
        ("file://localhost/srv/agent/", "file", "/srv/agent"),
        ("file:///with%20space", "file", "/with space"),
        ("FILE:///upper", "file", "/upper"),
        ("fsspec+memory://agent", "memory", "/agent"),
        ("fsspec+file:///srv/x", "file", "/srv/x"),
        ("fsspec+sftp://me@example.invalid:2222/srv/agent?timeout=5", "sftp", "/srv/agent"),
    ],
)
async def test_url_forms_name_filesystem_and_root(url: str, protocol: str, root: str) -> None:
    spec = parse_url(url)
    assert (spec.protocol, spec.root) == (protocol, root)


async def test_url_query_parameters_become_storage_options_and_keywords_win() -> None:
    url = "fsspec+sftp://me@example.invalid:2222/srv?timeout=5&look_for_keys=false&key_filename=/k"
    spec = parse_url(url, timeout=9)
    assert spec.options["timeout"] == 9
    assert spec.options["look_for_keys"] is False
    assert spec.options["key_filename"] == "/k"
    assert (spec.options["host"], spec.options["port"], spec.options["username"]) == ("example.invalid", 2222, "me")
    assert spec.options["skip_instance_cache"] is True  # never fsspec's shared cached instance


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("file://host/srv", "take no host"),
        ("file:///", "absolute directory"),
        ("fsspec+memory://", "root directory"),
        ("fsspec+nosuchprotocol://x", "cannot open a filesystem"),
        ("file:///srv#frag", "no fragment"),
        ("file:///srv?x", "malformed query"),
        ("sqlite:///x.db", "not an fsspec store URL"),
        ("fsspec+fsspec://x", "not a protocol"),
        ("no-scheme", "not an fsspec store URL"),
    ],
)
async def test_bad_urls_are_clear_value_errors(url: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_url(url)


async def test_open_stores_routes_file_and_fsspec_urls_here_and_memory_to_core(tmp_path: Path) -> None:
    async with open_stores(f"file://{tmp_path}/a") as stores:
        assert isinstance(stores.backend, FsspecBackend)
    async with open_stores(f"fsspec+memory://{tmp_path.name}") as stores:
        assert isinstance(stores.backend, FsspecBackend)
        assert stores.backend.driver.capabilities == FilesystemCapabilities.memory()
    async with open_stores("memory://") as stores:
        assert isinstance(stores.backend, MemoryBackend)  # the core's in-process stores, not fsspec's memory


async def test_open_stores_lays_out_one_root_and_connects_nothing_early(tmp_path: Path) -> None:
    root = tmp_path / "agent"
    async with open_stores(f"file://{root}") as stores:
        assert not root.exists()  # nothing touched before first use
        history = stores.history_provider(max_messages=10)
        files, sessions = stores.file_store(), stores.session_store()
        assert isinstance(history, FsspecHistoryProvider)
        assert isinstance(files, FsspecAgentFileStore)
        assert isinstance(sessions, FsspecSessionStore)
        await history.save_messages("s", [Message("user", ["hello"], message_id="m-1")])
        await files.write("notes/a.md", "memo")
        await sessions.set("s", AgentSession(session_id="s"))
        assert [m.message_id for m in await history.get_messages("s")] == ["m-1"]
    assert sorted(p.name for p in root.iterdir()) == ["files", "history", "sessions"]
    assert (root / "files" / "notes" / "a.md").read_text() == "memo"
    assert [p.name for p in (root / "sessions").iterdir()] == ["s.json"]
    with pytest.raises(StoreUnavailableError, match="closed"):
        await files.read("notes/a.md")


async def test_backend_rejects_unknown_store_options(tmp_path: Path) -> None:
    backend = FsspecBackend(f"file://{tmp_path}")
    with pytest.raises(ValueError, match="unknown file store options"):
        backend.file_store(prefix="x/")
    with pytest.raises(ValueError, match="unknown session store options"):
        backend.session_store(prefix="x/")
    await backend.aclose()


# -- interoperability with the framework's FileSystemAgentFileStore ----------------------


async def test_framework_file_store_reads_what_we_wrote(tmp_path: Path) -> None:
    ours = FsspecAgentFileStore(LocalFileSystem(), str(tmp_path))
    theirs = FileSystemAgentFileStore(tmp_path)
    await ours.write("notes/today.md", "line one\nneedle two\r\n")
    await ours.write("top.txt", "top")
    await ours.create_directory("empty/inner")
    assert await theirs.read("notes/today.md") == "line one\nneedle two\r\n"
    assert sorted(await theirs.list_children(""), key=repr) == sorted(await ours.list_children(""), key=repr)
    assert await theirs.list_children("empty") == await ours.list_children("empty")
    assert await theirs.search("notes", "needle") == await ours.search("notes", "needle")
    with pytest.raises(FileExistsError):
        await theirs.write("top.txt", "again", overwrite=False)


async def test_we_read_what_the_framework_file_store_wrote(tmp_path: Path) -> None:
    theirs = FileSystemAgentFileStore(tmp_path)
    ours = FsspecAgentFileStore(LocalFileSystem(), str(tmp_path))
    await theirs.write("memories/user.md", "likes tea\n")
    await theirs.write("a.txt", "a")
    await theirs.create_directory("empty")
    assert await ours.read("memories/user.md") == "likes tea\n"
    assert sorted(await ours.list_children(""), key=repr) == sorted(await theirs.list_children(""), key=repr)
    assert await ours.find_matching_files("", "tea", "*.md", recursive=True) == ["memories/user.md"]
    assert await ours.delete("a.txt")
    assert not await theirs.file_exists("a.txt")
    with pytest.raises(FileExistsError):
        await ours.write("memories/user.md", "x", overwrite=False)


# -- paths that would escape the root -----------------------------------------------------


@pytest.mark.parametrize(
    "key", ["../outside.txt", "a/../../outside.txt", "/etc/passwd", "a\x00b", "a\\..\\b", "a//b", "./a", ""]
)
async def test_driver_refuses_keys_that_could_escape_and_writes_nothing(tmp_path: Path, key: str) -> None:
    root = tmp_path / "root"
    root.mkdir()
    driver = FsspecObjectDriver(LocalFileSystem(), str(root))
    with pytest.raises(ValueError):
        await driver.put(key, b"x")
    with pytest.raises(ValueError):
        await driver.get(key)
    with pytest.raises(ValueError):
        await driver.delete(key)
    assert _tree(tmp_path) == ["root"]


async def test_file_store_refuses_escaping_paths_and_writes_nothing_outside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    store = FsspecAgentFileStore(LocalFileSystem(), str(root))
    for path in ("../outside.txt", "/abs.txt", "C:/x.txt", "a/../../b.txt", "nul\x00.txt"):
        with pytest.raises(ValueError):
            await store.write(path, "escape")
    assert _tree(tmp_path) == []


async def test_symbolic_link_pointing_outside_is_refused(tmp_path: Path) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "file-link").symlink_to(outside / "secret.txt")
    store = FsspecAgentFileStore(LocalFileSystem(), str(root))
    with pytest.raises(ValueError, match="outside"):
        await store.write("link/planted.txt", "x")
    with pytest.raises(ValueError, match="outside"):
        await store.read("link/secret.txt")
    with pytest.raises(ValueError, match="outside"):
        await store.read("file-link")
    with pytest.raises(ValueError, match="outside"):
        await store.delete("link/secret.txt")
    with pytest.raises(ValueError, match="outside"):
        await store.list_children("link")
    assert _tree(outside) == ["secret.txt"]
    assert (outside / "secret.txt").read_text() == "secret"


async def test_symbolic_link_inside_the_root_is_followed(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    store = FsspecAgentFileStore(LocalFileSystem(), str(tmp_path))
    await store.write("alias/a.txt", "via link")
    assert (tmp_path / "real" / "a.txt").read_text() == "via link"


async def test_temporary_file_names_are_reserved(tmp_path: Path) -> None:
    driver = FsspecObjectDriver(LocalFileSystem(), str(tmp_path))
    with pytest.raises(ValueError, match="reserved"):
        await driver.put(f"a/.~agent-stores-{'0' * 32}.tmp", b"x")


async def test_overlong_name_is_a_value_error(tmp_path: Path) -> None:
    store = FsspecAgentFileStore(LocalFileSystem(), str(tmp_path))
    with pytest.raises(ValueError, match="too long"):
        await store.write("x" * 300 + ".txt", "x")
    assert _tree(tmp_path) == []


# -- atomic writes, versions, conflicts ---------------------------------------------------


async def test_readers_never_see_a_partial_file(tmp_path: Path) -> None:
    driver = FsspecObjectDriver(LocalFileSystem(), str(tmp_path))
    contents = [b"a" * 3_000_000, b"b" * 2_000_000]
    await driver.put("big.bin", contents[0])
    seen: set[int] = set()
    stop = threading.Event()

    def reader() -> None:
        path = tmp_path / "big.bin"
        while not stop.is_set():
            data = path.read_bytes()
            assert data in contents, f"partial read of {len(data)} bytes"
            seen.add(len(data))

    thread = threading.Thread(target=reader)
    thread.start()
    try:
        for i in range(30):
            await driver.put("big.bin", contents[i % 2])
    finally:
        stop.set()
        thread.join()
    assert _tree(tmp_path) == ["big.bin"]  # no temporary file left behind


async def test_versions_change_on_every_write_even_with_the_same_bytes(tmp_path: Path) -> None:
    driver = FsspecObjectDriver(LocalFileSystem(), str(tmp_path))
    versions = [await driver.put("k", b"same") for _ in range(50)]
    assert len(set(versions)) == 50
    assert await driver.head("k") == versions[-1]
    with pytest.raises(StoreConflictError):
        await driver.put("k", b"stale", if_version=versions[0])
    with pytest.raises(StoreConflictError):
        await driver.delete("k", if_version=versions[0])
    assert (await driver.get("k")) == (b"same", versions[-1])


async def test_compare_and_set_has_one_winner_across_drivers(tmp_path: Path) -> None:
    drivers = [FsspecObjectDriver(LocalFileSystem(), str(tmp_path)) for _ in range(8)]
    version = await drivers[0].put("k", b"0")
    results = await asyncio.gather(
        *(d.put("k", str(i).encode(), if_version=version) for i, d in enumerate(drivers)), return_exceptions=True
    )
    winners = [r for r in results if isinstance(r, str)]
    assert len(winners) == 1
    assert all(isinstance(r, StoreConflictError) for r in results if not isinstance(r, str))
    assert await drivers[0].head("k") == winners[0]


async def test_write_that_fails_midway_leaves_the_old_file_and_no_temporary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    driver = FsspecObjectDriver(LocalFileSystem(), str(tmp_path))
    await driver.put("doc.txt", b"old content")
    real_write = os.write
    calls = {"n": 0}

    def failing_write(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] > 1:
            raise OSError(errno.EIO, "I/O error")
        return real_write(fd, bytes(data)[:10])  # a short write first, then the disk fails

    monkeypatch.setattr(local_ops.os, "write", failing_write)
    with pytest.raises(StoreUnavailableError) as caught:
        await driver.put("doc.txt", b"new content that never fully lands")
    assert isinstance(caught.value.__cause__, OSError)
    monkeypatch.undo()
    assert (tmp_path / "doc.txt").read_bytes() == b"old content"
    assert _tree(tmp_path) == ["doc.txt"]


# -- listing: the ObjectDriver contract, against the core's in-process driver ---------------

_SEGMENT = st.sampled_from(["a", "b", "a-b", "a.b", "é", "z", "ab", "A"])
_KEYS = st.lists(st.lists(_SEGMENT, min_size=1, max_size=3).map("/".join), max_size=20)


def _no_file_directory_conflicts(keys: list[str]) -> list[str]:
    chosen: list[str] = []
    for key in keys:
        if any(k.startswith(key + "/") or key.startswith(k + "/") or k == key for k in chosen):
            continue
        chosen.append(key)
    return chosen


@pytest.fixture
def listing_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("listing")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    keys=_KEYS,
    prefix=st.sampled_from(["", "a", "a/", "a/b", "b/", "é"]),
    delimiter=st.sampled_from(["/", None]),
    limit=st.one_of(st.none(), st.integers(1, 4)),
)
async def test_listing_pages_exactly_as_an_object_store(
    listing_root: Path, keys: list[str], prefix: str, delimiter: str | None, limit: int | None
) -> None:
    keys = _no_file_directory_conflicts(keys)
    root = listing_root / os.urandom(8).hex()
    ours = FsspecObjectDriver(LocalFileSystem(), str(root), markers=False)
    reference = MemoryObjectDriver()
    for key in keys:
        await ours.put(key, b"x")
        await reference.put(key, b"x")
    after: str | None = None
    while True:
        got = await ours.list(prefix, delimiter=delimiter, after=after, limit=limit)
        expected = await reference.list(prefix, delimiter=delimiter, after=after, limit=limit)
        assert got == expected
        entries = got.keys + got.prefixes
        if limit is None or len(entries) < limit:
            break
        after = max(entries)


async def test_markers_list_every_directory_and_deletes_keep_directories(tmp_path: Path) -> None:
    driver = FsspecObjectDriver(LocalFileSystem(), str(tmp_path))
    await driver.put("d/e/f.txt", b"x")
    await driver.put("empty/", b"")
    assert (await driver.list("", delimiter=None)).keys == ["d/", "d/e/", "d/e/f.txt", "empty/"]
    assert await driver.delete("d/e/f.txt")
    assert (tmp_path / "d" / "e").is_dir()
    assert await driver.delete("empty/")
    assert not (tmp_path / "empty").exists()
    with pytest.raises(ValueError, match="cannot hold data"):
        await driver.put("x/", b"data")


async def test_without_markers_deletes_remove_emptied_directories(tmp_path: Path) -> None:
    driver = FsspecObjectDriver(LocalFileSystem(), str(tmp_path / "root"), markers=False)
    await driver.put("a/b/c.txt", b"x")
    await driver.put("a/keep.txt", b"x")
    assert (await driver.list("", delimiter=None)).keys == ["a/b/c.txt", "a/keep.txt"]
    assert await driver.delete("a/b/c.txt")
    assert _tree(tmp_path / "root") == ["a", "a/keep.txt"]
    assert await driver.delete("a/keep.txt")
    assert _tree(tmp_path) == ["root"]


# -- capabilities and ownership -----------------------------------------------------------


async def test_capabilities_are_declared_per_filesystem(tmp_path: Path) -> None:
    assert FsspecObjectDriver(LocalFileSystem(), str(tmp_path)).capabilities == FilesystemCapabilities.local()
    assert FsspecObjectDriver(MemoryFileSystem(), "/x").capabilities == FilesystemCapabilities.memory()
    assert FsspecObjectDriver.from_url("fsspec+sftp://u@h.invalid/x").capabilities == FilesystemCapabilities.sftp()
    generic = FsspecObjectDriver.from_url(f"fsspec+dir://{tmp_path}?target_protocol=file&path=/x")
    assert generic.capabilities == FilesystemCapabilities.generic("dir")
    assert not generic.capabilities.atomic_create
    custom = FilesystemCapabilities.local()
    assert FsspecAgentFileStore(LocalFileSystem(), str(tmp_path), capabilities=custom).capabilities is custom


async def test_owned_store_left_open_warns(tmp_path: Path) -> None:
    store = FsspecSessionStore.from_url(f"file://{tmp_path}")
    with pytest.warns(ResourceWarning, match="was not closed"):
        store.__del__()
    await store.aclose()


# -- a filesystem that goes away mid-operation (SFTP server stopped) ------------------------


def _no_sshd(err: ServerUnavailable) -> NoReturn:
    """These tests stop and arrange their own server, so they need the local binary, not a URL."""
    if is_required("sftp"):
        pytest.fail(f"no local sshd, and AGENT_STORES_REQUIRE requires sftp: {err}", pytrace=False)
    pytest.skip(f"no local sshd: {err}")


async def test_sftp_server_going_away_is_store_unavailable_and_borrowed_client_survives_aclose() -> None:
    try:
        server_context = local_sshd()
        server = server_context.__enter__()
    except ServerUnavailable as err:
        _no_sshd(err)
    try:
        url = with_path(server.url, "gone")
        borrowed_fs = parse_url(url).create()
        borrowed = FsspecAgentFileStore(borrowed_fs, parse_url(url).root)
        await borrowed.write("a.txt", "before")
        await borrowed.aclose()
        assert borrowed_fs.client.get_transport().is_active()  # borrowed: never closed by us

        owned = FsspecAgentFileStore.from_url(url)
        assert await owned.read("a.txt") == "before"
    finally:
        server_context.__exit__(None, None, None)
    try:
        with pytest.raises(StoreUnavailableError) as caught:
            await owned.write("b.txt", "after the server stopped")
        assert caught.value.__cause__ is not None
        with pytest.raises(StoreUnavailableError):
            await owned.read("a.txt")
    finally:
        await owned.aclose()
        borrowed_fs.client.close()


async def test_sftp_owned_connection_is_closed_by_aclose() -> None:
    try:
        server_context = local_sshd()
        server = server_context.__enter__()
    except ServerUnavailable as err:
        _no_sshd(err)
    try:
        store = FsspecSessionStore.from_url(with_path(server.url, "owned"))
        await store.set("s", AgentSession(session_id="s"))
        fs: Any = store.objects.fs
        assert fs.client.get_transport().is_active()
        await store.aclose()
        assert fs.client.get_transport() is None or not fs.client.get_transport().is_active()
    finally:
        server_context.__exit__(None, None, None)


def _plant_links(root: Path, outside: Path) -> tuple[Path, Path]:
    """The server runs on this machine, so its files are ours to arrange: a link out, a link within."""
    root.mkdir()
    outside.mkdir()
    (outside / "secret.txt").write_text("secret")
    (root / "link").symlink_to(outside, target_is_directory=True)
    (root / "inside").mkdir()
    (root / "alias").symlink_to(root / "inside", target_is_directory=True)
    return root, outside


async def test_sftp_symbolic_link_pointing_outside_is_refused(tmp_path: Path) -> None:
    try:
        server_context = local_sshd()
        server = server_context.__enter__()
    except ServerUnavailable as err:
        _no_sshd(err)
    try:
        url = with_path(server.url, "links")
        root, outside = _plant_links(Path(parse_url(url).root), tmp_path / "outside")
        async with FsspecAgentFileStore.from_url(url) as store:
            with pytest.raises(ValueError, match="outside"):
                await store.write("link/planted.txt", "x")
            with pytest.raises(ValueError, match="outside"):
                await store.read("link/secret.txt")
            await store.write("alias/ok.txt", "inside")  # a link that stays inside the root is fine
        assert _tree(outside) == ["secret.txt"]
        assert (root / "inside" / "ok.txt").read_text() == "inside"
    finally:
        server_context.__exit__(None, None, None)


async def test_concurrent_reads_share_a_hop_and_fail_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    driver = FsspecObjectDriver(LocalFileSystem(), str(tmp_path))
    for i in range(20):
        await driver.put(f"k{i:02d}", f"v{i}".encode())
    real_get = local_ops.LocalOps.get
    hops: list[int] = []

    def get(self: local_ops.LocalOps, rel: str, directory: bool) -> tuple[bytes, str] | None:
        hops.append(threading.get_ident())
        if rel == "k07":
            raise OSError(errno.EIO, "I/O error")
        return real_get(self, rel, directory)

    monkeypatch.setattr(local_ops.LocalOps, "get", get)
    keys = [f"k{i:02d}" for i in range(20)] + ["missing"]
    results = await asyncio.gather(*(driver.get(k) for k in keys), return_exceptions=True)
    assert isinstance(results[7], StoreUnavailableError) and isinstance(results[7].__cause__, OSError)
    assert [r.data if not isinstance(r, BaseException) and r else r for r in results[:7]] == [
        f"v{i}".encode() for i in range(7)
    ]
    assert results[-1] is None
    assert len(hops) == 21 and len(set(hops)) == 1  # one worker-thread hop for the whole batch


async def test_open_stores_passes_store_options_to_the_driver_and_the_rest_to_the_filesystem(tmp_path: Path) -> None:
    async with open_stores(f"file://{tmp_path}/a", fsync=True, auto_mkdir=True) as stores:
        backend = stores.backend
        assert isinstance(backend, FsspecBackend)
        assert backend.driver.fsync
        await stores.file_store().write("x.txt", "durable")
        fs: Any = backend.driver.fs
        assert fs.auto_mkdir is True  # a storage option of LocalFileSystem
    assert (tmp_path / "a" / "files" / "x.txt").read_text() == "durable"


async def test_sftp_writers_racing_to_create_one_new_directory_all_succeed() -> None:
    """fsspec's SFTP ``makedirs`` checks then creates; racing writers must not fail on each other's mkdir."""
    try:
        server_context = local_sshd()
        server = server_context.__enter__()
    except ServerUnavailable as err:
        _no_sshd(err)
    drivers = [FsspecObjectDriver.from_url(with_path(server.url, "race"), markers=False) for _ in range(6)]
    try:
        for round_ in range(3):
            keys = [f"r{round_}/deep/er/k{i}" for i in range(len(drivers))]
            await asyncio.gather(*(d.put(k, b"x", if_absent=True) for d, k in zip(drivers, keys, strict=True)))
            assert (await drivers[0].list(f"r{round_}/deep/er/")).keys == sorted(keys)
    finally:
        for driver in drivers:
            await driver.aclose()
        server_context.__exit__(None, None, None)


async def test_listings_of_one_batch_scan_their_folder_once_and_see_it_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listings of one folder started together (a history load: newest segment, newest tail) share one scan."""
    from agent_stores.fsspec._keys import temp_name

    driver = FsspecObjectDriver(LocalFileSystem(), str(tmp_path), markers=False)  # as history keeps it
    for name in ("log/s1", "log/s2", "log/t1", "other/s1"):
        await driver.put(name, b"x")
    (tmp_path / "log" / temp_name()).write_bytes(b"a write in flight")
    scans: list[str] = []
    real_scandir = os.scandir

    def scandir(path: Any) -> Any:
        scans.append(str(path))
        return real_scandir(path)

    monkeypatch.setattr(local_ops.os, "scandir", scandir)
    segments, tails, others = await asyncio.gather(
        driver.list("log/s", delimiter=None, limit=1),
        driver.list("log/t", delimiter=None),
        driver.list("other/", delimiter=None),
    )
    assert segments.keys == ["log/s1"] and tails.keys == ["log/t1"] and others.keys == ["other/s1"]
    assert sorted(scans) == sorted([str(tmp_path / "log"), str(tmp_path / "other")]), scans
    scans.clear()
    await driver.put("log/s0", b"x")
    assert (await driver.list("log/s", delimiter=None, limit=1)).keys == ["log/s0"]  # a new batch scans anew
    assert len(scans) == 1


async def test_a_batch_of_reads_is_invisible_to_other_threads(tmp_path: Path) -> None:
    """A write in another worker thread, while a batch of reads is open, walks and scans the folder itself."""
    ops = local_ops.LocalOps(str(tmp_path))
    (tmp_path / "log").mkdir()
    (tmp_path / "log" / "s1").write_bytes(b"x")
    seen: list[list[str]] = []

    def other_thread() -> None:
        seen.append([entry.rel for entry in ops.entries("log", "s", recursive=False)])

    with ops.reads():
        assert [e.rel for e in ops.entries("log", "s", recursive=False)] == ["log/s1"]
        (tmp_path / "log" / "s2").write_bytes(b"x")  # after this batch scanned the folder
        thread = threading.Thread(target=other_thread)
        thread.start()
        thread.join()
        assert [e.rel for e in ops.entries("log", "s", recursive=False)] == ["log/s1"]  # this batch's one scan
    assert sorted(seen[0]) == ["log/s1", "log/s2"]  # the other thread scanned the folder as it is now
