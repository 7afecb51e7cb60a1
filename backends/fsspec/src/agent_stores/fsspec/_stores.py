"""``FsspecAgentFileStore`` and ``FsspecSessionStore``: the core adapters over an fsspec driver."""

from __future__ import annotations

from typing import Any, Self, cast

from agent_stores.core import ObjectAgentFileStore, ObjectSessionStore
from fsspec import AbstractFileSystem  # pyright: ignore[reportMissingTypeStubs]

from ._capabilities import FilesystemCapabilities
from ._driver import FsspecObjectDriver
from ._url import split_options

__all__ = ["FsspecAgentFileStore", "FsspecSessionStore"]


class _FromUrl:
    """``from_url`` for a store whose constructor borrows a filesystem."""

    _markers: bool = True

    @classmethod
    def from_url(cls, url: str, **options: Any) -> Self:
        """Open a store that owns a filesystem of its own, created on first use and closed by ``aclose()``.

        ``url`` is ``file:///absolute/dir`` or ``fsspec+<protocol>://...`` (``fsspec+sftp://user@host:22/dir``,
        ``fsspec+s3://bucket/dir?endpoint_url=...``, ``fsspec+memory://dir``). ``options``: ``fsync``
        and ``capabilities`` configure the driver; every other option (and each query parameter)
        is a storage option of the filesystem.

        Raises:
            ValueError: The URL is malformed or its protocol unknown to fsspec.
        """
        store_options, storage_options = split_options(options)
        driver = FsspecObjectDriver.from_url(url, markers=cls._markers, **store_options, **storage_options)
        return cast(Any, cls)._over(driver)


class FsspecAgentFileStore(_FromUrl, ObjectAgentFileStore):
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

    Args:
        fs: The fsspec filesystem to borrow (never closed).
        root: The directory on ``fs`` holding the files (created on first write).
        fsync: Local only: flush each write to disk before it becomes visible.
        capabilities: Override the capabilities declared for the filesystem.
    """

    def __init__(
        self,
        fs: AbstractFileSystem,
        root: str,
        *,
        fsync: bool = False,
        capabilities: FilesystemCapabilities | None = None,
    ) -> None:
        self._init_driver(FsspecObjectDriver(fs, root, fsync=fsync, capabilities=capabilities), owned=False)

    @classmethod
    def _over(cls, driver: FsspecObjectDriver) -> FsspecAgentFileStore:
        store = cls.__new__(cls)
        store._init_driver(driver, owned=True)
        return store

    def _init_driver(self, driver: FsspecObjectDriver, *, owned: bool) -> None:
        ObjectAgentFileStore.__init__(self, driver, prefix="", owns_driver=owned)
        self.objects = driver
        self.case_sensitive = driver.capabilities.case_sensitive
        self.empty_directories = driver.capabilities.empty_directories

    @property
    def capabilities(self) -> FilesystemCapabilities:
        """What the filesystem guarantees (declared, never probed)."""
        return self.objects.capabilities


class FsspecSessionStore(_FromUrl, ObjectSessionStore):
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

    Args:
        fs: The fsspec filesystem to borrow (never closed).
        root: The directory on ``fs`` holding the snapshots (created on first write).
        fsync: Local only: flush each write to disk before it becomes visible.
        capabilities: Override the capabilities declared for the filesystem.
    """

    _markers = False

    def __init__(
        self,
        fs: AbstractFileSystem,
        root: str,
        *,
        fsync: bool = False,
        capabilities: FilesystemCapabilities | None = None,
    ) -> None:
        driver = FsspecObjectDriver(fs, root, markers=False, fsync=fsync, capabilities=capabilities)
        self._init_driver(driver, owned=False)

    @classmethod
    def _over(cls, driver: FsspecObjectDriver) -> FsspecSessionStore:
        store = cls.__new__(cls)
        store._init_driver(driver, owned=True)
        return store

    def _init_driver(self, driver: FsspecObjectDriver, *, owned: bool) -> None:
        ObjectSessionStore.__init__(self, driver, prefix="", owns_driver=owned)
        self.objects = driver

    @property
    def capabilities(self) -> FilesystemCapabilities:
        """What the filesystem guarantees (declared, never probed)."""
        return self.objects.capabilities
