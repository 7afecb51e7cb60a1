"""Operations on a local directory (fsspec's ``LocalFileSystem``), through ``os`` in a worker thread.

Each driver operation is one call here, so one thread hop. Atomicity comes from the kernel:

- every write fills a temporary file in the target's directory and moves it into place
  (``os.replace``), so readers see the old or the new bytes, never a partial file;
- exclusive create hard-links the temporary file to the target: ``link()`` fails with
  ``EEXIST`` when the target exists, atomically, across processes;
- a version is ``inode-mtime-size`` of the file, and each write stamps its file with the
  nanosecond clock, so no two writes share a version;
- writes and deletes that may race a compare-and-set hold an exclusive ``flock`` on the
  target's directory, so ``if_version`` is checked and applied in one step (among
  agent-stores writers: other programs writing the folder do not take the lock).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
import time
from collections.abc import Generator

from agent_stores.core import StoreConflictError

from ._keys import Entry, is_temp_name, temp_name

__all__ = ["LocalOps"]

try:
    import fcntl
except ImportError:  # not POSIX (Windows): compare-and-set is declared absent there
    fcntl = None

_DIRECTORY_VERSION = "dir"

#: How often a write re-creates a directory that a concurrent delete pruned under it.
_PRUNE_RACE_ATTEMPTS = 5

#: Not inherited by child processes; binary on Windows (both absent elsewhere).
_OPEN_FLAGS: int = getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


def _version(st: os.stat_result) -> str:
    return f"{st.st_ino:x}-{st.st_mtime_ns:x}-{st.st_size:x}"


def _is_dir(mode: int) -> bool:
    return stat.S_ISDIR(mode)


class LocalOps:
    """The blocking half of the driver for a local root directory; every method runs in a worker thread.

    Args:
        root: Absolute path of the root directory (created on the first write).
        fsync: Flush each write to the disk before it becomes visible (survives power loss).
        prune: Remove directories a delete leaves empty, up to the root (object-store semantics).
    """

    def __init__(self, root: str, *, fsync: bool = False, prune: bool = False) -> None:
        self.root = os.path.abspath(root)
        self.fsync = fsync
        self.prune = prune
        self._real_root: str | None = None
        # The state of a batch of reads (see :meth:`reads`), per thread: a batch runs in one
        # worker thread, and writes running meanwhile in other threads must not see it.
        self._batch = _Batch()

    # -- paths ----------------------------------------------------------------------------

    def path(self, rel: str) -> str:
        """Return the absolute path of ``rel``, refusing one that resolves outside the root.

        Walks ``rel`` below the root with ``lstat`` (the root itself is resolved once, on first
        use); only when a component is a symbolic link is the whole path resolved and checked.

        Raises:
            ValueError: A symbolic link on the way points outside the root.
        """
        real_root = self._real_root or self._resolve_root()
        if not rel:
            return real_root
        full = f"{real_root}/{rel}"
        current = real_root
        parts = rel.split("/")
        checked = self._batch.checked
        if checked is not None:
            # Within one batch of reads, a directory already walked without meeting a link
            # is not walked again: only the components below it are checked.
            if rel in checked:
                return full
            for depth in range(len(parts) - 1, 0, -1):
                known = "/".join(parts[:depth])
                if known in checked:
                    current = f"{real_root}/{known}"
                    parts = parts[depth:]
                    break
        for part in parts:
            current = f"{current}/{part}"
            try:
                mode = os.lstat(current).st_mode
            except (FileNotFoundError, NotADirectoryError):
                return full  # nothing below exists, so no link can redirect it
            if stat.S_ISLNK(mode):
                real = os.path.realpath(full)
                if real != real_root and not real.startswith(real_root.rstrip("/") + "/"):
                    raise ValueError(f"path {rel!r} resolves outside the store's root (a symbolic link points out)")
                return full
            if checked is not None and stat.S_ISDIR(mode):
                checked.add(current[len(real_root) + 1 :])
        return full

    @contextlib.contextmanager
    def reads(self) -> Generator[None]:
        """Scope of one batch of reads, run together in one worker-thread hop.

        Directories walked in it are not walked again (see :meth:`path`), and each directory is
        scanned once however many listings of the batch look into it (a history load lists
        its newest segment and its newest tail, two names of one folder): every listing of
        the batch sees the folder as it was at that one scan, a moment within all of their
        calls, so each still sees a state the folder really had while it ran.
        """
        batch = self._batch
        batch.checked = set()
        batch.scans = {}
        try:
            yield
        finally:
            batch.checked = None
            batch.scans = None

    def _resolve_root(self) -> str:
        self._real_root = os.path.realpath(self.root)
        return self._real_root

    @contextlib.contextmanager
    def _locked(self, directory: str) -> Generator[None]:
        if fcntl is None:
            yield  # no flock: CAS is a check, then the write (FilesystemCapabilities.local says so)
            return
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    def _makedirs(self, directory: str) -> None:
        try:
            _private_makedirs(directory, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as err:
            raise NotADirectoryError(
                errno.ENOTDIR, "a parent of the path is a file, not a directory", directory
            ) from err

    # -- objects --------------------------------------------------------------------------

    def get(self, rel: str, directory: bool) -> tuple[bytes, str] | None:
        """Return the bytes and version of a file (or ``b""`` for an existing directory marker)."""
        full = self.path(rel)
        if directory:
            return (b"", _DIRECTORY_VERSION) if os.path.isdir(full) else None
        try:
            fd = os.open(full, os.O_RDONLY | _OPEN_FLAGS)
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return None
            chunks: list[bytes] = []
            remaining = st.st_size
            while True:
                chunk = os.read(fd, max(remaining, 65536))
                if not chunk:
                    break
                chunks.append(chunk)
                remaining -= len(chunk)
            return b"".join(chunks), _version(st)
        finally:
            os.close(fd)

    def head(self, rel: str, directory: bool) -> str | None:
        """Return the version of a file (or of an existing directory marker)."""
        try:
            st = os.stat(self.path(rel))
        except (FileNotFoundError, NotADirectoryError):
            return None
        if directory:
            return _DIRECTORY_VERSION if _is_dir(st.st_mode) else None
        return _version(st) if stat.S_ISREG(st.st_mode) else None

    def put(self, rel: str, data: bytes, *, if_absent: bool, if_version: str | None) -> str:
        """Write a file through a temporary file; see the module docstring for atomicity."""
        full = self.path(rel)
        parent = os.path.dirname(full)
        tmp = os.path.join(parent, temp_name())
        for attempt in range(_PRUNE_RACE_ATTEMPTS):
            self._makedirs(parent)
            if os.path.isdir(full):
                raise IsADirectoryError(errno.EISDIR, "a directory exists at this path", rel)
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, 0o600)
                break  # the temporary file now keeps the directory from being pruned
            except FileNotFoundError:
                # A concurrent delete pruned the directory, empty for a moment, that was just made.
                if attempt == _PRUNE_RACE_ATTEMPTS - 1:
                    raise
        else:  # pragma: no cover - the loop breaks or raises
            raise AssertionError("unreachable")
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                now = time.time_ns()
                os.utime(fd, ns=(now, now))
                if self.fsync:
                    os.fsync(fd)
                version = _version(os.fstat(fd))
            finally:
                os.close(fd)
            if if_absent:
                try:
                    os.link(tmp, full)
                except FileExistsError as err:
                    if os.path.isdir(full):
                        raise IsADirectoryError(errno.EISDIR, "a directory exists at this path", rel) from err
                    raise StoreConflictError(f"object {rel!r} exists") from err
            else:
                with self._locked(parent):
                    if if_version is not None:
                        current = self.head(rel, False)
                        if current != if_version:
                            raise StoreConflictError(f"object {rel!r} is at version {current!r}, not {if_version!r}")
                    os.replace(tmp, full)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
        if self.fsync:
            self._fsync_directory(parent)
        return version

    def _fsync_directory(self, directory: str) -> None:
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def make_directory(self, rel: str, *, if_absent: bool) -> str:
        """Create the directory (and its parents) a marker key names."""
        full = self.path(rel)
        if if_absent and os.path.isdir(full):
            raise StoreConflictError(f"directory {rel!r} exists")
        try:
            _private_makedirs(full, exist_ok=not if_absent)
        except FileExistsError as err:
            if os.path.isdir(full):
                raise StoreConflictError(f"directory {rel!r} exists") from err
            raise NotADirectoryError(errno.ENOTDIR, "a file exists at this path or a parent", rel) from err
        except NotADirectoryError as err:
            raise NotADirectoryError(errno.ENOTDIR, "a parent of the path is a file", rel) from err
        return _DIRECTORY_VERSION

    def delete(self, rel: str, directory: bool, *, if_version: str | None) -> bool:
        """Remove a file (or an empty directory); return whether it existed."""
        full = self.path(rel)
        parent = os.path.dirname(full)
        if directory:
            return self._delete_directory(rel, full, if_version=if_version)
        try:
            with self._locked(parent):
                if if_version is not None:
                    current = self.head(rel, False)
                    if current != if_version:
                        raise StoreConflictError(f"object {rel!r} is at version {current!r}, not {if_version!r}")
                st = os.lstat(full)
                if _is_dir(st.st_mode):
                    return False
                os.unlink(full)
        except (FileNotFoundError, NotADirectoryError):
            if if_version is not None:
                raise StoreConflictError(f"object {rel!r} is absent, not at version {if_version!r}") from None
            return False
        self._prune(parent)
        return True

    def _delete_directory(self, rel: str, full: str, *, if_version: str | None) -> bool:
        if not os.path.isdir(full):
            if if_version is not None:
                raise StoreConflictError(f"directory {rel!r} is absent")
            return False
        if if_version is not None and if_version != _DIRECTORY_VERSION:
            raise StoreConflictError(f"directory {rel!r} is not at version {if_version!r}")
        try:
            os.rmdir(full)
        except FileNotFoundError:
            return False
        except OSError as err:
            if err.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                raise
            # The marker goes, the directory stays: it still holds files, as a prefix would.
        self._prune(os.path.dirname(full))
        return True

    def _prune(self, directory: str) -> None:
        if not self.prune:
            return
        root = (self._real_root or self._resolve_root()).rstrip("/")
        while directory.startswith(root + "/"):
            try:
                os.rmdir(directory)
            except OSError:
                return
            directory = os.path.dirname(directory)

    # -- listing --------------------------------------------------------------------------

    def entries(self, directory: str, start: str, *, recursive: bool) -> list[Entry]:
        """Return the entries under ``directory`` whose first name starts with ``start``.

        Direct children only unless ``recursive``; the directory itself comes first as an
        entry when ``start`` is empty and it exists. Symbolic links to directories are not
        descended into (a link could loop, or lead outside the root).
        """
        full = self.path(directory)
        found: list[Entry] = []
        top = self._scan(full)
        if top is None:
            return found
        if directory and not start:
            found.append(Entry(directory, True))
        base = directory + "/" if directory else ""
        pending: list[tuple[str, os.DirEntry[str]]] = [
            (base + name, item) for name, item in top if not start or name.startswith(start)
        ]
        while pending:
            rel, item = pending.pop()
            is_directory = item.is_dir(follow_symlinks=False)
            found.append(Entry(rel, is_directory))
            if recursive and is_directory:
                children = self._scan(item.path)
                if children is not None:
                    pending.extend((f"{rel}/{name}", child) for name, child in children)
        return found

    def _scan(self, full: str) -> list[tuple[str, os.DirEntry[str]]] | None:
        """The entries of directory ``full`` (not our temporary files), or ``None`` when it is absent.

        Within :meth:`reads`, each directory is scanned once for the whole batch.
        """
        scans = self._batch.scans
        if scans is not None:
            found = scans.get(full)
            if found is not None or full in scans:
                return found
        try:
            with os.scandir(full) as items:
                entries: list[tuple[str, os.DirEntry[str]]] | None = [
                    (item.name, item) for item in items if not (item.name.startswith(".~") and is_temp_name(item.name))
                ]
        except (FileNotFoundError, NotADirectoryError):
            entries = None
        if scans is not None:
            scans[full] = entries
        return entries


class _Batch(threading.local):
    """What one thread's batch of reads has already walked and scanned (``None`` outside a batch)."""

    def __init__(self) -> None:
        self.checked: set[str] | None = None
        self.scans: dict[str, list[tuple[str, os.DirEntry[str]]] | None] | None = None


def _private_makedirs(directory: str, *, exist_ok: bool) -> None:
    """``os.makedirs`` creating every missing level 0700 (``os.makedirs`` gives ``mode`` only to the last).

    Folders that exist keep their mode: nothing is loosened or tightened that the store did not create.
    A level that a concurrent delete prunes while this runs (see ``LocalOps.prune``) is made again.

    Raises:
        FileExistsError: A file is in the way, or ``directory`` exists and not ``exist_ok``.
    """
    parent = os.path.dirname(directory)
    for attempt in range(_PRUNE_RACE_ATTEMPTS):
        if parent and parent != directory and not os.path.isdir(parent):
            _private_makedirs(parent, exist_ok=True)
        try:
            os.mkdir(directory, 0o700)
            return
        except FileExistsError:
            if os.path.isdir(directory):
                if not exist_ok:
                    raise
                return
            if os.path.lexists(directory) or attempt == _PRUNE_RACE_ATTEMPTS - 1:
                raise  # a file (or a link) is in the way
            # It existed at mkdir() and is gone now: a concurrent delete pruned it. Again.
        except FileNotFoundError:
            if attempt == _PRUNE_RACE_ATTEMPTS - 1:
                raise
            # A concurrent delete pruned the parent just made. Again.
