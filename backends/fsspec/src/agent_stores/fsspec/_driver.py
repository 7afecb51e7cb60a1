"""``FsspecObjectDriver``: the core's ``ObjectDriver`` over any fsspec filesystem."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, NamedTuple, Protocol, TypeVar

from agent_stores.core import Listing, StoreConflictError, StoredObject, StoreNotFoundError, StoreUnavailableError
from fsspec import AbstractFileSystem  # pyright: ignore[reportMissingTypeStubs]
from fsspec.implementations.local import LocalFileSystem  # pyright: ignore[reportMissingTypeStubs]
from fsspec.implementations.memory import MemoryFileSystem  # pyright: ignore[reportMissingTypeStubs]

from ._capabilities import FilesystemCapabilities
from ._errors import translate
from ._keys import Entry, page, split_key, split_prefix
from ._local import LocalOps
from ._remote import GenericOps, MemoryOps, SftpOps
from ._s3 import S3Ops, is_s3
from ._url import FilesystemSpec, parse_url

__all__ = ["FsspecObjectDriver"]

_log = logging.getLogger("agent_stores.fsspec")

T = TypeVar("T")


class _Ops(Protocol):
    def get(self, rel: str, directory: bool) -> tuple[bytes, str] | None: ...
    def head(self, rel: str, directory: bool) -> str | None: ...
    def put(self, rel: str, data: bytes, *, if_absent: bool, if_version: str | None) -> str: ...
    def make_directory(self, rel: str, *, if_absent: bool) -> str: ...
    def delete(self, rel: str, directory: bool, *, if_version: str | None) -> bool: ...
    def entries(self, directory: str, start: str, *, recursive: bool) -> list[Entry]: ...


def _protocols(fs_class: type[AbstractFileSystem]) -> tuple[str, ...]:
    protocol: str | tuple[str, ...] = fs_class.protocol
    return (protocol,) if isinstance(protocol, str) else tuple(protocol)


def _is_sftp(fs_class: type[AbstractFileSystem]) -> bool:
    try:
        from fsspec.implementations.sftp import SFTPFileSystem  # pyright: ignore[reportMissingTypeStubs]
    except ImportError:  # paramiko is not installed
        return False
    return issubclass(fs_class, SFTPFileSystem)


def _root_kind(ops: _Ops) -> str | None:
    """``"directory"`` or ``"file"`` for what is at the root of ``ops``, ``None`` when nothing is."""
    if ops.head("", True) is not None:
        return "directory"
    return "file" if ops.head("", False) is not None else None


class _Failed(NamedTuple):
    """A read of a batch that raised: reported to its own caller only."""

    error: Exception


class FsspecObjectDriver:
    """An :class:`~agent_stores.core.ObjectDriver` whose objects are files under a root directory.

    Keys are relative paths under ``root``: the object ``notes/a.md`` is the file
    ``<root>/notes/a.md``, so the folder stays browsable and other programs (the framework's
    ``FileSystemAgentFileStore`` among them) read and write the same files. A key ending
    with ``/`` is a directory marker and maps to a real directory; with ``markers`` every
    directory lists as its marker key ``dir/`` (how ``ObjectAgentFileStore`` records empty
    directories), without it directories are only the prefixes of the files under them and
    a delete removes the directories it leaves empty (object-store semantics, for history
    and sessions).

    Which operations are atomic depends on the filesystem and is declared in
    :attr:`capabilities` (see :class:`FilesystemCapabilities`): a local directory, fsspec's
    memory filesystem, SFTP (paramiko) and S3 (s3fs) are supported with their own
    mechanisms; any other filesystem is used through the plain fsspec API with nothing
    atomic promised. Blocking filesystems run each operation in one worker-thread hop; s3fs
    runs through its async API; the event loop never blocks.

    Keys that would escape the root (``..``, absolute, NUL, backslash, or a symbolic link
    inside the root that points outside) are a ``ValueError`` before anything is written.
    A filesystem that fails or disappears mid-operation is a ``StoreUnavailableError``
    (chained); writes go to a temporary file moved into place, so no reader ever sees a
    half-written file where :attr:`FilesystemCapabilities.atomic_replace` holds.

    Args:
        fs: The fsspec filesystem; borrowed (never closed) unless ``owns_fs``.
        root: Root directory on ``fs`` (a path without protocol; created on the first write).
        markers: List every directory as a marker key ``dir/`` (see above).
        fsync: Local only: flush every write to disk before it becomes visible.
        capabilities: Override the declared capabilities (for a filesystem whose behaviour
            you know, e.g. a case-insensitive local volume).
        owns_fs: Close the filesystem's connection on :meth:`aclose`.
        must_exist: The root directory (on S3: the bucket) must exist: the first operation
            checks it and raises ``StoreNotFoundError`` when it is missing.

    Raises:
        ValueError: ``root`` is empty.
    """

    def __init__(
        self,
        fs: AbstractFileSystem,
        root: str,
        *,
        markers: bool = True,
        fsync: bool = False,
        capabilities: FilesystemCapabilities | None = None,
        owns_fs: bool = False,
        must_exist: bool = False,
    ) -> None:
        if not isinstance(root, str) or not root.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError("root must be a non-empty path")
        if "\x00" in root:
            raise ValueError("root must not contain NUL")
        root_path = str(fs._strip_protocol(root)).rstrip("/") or "/"  # pyright: ignore[reportPrivateUsage, reportUnknownMemberType, reportUnknownArgumentType]
        self._setup(type(fs), root_path, markers=markers, fsync=fsync, capabilities=capabilities, owns_fs=owns_fs)
        self._fs = fs
        self.must_exist = must_exist

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        markers: bool = True,
        fsync: bool = False,
        capabilities: FilesystemCapabilities | None = None,
        must_exist: bool = False,
        **storage_options: Any,
    ) -> FsspecObjectDriver:
        """Open a driver that owns a filesystem of its own, created (and connected) on first use.

        ``file:///abs/path`` or ``fsspec+<protocol>://...``; query parameters and
        ``storage_options`` configure the filesystem (see :func:`parse_url`).

        Raises:
            ValueError: The URL is malformed or its protocol unknown to fsspec.
        """
        spec = parse_url(url, **storage_options)
        driver = cls.__new__(cls)
        driver._setup(spec.fs_class, spec.root, markers=markers, fsync=fsync, capabilities=capabilities, owns_fs=True)
        driver._spec = spec
        driver.must_exist = must_exist
        return driver

    def _setup(
        self,
        fs_class: type[AbstractFileSystem],
        root: str,
        *,
        markers: bool,
        fsync: bool,
        capabilities: FilesystemCapabilities | None,
        owns_fs: bool,
    ) -> None:
        self.root = root
        self.markers = markers
        self.fsync = fsync
        self.owns_fs = owns_fs
        self.protocol = _protocols(fs_class)[0]
        self._fs = None
        self._spec: FilesystemSpec | None = None
        self._ops: _Ops | S3Ops | None = None
        self._opening = threading.Lock()
        self._creating = threading.Lock()
        self._parent: FsspecObjectDriver | None = None
        self._fs_class = fs_class
        self._closed = False
        self.must_exist = False  # checked on the topmost driver (see _require_root)
        self._root_checked = False
        self._reads: list[tuple[str, str, Callable[[_Ops], Any], asyncio.Future[Any]]] | None = None
        self._tasks: set[asyncio.Future[None]] = set()
        if issubclass(fs_class, LocalFileSystem):
            declared = FilesystemCapabilities.local()
        elif issubclass(fs_class, MemoryFileSystem):
            declared = FilesystemCapabilities.memory()
        elif _is_sftp(fs_class):
            declared = FilesystemCapabilities.sftp()
        elif is_s3(fs_class):
            declared = FilesystemCapabilities.s3()
        else:
            declared = FilesystemCapabilities.generic(self.protocol)
        self.capabilities = capabilities or declared

    @property
    def fs(self) -> AbstractFileSystem | None:
        """The filesystem, or ``None`` while an owned one has not been created yet."""
        return self._fs

    def _filesystem(self) -> AbstractFileSystem:
        with self._creating:
            if self._fs is None:
                if self._parent is not None:
                    self._fs = self._parent._filesystem()  # pyright: ignore[reportPrivateUsage]
                else:
                    assert self._spec is not None
                    self._fs = self._spec.create()
            return self._fs

    def child(self, directory: str, *, markers: bool = True) -> FsspecObjectDriver:
        """Return a driver rooted at ``<root>/<directory>`` on the same filesystem, borrowing it.

        The filesystem is created once, by whichever driver is used first; only this
        (the parent) driver closes it.

        ``directory`` ``""`` is the same root seen with other ``markers``.

        Raises:
            ValueError: ``directory`` breaks the key rules.
        """
        root = self.root
        if directory:
            root = f"{self.root.rstrip('/')}/{split_key(directory.rstrip('/') + '/').rel}"
        driver = FsspecObjectDriver.__new__(FsspecObjectDriver)
        driver._setup(  # pyright: ignore[reportPrivateUsage]
            self._fs_class,
            root,
            markers=markers,
            fsync=self.fsync,
            capabilities=self.capabilities,
            owns_fs=False,
        )
        driver._fs = self._fs  # pyright: ignore[reportPrivateUsage]
        driver._parent = self  # pyright: ignore[reportPrivateUsage]
        return driver

    def _open_ops(self) -> _Ops | S3Ops:
        """Create the filesystem (first use of an owned one) and the operations for it; runs in a worker thread."""
        with self._opening:
            if self._ops is not None:
                return self._ops
            fs, prune = self._filesystem(), not self.markers
            ops: _Ops | S3Ops
            if isinstance(fs, LocalFileSystem):
                ops = LocalOps(self.root, fsync=self.fsync, prune=prune)
            elif isinstance(fs, MemoryFileSystem):
                ops = MemoryOps(fs, self.root, prune=prune)
            elif _is_sftp(type(fs)):
                ops = SftpOps(fs, self.root, prune=prune)
            elif is_s3(type(fs)):
                ops = S3Ops(fs, self.root)
            else:
                ops = GenericOps(fs, self.root, prune=prune)
            self._ops = ops
            return ops

    def __repr__(self) -> str:
        return f"FsspecObjectDriver({self.protocol}://{self.root}, {self.capabilities.name})"

    async def _call(self, what: str, key: str, fn: Callable[[Any], Any]) -> Any:
        """The one funnel: run ``fn(ops)`` off the event loop and translate what the filesystem raises.

        Blocking filesystems run ``fn`` in a worker thread (one hop). For s3fs ``fn`` returns a
        coroutine, awaited on the filesystem's own event loop: this loop when the filesystem
        was made ``asynchronous=True`` inside it, else fsspec's I/O thread (one hop, no blocking).
        """
        if self._closed or (self._parent is not None and self._parent._closed):
            raise StoreUnavailableError(f"the fsspec store at {self.root!r} is closed")
        try:
            ops = self._ops or await asyncio.to_thread(self._open_ops)
            top = self._top()
            if top.must_exist and not top._root_checked:
                await self._require_root(top, ops)
            if isinstance(ops, S3Ops):
                return await self._on_fs_loop(fn(ops))
            return await asyncio.to_thread(fn, ops)
        except Exception as err:
            translated = self._translate(what, key, err)
            if translated is err:
                raise
            raise translated from err

    def _top(self) -> FsspecObjectDriver:
        """The driver this one is a child of (itself when it is no child): the URL's root."""
        top = self
        while top._parent is not None:
            top = top._parent
        return top

    async def _require_root(self, top: FsspecObjectDriver, ops: _Ops | S3Ops) -> None:
        """Raise ``StoreNotFoundError`` unless the root directory of ``top`` (on S3: its bucket) exists.

        Asked through ``top``'s own operations, which serialise the requests a filesystem
        cannot take concurrently (one SFTP channel).
        """
        if isinstance(ops, S3Ops):
            if not await self._on_fs_loop(ops.bucket_exists()):
                raise StoreNotFoundError(f"the S3 bucket {ops.bucket!r} does not exist")
            top._root_checked = True
            return
        top_ops = top._ops or await asyncio.to_thread(top._open_ops)
        assert not isinstance(top_ops, S3Ops)
        kind = await asyncio.to_thread(_root_kind, top_ops)
        if kind is None:
            raise StoreNotFoundError(f"the folder {top.root!r} does not exist ({top.protocol})")
        if kind != "directory":
            raise StoreNotFoundError(f"{top.root!r} is not a folder ({top.protocol})")
        top._root_checked = True

    def _translate(self, what: str, key: str, err: Exception) -> Exception:
        """Return what to raise for ``err``: ``translate``'s error (cause chained), else ``err`` itself."""
        translated = translate(err, what=what, key=key, where=repr(self))
        if translated is None:
            return err
        if isinstance(translated, StoreUnavailableError):
            _log.debug("fsspec %s of %r failed", what, key, exc_info=err)
        translated.__cause__ = err
        return translated

    async def _batched(self, what: str, key: str, fn: Callable[[_Ops], Any]) -> Any:
        """Run the read ``fn(ops)`` together with every other read started in the same event-loop step.

        A history load asks for its listings, then for its objects, all at once; each group
        shares one worker-thread hop instead of one hop per request.
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        if self._reads is None:
            self._reads = []
            loop.call_soon(self._start_reads)
        self._reads.append((what, key, fn, future))
        return await future

    def _start_reads(self) -> None:
        batch, self._reads = self._reads or [], None
        task = asyncio.ensure_future(self._run_reads(batch))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _run_reads(self, batch: list[tuple[str, str, Callable[[_Ops], Any], asyncio.Future[Any]]]) -> None:
        def read_all(ops: _Ops) -> list[Any]:
            results: list[Any] = []
            with ops.reads() if isinstance(ops, LocalOps) else contextlib.nullcontext():
                for _, _, fn, _ in batch:
                    try:
                        results.append(fn(ops))
                    except Exception as err:  # reported to that caller alone, below
                        results.append(_Failed(err))
            return results

        try:
            results: list[Any] = await self._call(batch[0][0], batch[0][1], read_all)
        except BaseException as err:
            for _, _, _, future in batch:
                if not future.done():
                    future.set_exception(err if isinstance(err, Exception) else StoreUnavailableError("read cancelled"))
            if not isinstance(err, Exception):
                raise
            return
        for (what, key, _, future), result in zip(batch, results, strict=True):
            if future.done():
                continue  # that caller was cancelled
            if isinstance(result, _Failed):
                future.set_exception(self._translate(what, key, result.error))
            else:
                future.set_result(result)

    async def _on_fs_loop(self, call: Coroutine[Any, Any, T]) -> T:
        fs: Any = self._fs
        if getattr(fs, "asynchronous", False):
            return await call
        future = asyncio.run_coroutine_threadsafe(call, fs.loop)
        return await asyncio.wrap_future(future)

    async def get(self, key: str) -> StoredObject | None:
        """Return the object's bytes and version, or ``None`` when absent (a directory marker reads as ``b""``)."""
        path = split_key(key)
        if self._ops is None or isinstance(self._ops, S3Ops) or self._closed:
            found = await self._call("get", key, lambda ops: ops.get(path.rel, path.directory))
        else:
            found = await self._batched("get", key, lambda ops: ops.get(path.rel, path.directory))
        return None if found is None else StoredObject(found[0], found[1])

    async def get_many(self, keys: Sequence[str]) -> list[StoredObject | None]:
        """Return :meth:`get` of every key, in order: on a blocking filesystem, all in one worker-thread hop.

        What a checkpoint listing reads its records through: the reads run one after another in
        that thread, as the reads :meth:`get` batches do, without a task per key. A read that
        fails raises as :meth:`get` of its key would. On s3fs the gets run together on its loop.
        """
        paths = [split_key(key) for key in keys]
        if not keys or self._ops is None or isinstance(self._ops, S3Ops) or self._closed:
            return list(await asyncio.gather(*(self.get(key) for key in keys)))

        def read_all(ops: _Ops) -> list[Any]:
            results: list[Any] = []
            with ops.reads() if isinstance(ops, LocalOps) else contextlib.nullcontext():
                for path in paths:
                    try:
                        results.append(ops.get(path.rel, path.directory))
                    except Exception as err:  # raised below, translated for its own key
                        results.append(_Failed(err))
            return results

        found: list[Any] = await self._call("get", keys[0], read_all)
        objects: list[StoredObject | None] = []
        for key, item in zip(keys, found, strict=True):
            if isinstance(item, _Failed):
                raise self._translate("get", key, item.error)
            objects.append(None if item is None else StoredObject(item[0], item[1]))
        return objects

    async def head(self, key: str) -> str | None:
        """Return the object's version, or ``None`` when absent."""
        path = split_key(key)
        return await self._call("head", key, lambda ops: ops.head(path.rel, path.directory))

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        """Store ``data`` under ``key`` (a marker key creates its directory) and return the new version.

        Raises:
            StoreConflictError: ``if_absent`` and the key exists, or ``if_version`` does not hold.
            IsADirectoryError: A directory exists where the file would go.
            NotADirectoryError: A parent of the key is a file.
            ValueError: The key breaks the key rules, or a marker key is given data.
        """
        path = split_key(key)
        if path.directory:
            if data:
                raise ValueError(f"directory marker {key!r} cannot hold data")
            if if_version is not None:
                current = await self.head(key)
                if current != if_version:
                    raise StoreConflictError(f"directory {key!r} is not at version {if_version!r}")
            return await self._call("put", key, lambda ops: ops.make_directory(path.rel, if_absent=if_absent))
        payload = bytes(data)
        return await self._call(
            "put", key, lambda ops: ops.put(path.rel, payload, if_absent=if_absent, if_version=if_version)
        )

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        """Remove the file (or the empty directory of a marker key); return whether it existed.

        Raises:
            StoreConflictError: ``if_version`` is given and does not hold.
        """
        path = split_key(key)
        return await self._call("delete", key, lambda ops: ops.delete(path.rel, path.directory, if_version=if_version))

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        """List keys under ``prefix`` as :meth:`agent_stores.core.ObjectDriver.list` specifies.

        Each page scans the prefix's directory (recursively without a delimiter) and sorts
        what it finds, so a page costs one directory listing, not one per key.
        """
        if limit is not None and limit <= 0:
            raise ValueError(f"limit must be positive, got {limit!r}")
        directory, start = split_prefix(prefix)
        recursive = delimiter != "/"

        def paged(found: list[Entry]) -> Listing:
            return page(found, prefix, delimiter=delimiter, after=after, limit=limit, markers=self.markers)

        def scan(ops: _Ops | S3Ops) -> Listing | Coroutine[Any, Any, Listing]:
            if isinstance(ops, S3Ops):

                async def listed() -> Listing:
                    return paged(await ops.entries(directory, start, recursive=recursive))

                return listed()
            return paged(ops.entries(directory, start, recursive=recursive))

        if self._ops is None or isinstance(self._ops, S3Ops) or self._closed:
            return await self._call("list", prefix, scan)
        return await self._batched("list", prefix, scan)

    async def aclose(self) -> None:
        """Close the filesystem's connection when this driver owns it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        if not self.owns_fs:
            return
        # fsspec's SFTP filesystem holds a paramiko SSHClient; local and memory hold nothing.
        client: Any = getattr(self._fs, "client", None)
        close = getattr(client, "close", None)
        if callable(close):
            await asyncio.to_thread(close)
