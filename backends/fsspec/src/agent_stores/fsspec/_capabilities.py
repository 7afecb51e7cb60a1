"""What each filesystem guarantees, declared per filesystem and never probed."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Any

__all__ = ["FilesystemCapabilities"]


@dataclass(frozen=True)
class FilesystemCapabilities:
    """The guarantees an :class:`~agent_stores.fsspec.FsspecObjectDriver` gives on one filesystem.

    Attributes:
        name: Which filesystem and mechanism this describes (shown in ``repr`` and docs).
        atomic_create: ``put(..., if_absent=True)`` is an atomic exclusive create, also
            against other processes: exactly one of concurrent creators wins. History and
            exclusive file creation rely on it.
        atomic_compare_and_set: ``put``/``delete`` with ``if_version`` check and write in
            one atomic step against every agent-stores writer. Without it the check and the
            write are two steps (a concurrent writer in between can be overwritten).
        atomic_replace: A reader sees either the old or the new content of an overwritten
            object, never a partial one (temporary file moved into place, or a single PUT).
        case_sensitive: ``A.txt`` and ``a.txt`` are two objects.
        empty_directories: A directory marker is a real directory, listed while empty.
        rejects_file_directory_conflicts: A file and a directory never share a name: writing
            one where the other is raises ``IsADirectoryError`` / ``NotADirectoryError``.
        long_names: Segments of 1,000 characters work (object stores); a local or SFTP
            filesystem caps a segment at 255 bytes (longer is a ``ValueError``).
    """

    name: str
    atomic_create: bool
    atomic_compare_and_set: bool
    atomic_replace: bool
    case_sensitive: bool
    empty_directories: bool
    rejects_file_directory_conflicts: bool
    long_names: bool

    def suites(self, *, processes: bool = True) -> dict[str, dict[str, Any]]:
        """What the stores and drivers of a backend on this filesystem declare, where it differs from the core's.

        ``processes``: the filesystem is shared between processes (every one but fsspec's
        in-process memory filesystem). Suite name to capability fields, as
        ``ConnectedBackend.capabilities`` takes them.
        """
        atomic = self.atomic_create
        return {
            "history": {"concurrent_instances": atomic, "multi_process": atomic and processes},
            "files": {
                "case_sensitive": self.case_sensitive,
                "empty_directories": self.empty_directories,
                "atomic_create_across_instances": atomic,
                "rejects_file_directory_conflicts": self.rejects_file_directory_conflicts,
                "long_names": self.long_names,
            },
            "sessions": {"versioned": self.atomic_compare_and_set},
            "log_driver": {"concurrent_instances": atomic, "conditional_delete": atomic},
            "object_driver": {
                "atomic_create_across_instances": atomic,
                "atomic_if_version_across_instances": self.atomic_compare_and_set,
            },
        }

    @classmethod
    def local(cls) -> FilesystemCapabilities:
        """A local POSIX directory: ``link()`` for exclusive create, a directory ``flock`` for CAS.

        Case sensitivity is declared by platform: Linux file systems are case sensitive,
        macOS and Windows ones are not by default (pass your own capabilities otherwise).
        Windows has no ``flock``: compare-and-set is declared absent there.
        """
        return cls(
            name="local (os: temp file + link/replace, flock per directory)",
            atomic_create=True,
            atomic_compare_and_set=sys.platform != "win32",
            atomic_replace=True,
            case_sensitive=sys.platform.startswith("linux"),
            empty_directories=True,
            rejects_file_directory_conflicts=True,
            long_names=False,
        )

    @classmethod
    def memory(cls) -> FilesystemCapabilities:
        """Fsspec's ``MemoryFileSystem``: one process-wide store, every write under one process lock."""
        return cls(
            name="memory (fsspec MemoryFileSystem, process lock)",
            atomic_create=True,
            atomic_compare_and_set=True,
            atomic_replace=True,
            case_sensitive=True,
            empty_directories=True,
            rejects_file_directory_conflicts=True,
            long_names=True,
        )

    @classmethod
    def sftp(cls) -> FilesystemCapabilities:
        """Fsspec's paramiko ``SFTPFileSystem`` against OpenSSH's ``sftp-server``.

        Writes go to a temporary file moved into place with ``posix-rename@openssh.com``;
        exclusive create moves it with the plain SFTP ``RENAME``, which OpenSSH implements
        as ``link()`` + ``unlink()`` and so fails when the target exists. SFTP has no lock
        or conditional write, so ``if_version`` is a check followed by the write.
        """
        return cls(
            name="sftp (paramiko; temp file + rename / posix-rename)",
            atomic_create=True,
            atomic_compare_and_set=False,
            atomic_replace=True,
            case_sensitive=True,
            empty_directories=True,
            rejects_file_directory_conflicts=True,
            long_names=False,
        )

    @classmethod
    def s3(cls) -> FilesystemCapabilities:
        """s3fs on a server with conditional writes (AWS S3, SeaweedFS, MinIO, ...).

        ``put`` is one ``PutObject`` with ``If-None-Match: *`` (exclusive create) or
        ``If-Match`` (compare-and-set), ``delete`` with ``if_version`` one ``DeleteObject`` with
        ``If-Match``: atomic on a server that honours these headers (AWS S3, SeaweedFS; check
        yours: a server that ignores them writes unconditionally). Keys are flat: a directory
        is a marker object, files and directories may share a name, and keys are capped at
        1,024 bytes.
        """
        return cls(
            name="s3 (s3fs async; conditional PutObject/DeleteObject)",
            atomic_create=True,
            atomic_compare_and_set=True,
            atomic_replace=True,
            case_sensitive=True,
            empty_directories=True,
            rejects_file_directory_conflicts=False,
            long_names=False,
        )

    @classmethod
    def generic(cls, protocol: str) -> FilesystemCapabilities:
        """Any other filesystem, used through the plain fsspec API: nothing atomic is promised."""
        return cls(
            name=f"{protocol} (plain fsspec API, no atomic operations)",
            atomic_create=False,
            atomic_compare_and_set=False,
            atomic_replace=False,
            case_sensitive=True,
            empty_directories=False,
            rejects_file_directory_conflicts=False,
            long_names=False,
        )
