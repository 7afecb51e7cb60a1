"""What a check leaves on the local disk besides its records, and giving it back.

Deleting the check's records empties its scratch area, but a SQLite file keeps the pages they
used (as free pages), and a store the check had to create (a database file, a root folder)
would stay behind. :class:`Footprint` notes the local place a URL names before the check writes
anything, and afterwards removes what the check created, or ``VACUUM``s a SQLite file the check
grew, so the file is no larger than before.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Footprint"]

_SQLITE = "sqlite://"
_FILE = "file://"
#: Files SQLite keeps beside a database: the write-ahead log, its index, a rollback journal.
_SQLITE_SIDECARS = ("-wal", "-shm", "-journal")


def _missing_top(path: Path) -> Path | None:
    """The outermost folder of ``path`` (itself included) that does not exist, or ``None``."""
    top: Path | None = None
    current = path
    while not current.exists() and current != current.parent:
        top = current
        current = current.parent
    return top


def _holds_files(folder: Path) -> bool:
    return any(files for _, _, files in os.walk(folder))


@dataclass
class Footprint:
    """The local file or folder a store URL names, as it was before the check.

    Attributes:
        path: The SQLite database file, or the root folder of a ``file://`` store.
        sqlite: Whether ``path`` is a SQLite database (else a folder).
        created: The outermost folder the check would create (a folder store), or ``path``
            itself for a database file that did not exist; ``None`` when it existed.
        size: The database file's size before the check (bytes; 0 when absent).
    """

    path: Path
    sqlite: bool
    created: Path | None
    size: int

    @classmethod
    def of(cls, location: str) -> Footprint | None:
        """The footprint of the store at ``location`` (a backend's ``location()``); ``None`` off the local disk."""
        if location.startswith(_SQLITE + "/"):
            path = Path(location[len(_SQLITE) :])
            existed = path.is_file()
            return cls(path, True, None if existed else path, path.stat().st_size if existed else 0)
        if location.startswith(_FILE + "/"):
            path = Path(location[len(_FILE) :])
            return cls(path, False, _missing_top(path), 0)
        return None

    def give_back(self) -> str:
        """Remove what the check created, or shrink a SQLite file it grew; return what was done ("" for nothing)."""
        if self.created is not None:
            return self._remove_created()
        if self.sqlite:
            return self._vacuum_if_grown()
        return ""

    def _remove_created(self) -> str:
        assert self.created is not None
        if self.sqlite:
            for suffix in ("", *_SQLITE_SIDECARS):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            return f"removed {self.path}, which the check created"
        if self.created.is_dir() and not _holds_files(self.created):
            shutil.rmtree(self.created)
            return f"removed {self.created}, which the check created"
        return ""

    def _vacuum_if_grown(self) -> str:
        """``VACUUM`` the file when the check left it larger than it was (its freed pages are given back)."""
        try:
            with sqlite3.connect(self.path, timeout=30, isolation_level=None) as connection:
                connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
                grown = self.path.stat().st_size
                if grown <= self.size:
                    return ""
                connection.execute("VACUUM")
                connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            connection.close()
        except sqlite3.Error as err:
            return f"could not VACUUM {self.path} ({err}); run VACUUM to give back the check's space"
        return f"VACUUM gave back {grown - self.path.stat().st_size} bytes of {self.path}"
