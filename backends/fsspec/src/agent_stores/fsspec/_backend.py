"""``FsspecBackend``: the ``file://`` and ``fsspec+<protocol>://`` backend of ``open_stores``, as a declaration."""

from __future__ import annotations

from typing import Any, ClassVar

from agent_stores.core import ConnectedBackend, Connector, ObjectLogDriver

from ._connect import CONNECTOR
from ._driver import FsspecObjectDriver
from ._history import FsspecHistoryProvider
from ._stores import FsspecAgentFileStore, FsspecSessionStore

__all__ = ["FsspecBackend"]


class FsspecBackend(ConnectedBackend[FsspecObjectDriver]):
    """All stores on ONE filesystem, under one root directory.

    ``open_stores("file:///srv/agent")`` or ``open_stores("fsspec+sftp://agent@host/srv/agent")``
    builds this through the ``agent_stores.backends`` entry points (``file`` and ``fsspec``).
    The root holds ``files/`` (the harness files at their real paths), ``sessions/`` (one
    JSON snapshot per session), ``history/`` (the history log) and a folder per store the core
    builds over the object driver. Nothing is connected until a store is first used;
    :meth:`aclose` closes the filesystem's connection.

    Args:
        url: ``file:///absolute/dir`` or ``fsspec+<protocol>://...``; query parameters are
            storage options of the filesystem.
        **options: ``fsync`` and ``capabilities`` for the driver; anything else is a
            storage option of the filesystem (``key_filename=...``, ``endpoint_url=...``).

    Raises:
        ValueError: The URL is malformed or its protocol unknown to fsspec.
    """

    connector: ClassVar[Connector[Any]] = CONNECTOR
    history_type = FsspecHistoryProvider
    file_store_type = FsspecAgentFileStore
    session_store_type = FsspecSessionStore

    @property
    def driver(self) -> FsspecObjectDriver:
        """The driver at the root."""
        return self.handle

    def scoped(self, kind: str) -> FsspecObjectDriver:
        """The ``<root>/<kind>`` folder: files list directories as markers, the others do not."""
        return self.handle.child(kind, markers=kind == "files")

    def object_driver(self) -> FsspecObjectDriver:
        """The root, without directory markers: each store the core builds keeps to its own prefix."""
        return self.handle.child("", markers=False)

    def log_driver(self) -> ObjectLogDriver:
        """The object-store log under ``<root>/history``."""
        return ObjectLogDriver(self.scoped("history"), prefix="")

    def __repr__(self) -> str:
        return f"FsspecBackend({self.handle!r})"
