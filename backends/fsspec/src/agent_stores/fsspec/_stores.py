"""``FsspecAgentFileStore`` and ``FsspecSessionStore``: the core adapters over an fsspec driver."""

from __future__ import annotations

from agent_stores.core import ObjectAgentFileStore, ObjectSessionStore
from fsspec import AbstractFileSystem  # pyright: ignore[reportMissingTypeStubs]

from ._capabilities import FilesystemCapabilities
from ._connect import FsspecStore
from ._driver import FsspecObjectDriver

__all__ = ["FsspecAgentFileStore", "FsspecSessionStore"]


class FsspecAgentFileStore(FsspecStore, ObjectAgentFileStore):
    """The framework's ``AgentFileStore`` on any fsspec filesystem, files at their real paths.

    The file ``notes/a.md`` is ``<root>/notes/a.md``: the folder is browsable, and the
    framework's ``FileSystemAgentFileStore`` over the same local directory reads what this
    store wrote and the other way round. ``create_directory`` makes a real directory (listed
    while empty). Paths follow the framework's rules; a path that would escape the root
    (``..``, absolute, NUL, or through a symbolic link pointing outside) is a ``ValueError``.

    What is atomic depends on the filesystem (:attr:`capabilities`): on a local directory,
    fsspec's memory filesystem and SFTP, a write never shows a half-written file and
    ``write(..., overwrite=False)`` is an atomic exclusive create across processes (local
    ``link()``, SFTP ``RENAME``) or within the process (memory).

    Security posture:
        Files are stored as plaintext at their paths: anyone who can read the folder (or
        the bucket, or the SFTP account) reads them. No path can leave the root through
        the store; symbolic links inside the root that point outside it are refused (local:
        ``lstat``/``realpath``; SFTP: the server's ``REALPATH``), but a link swapped in
        between that check and the write is not caught, and a process that can write the
        folder can plant files: confine shared SFTP accounts (``ChrootDirectory``).

    ``FsspecAgentFileStore(fs, root)`` borrows a filesystem (never closed);
    ``FsspecAgentFileStore.from_url("file:///srv/agent/files")`` (or ``fsspec+<protocol>://...``,
    storage options in the query or as keywords) owns one, closed by ``aclose()``.

    Args:
        fs: The fsspec filesystem to borrow (never closed), or an :class:`FsspecObjectDriver`
            shared with other stores.
        root: The directory on ``fs`` holding the files (created on first write; omitted with a driver).
        fsync: Local only: flush each write to disk before it becomes visible.
        capabilities: Override the capabilities declared for the filesystem.
        tenant: Keep the files in ``<root>/tenants/<tenant>/``.
    """

    markers = True

    def __init__(
        self,
        fs: AbstractFileSystem | FsspecObjectDriver,
        root: str | None = None,
        *,
        fsync: bool | None = None,
        capabilities: FilesystemCapabilities | None = None,
        tenant: str | None = None,
    ) -> None:
        driver = self._connect_root(fs, root, fsync=fsync, capabilities=capabilities)
        super().__init__(driver, prefix="", tenant=tenant)
        self.objects = driver
        self.case_sensitive = driver.capabilities.case_sensitive
        self.empty_directories = driver.capabilities.empty_directories

    @property
    def capabilities(self) -> FilesystemCapabilities:
        """What the filesystem guarantees (declared, never probed)."""
        return self.objects.capabilities


class FsspecSessionStore(FsspecStore, ObjectSessionStore):
    """The framework's ``SessionStore`` on any fsspec filesystem: one JSON file per session.

    Snapshots use ``FileSessionStore``'s envelope, in ``<root>/<session-segment>.json``
    (session ids map injectively to file names, long ids by SHA-256). Every ``get`` returns
    an independent copy; ``set`` replaces the file atomically where the filesystem allows
    (:attr:`capabilities`), last writer wins; a snapshot that is not JSON is moved aside to
    ``<name>.json.<uuid>.corrupt`` and reported as a ``ValueError``. On a filesystem without
    ``atomic_compare_and_set`` (SFTP, generic), that quarantine's "delete only if unchanged"
    is a check followed by the delete: a snapshot written between the two is lost.

    Security posture:
        Snapshots (session state included) are plaintext JSON files: protect the folder as
        you would the sessions. Session ids become file names through an injective
        encoding, so no id can reach another file or leave the root.

    Borrowing and owning the filesystem work as in :class:`FsspecAgentFileStore`.

    Args:
        fs: The fsspec filesystem to borrow (never closed), or an :class:`FsspecObjectDriver`
            shared with other stores.
        root: The directory on ``fs`` holding the snapshots (created on first write; omitted with a driver).
        fsync: Local only: flush each write to disk before it becomes visible.
        capabilities: Override the capabilities declared for the filesystem.
        tenant: Keep the snapshots in ``<root>/tenants/<tenant>/``.
    """

    def __init__(
        self,
        fs: AbstractFileSystem | FsspecObjectDriver,
        root: str | None = None,
        *,
        fsync: bool | None = None,
        capabilities: FilesystemCapabilities | None = None,
        tenant: str | None = None,
    ) -> None:
        driver = self._connect_root(fs, root, fsync=fsync, capabilities=capabilities)
        super().__init__(driver, prefix="", tenant=tenant)
        self.objects = driver

    @property
    def capabilities(self) -> FilesystemCapabilities:
        """What the filesystem guarantees (declared, never probed)."""
        return self.objects.capabilities
