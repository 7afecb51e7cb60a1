"""Operations through the fsspec API, for filesystems other than a local directory.

Blocking filesystems (memory, sftp, and any other synchronous one) run these in a worker
thread, one hop per driver operation. A version here is a digest of the content: a
filesystem such as SFTP reports modification times in whole seconds and no inode, so the
bytes are what identifies a write (rewriting identical bytes keeps the version, as an S3
ETag does).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import posixpath
import threading
from collections.abc import Generator
from typing import Any

from agent_stores.core import StoreConflictError
from fsspec import AbstractFileSystem  # pyright: ignore[reportMissingTypeStubs]

from ._keys import Entry, is_temp_name, temp_name

__all__ = ["GenericOps", "MemoryOps", "SftpOps", "content_version"]

_DIRECTORY_VERSION = "dir"

_log = logging.getLogger("agent_stores.fsspec")

#: One lock for every ``MemoryFileSystem`` in the process: they all share one class-level store.
_MEMORY_LOCK = threading.RLock()

#: Guards attaching a filesystem object's lock (two stores opening on one filesystem at once).
_ATTACH_LOCK = threading.Lock()


def content_version(data: bytes) -> str:
    """Return the version of an object whose content is ``data``."""
    return hashlib.blake2b(data, digest_size=12).hexdigest()


class GenericOps:
    """The plain fsspec API, blocking: nothing is atomic beyond what one fsspec call is.

    Every store on one filesystem object shares one lock, so the check-then-write of a
    conditional write is atomic within the process. A write goes to a temporary file that is
    then moved into place: two writers never interleave their bytes in one file (on a local
    directory seen through ``DirFileSystem`` the move is a ``rename``, atomic across processes;
    elsewhere it is whatever the filesystem's ``mv`` is).

    Args:
        fs: The filesystem (borrowed; closed by the driver only when it owns it).
        root: The root path on ``fs`` (no protocol, no trailing ``/``).
        prune: Remove directories a delete leaves empty, up to the root.
    """

    def __init__(self, fs: AbstractFileSystem, root: str, *, prune: bool = False) -> None:
        self.fs: Any = fs  # fsspec ships no type information
        self.root = root.rstrip("/")
        self.prune = prune
        self._lock = self._make_lock()

    def _make_lock(self) -> Any:
        with _ATTACH_LOCK:
            lock = getattr(self.fs, "_agent_stores_lock", None)
            if lock is None:
                lock = threading.RLock()
                self.fs._agent_stores_lock = lock  # pyright: ignore[reportAttributeAccessIssue]
        return lock

    def path(self, rel: str) -> str:
        """Return the filesystem path of ``rel``."""
        return f"{self.root}/{rel}" if rel else self.root or "/"

    def _kind(self, path: str) -> str | None:
        try:
            info: dict[str, Any] = self.fs.info(path)
        except FileNotFoundError:
            return None
        return "directory" if info.get("type") == "directory" else "file"

    def _read(self, path: str) -> bytes | None:
        try:
            return bytes(self.fs.cat_file(path))
        except FileNotFoundError:
            return None
        except (IsADirectoryError, NotADirectoryError):
            return None
        except OSError:
            if self._kind(path) != "file":
                return None
            raise

    # -- objects --------------------------------------------------------------------------

    def get(self, rel: str, directory: bool) -> tuple[bytes, str] | None:
        """Return the bytes and version of a file (``b""`` for an existing directory)."""
        path = self.path(rel)
        if directory:
            return (b"", _DIRECTORY_VERSION) if self._kind(path) == "directory" else None
        with self._lock:
            data = self._read(path)
        return None if data is None else (data, content_version(data))

    def head(self, rel: str, directory: bool) -> str | None:
        """Return the version of a file, or of an existing directory."""
        found = self.get(rel, directory)
        return None if found is None else found[1]

    def _check_conflicts(self, rel: str, path: str) -> None:
        if self._kind(path) == "directory":
            raise IsADirectoryError(errno.EISDIR, "a directory exists at this path", rel)
        parent = posixpath.dirname(path)
        while parent.startswith(self.root + "/") or parent == self.root:
            kind = self._kind(parent)
            if kind == "file":
                raise NotADirectoryError(errno.ENOTDIR, "a parent of the path is a file", rel)
            if kind == "directory" or parent == self.root:
                return
            parent = posixpath.dirname(parent)

    def put(self, rel: str, data: bytes, *, if_absent: bool, if_version: str | None) -> str:
        """Write a file; the condition is checked, then the file written."""
        path = self.path(rel)
        with self._lock:
            self._check_conflicts(rel, path)
            self._check_condition(rel, path, if_absent=if_absent, if_version=if_version)
            self._write(rel, path, data, if_absent=if_absent)
        return content_version(data)

    def _check_condition(self, rel: str, path: str, *, if_absent: bool, if_version: str | None) -> None:
        if if_absent and self._kind(path) is not None:
            raise StoreConflictError(f"object {rel!r} exists")
        if if_version is not None:
            current = self._read(path)
            if current is None or content_version(current) != if_version:
                raise StoreConflictError(f"object {rel!r} is not at version {if_version!r}")

    def _makedirs(self, directory: str) -> None:
        """Create ``directory`` and its parents; another writer creating them at the same time is fine.

        fsspec's ``makedirs`` checks, then creates each level, so two writers racing on a new
        directory can see "exists" fail under them: retry while the level now exists.
        """
        for _ in range(8):
            try:
                self.fs.makedirs(directory, exist_ok=True)
                return
            except OSError:
                if self._kind(directory) == "directory":
                    return
                parent = directory
                while parent.startswith(self.root + "/") and self._kind(parent) is None:
                    parent = posixpath.dirname(parent)
                if self._kind(parent) != "directory":
                    raise
        self.fs.makedirs(directory, exist_ok=True)

    def _write(self, rel: str, path: str, data: bytes, *, if_absent: bool) -> None:
        del rel, if_absent
        parent = posixpath.dirname(path)
        self._makedirs(parent)
        tmp = f"{parent}/{temp_name()}"
        self.fs.pipe_file(tmp, data)
        try:
            self.fs.mv(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                self.fs.rm_file(tmp)
            raise

    def make_directory(self, rel: str, *, if_absent: bool) -> str:
        """Create the directory a marker key names (and its parents)."""
        path = self.path(rel)
        with self._lock:
            kind = self._kind(path)
            if kind == "directory":
                if if_absent:
                    raise StoreConflictError(f"directory {rel!r} exists")
                return _DIRECTORY_VERSION
            if kind == "file":
                raise NotADirectoryError(errno.ENOTDIR, "a file exists at this path", rel)
            self._check_conflicts(rel, path)
            self._makedirs(path)
        return _DIRECTORY_VERSION

    def delete(self, rel: str, directory: bool, *, if_version: str | None) -> bool:
        """Remove a file (or an empty directory); return whether it existed."""
        path = self.path(rel)
        with self._lock:
            kind = self._kind(path)
            wanted = "directory" if directory else "file"
            if if_version is not None:
                current = self.head(rel, directory) if kind == wanted else None
                if current != if_version:
                    raise StoreConflictError(f"object {rel!r} is not at version {if_version!r}")
            if kind != wanted:
                return False
            if directory:
                try:
                    self.fs.rmdir(path)
                except OSError as err:
                    if self._kind(path) != "directory" or not self.fs.ls(path):
                        raise
                    del err  # still holds files: the marker goes, the directory stays
            else:
                self.fs.rm_file(path)
            self._prune(posixpath.dirname(path))
        return True

    def _prune(self, directory: str) -> None:
        if not self.prune:
            return
        while directory.startswith(self.root + "/"):
            try:
                if self.fs.ls(directory, detail=False):
                    return
                self.fs.rmdir(directory)
            except OSError:
                return
            directory = posixpath.dirname(directory)

    # -- listing --------------------------------------------------------------------------

    def entries(self, directory: str, start: str, *, recursive: bool) -> list[Entry]:
        """Return the entries under ``directory`` whose first name starts with ``start``."""
        base = self.path(directory)
        if self._kind(base) != "directory":
            return []
        found: list[Entry] = []
        if directory and not start:
            found.append(Entry(directory, True))
        strip = len(self.root) + 1 if self.root else 0
        if recursive:
            listed: dict[str, dict[str, Any]] = self.fs.find(base, withdirs=True, detail=True)
            items = list(listed.values())
        else:
            items: list[dict[str, Any]] = list(self.fs.ls(base, detail=True))
        prefix = directory + "/" if directory else ""
        for info in items:
            name = str(info["name"]).rstrip("/")
            rel = name[strip:] if self.root else name.lstrip("/")
            if not rel.startswith(prefix) or rel == directory:
                continue
            first = rel[len(prefix) :].split("/", 1)[0]
            if not first.startswith(start) or any(is_temp_name(part) for part in rel.split("/")):
                continue
            found.append(Entry(rel, info.get("type") == "directory"))
        return found


class MemoryOps(GenericOps):
    """fsspec's ``MemoryFileSystem``: one process lock makes every check-and-write atomic.

    All instances share one class-level store, so the lock is process-wide; it covers every
    agent-stores writer (a write publishes the whole file at once, as ``MemoryFile.commit`` does).
    """

    def _make_lock(self) -> Any:
        return _MEMORY_LOCK

    def _write(self, rel: str, path: str, data: bytes, *, if_absent: bool) -> None:
        # A memory file is published whole (``MemoryFile.commit``) under the process lock.
        del rel, if_absent
        self._makedirs(posixpath.dirname(path))
        self.fs.pipe_file(path, data)


class SftpOps(GenericOps):
    """fsspec's paramiko ``SFTPFileSystem``; see :meth:`FilesystemCapabilities.sftp`.

    One paramiko SFTP channel is not safe for concurrent requests from several threads, so
    calls on one filesystem object are serialised by a lock.

    **The connection is reopened.** paramiko's client never reconnects, so every operation first
    checks that the SSH transport is still up, and opens a new connection (fsspec's own
    ``_connect``, with the URL's options) when it is not. An operation that fails because the
    connection broke (the server went away, or a request timed out and left the SFTP stream out
    of step) closes it, so the next operation starts on a fresh one: the same store works again
    once the server is back, without reopening. While the server is down every operation fails
    (the driver raises ``StoreUnavailableError``) as soon as the connect is refused, or after
    the connect ``timeout``.

    **Every wait for the server is bounded** by the filesystem's ``timeout`` option (paramiko's
    connect timeout, ``?timeout=5`` in a store URL), applied to each SFTP request too: a server
    that stops answering makes the request fail after that many seconds instead of waiting
    for TCP to give up. Without ``timeout`` requests wait as long as paramiko does (no limit).
    """

    _real_root: str | None = None

    def _timeout(self) -> float | None:
        ssh_kwargs: dict[str, Any] = getattr(self.fs, "ssh_kwargs", None) or {}
        timeout = ssh_kwargs.get("timeout")
        return float(timeout) if isinstance(timeout, int | float) and timeout > 0 else None

    def _alive(self) -> bool:
        client: Any = getattr(self.fs, "client", None)
        transport: Any = client.get_transport() if client is not None else None
        return transport is not None and bool(transport.is_active())

    def _ensure_connected(self) -> None:
        """Reopen the SSH connection when it is down (under the lock); raise what connecting raises."""
        if not self._alive():
            self._close_connection()
            _log.info("sftp %s: the connection is down; reconnecting", getattr(self.fs, "host", "?"))
            reconnect: Any = getattr(self.fs, "_connect")  # noqa: B009 - fsspec's SFTPFileSystem connects here
            reconnect()
        timeout = self._timeout()
        if timeout is not None:
            ftp: Any = getattr(self.fs, "ftp")  # noqa: B009
            channel: Any = ftp.get_channel()
            if channel.gettimeout() != timeout:
                channel.settimeout(timeout)

    def _close_connection(self) -> None:
        client: Any = getattr(self.fs, "client", None)
        if client is not None:
            with contextlib.suppress(Exception):
                client.close()

    def _broken(self, err: BaseException) -> bool:
        """Whether ``err`` left the connection unusable (so it must be reopened)."""
        if isinstance(err, TimeoutError | EOFError | ConnectionError):
            return True
        try:
            import paramiko  # pyright: ignore[reportMissingTypeStubs]
        except ImportError:  # pragma: no cover - SFTPFileSystem needs paramiko
            return not self._alive()
        return isinstance(err, paramiko.SSHException) or not self._alive()

    @contextlib.contextmanager
    def _connected(self) -> Generator[None]:
        """Hold the channel lock on a live connection; a failure that broke the connection closes it."""
        with self._lock:
            self._ensure_connected()
            try:
                yield
            except BaseException as err:
                if self._broken(err):
                    self._close_connection()
                raise

    def path(self, rel: str) -> str:
        """Return the server path of ``rel``, refusing one a symbolic link on the server leads outside the root.

        The server resolves links itself, so the deepest existing part of the path is resolved
        with SFTP ``REALPATH`` (one round trip when the path exists) and must stay below the
        resolved root.

        Raises:
            ValueError: A symbolic link on the server points outside the root.
        """
        full = super().path(rel)
        if not rel:
            return full
        with self._connected():
            ftp: Any = getattr(self.fs, "ftp")  # noqa: B009 - paramiko's SFTPClient
            real_root = self._real_root
            if real_root is None:
                try:
                    real_root = self._real_root = str(ftp.normalize(self.root))
                except OSError as err:
                    if self._broken(err):
                        raise
                    return full  # no root yet: nothing below it can be a link
            probe = full
            while True:
                try:
                    real = str(ftp.normalize(probe))
                    break
                except OSError as err:
                    if self._broken(err):
                        raise
                    probe = posixpath.dirname(probe)
                    if len(probe) <= len(self.root):
                        return full
        if real != real_root and not real.startswith(real_root.rstrip("/") + "/"):
            raise ValueError(f"path {rel!r} resolves outside the store's root (a symbolic link points out)")
        return full

    def get(self, rel: str, directory: bool) -> tuple[bytes, str] | None:
        """As :meth:`GenericOps.get`, under the channel lock, on a live connection."""
        with self._connected():
            return super().get(rel, directory)

    def put(self, rel: str, data: bytes, *, if_absent: bool, if_version: str | None) -> str:
        """As :meth:`GenericOps.put`, on a live connection."""
        with self._connected():
            return super().put(rel, data, if_absent=if_absent, if_version=if_version)

    def make_directory(self, rel: str, *, if_absent: bool) -> str:
        """As :meth:`GenericOps.make_directory`, on a live connection."""
        with self._connected():
            return super().make_directory(rel, if_absent=if_absent)

    def delete(self, rel: str, directory: bool, *, if_version: str | None) -> bool:
        """As :meth:`GenericOps.delete`, on a live connection."""
        with self._connected():
            return super().delete(rel, directory, if_version=if_version)

    def entries(self, directory: str, start: str, *, recursive: bool) -> list[Entry]:
        """As :meth:`GenericOps.entries`, under the channel lock, on a live connection."""
        with self._connected():
            return super().entries(directory, start, recursive=recursive)

    def _check_condition(self, rel: str, path: str, *, if_absent: bool, if_version: str | None) -> None:
        # An exclusive create is decided by the rename itself, not by a check.
        super()._check_condition(rel, path, if_absent=False, if_version=if_version)

    def _write(self, rel: str, path: str, data: bytes, *, if_absent: bool) -> None:
        ftp: Any = getattr(self.fs, "ftp")  # noqa: B009 - paramiko's SFTPClient, the filesystem's public attribute
        parent = posixpath.dirname(path)
        self._makedirs(parent)
        tmp = f"{parent}/{temp_name()}"
        with ftp.open(tmp, "wb") as handle:
            handle.set_pipelined(True)
            handle.write(data)
        try:
            if if_absent:
                try:
                    ftp.rename(tmp, path)  # OpenSSH: link() + unlink(), so it fails when the target exists
                except OSError as err:
                    if self._kind(path) is not None:
                        raise StoreConflictError(f"object {rel!r} exists") from err
                    raise
            else:
                ftp.posix_rename(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                ftp.remove(tmp)
            raise
