"""``FsspecBackend``: the ``file://`` and ``fsspec+<protocol>://`` backend of ``open_stores``."""

from __future__ import annotations

from typing import Any

from ._driver import FsspecObjectDriver
from ._history import FsspecHistoryProvider
from ._stores import FsspecAgentFileStore, FsspecSessionStore
from ._url import split_options

__all__ = ["FsspecBackend"]


class FsspecBackend:
    """All three stores on ONE filesystem, under one root directory.

    ``open_stores("file:///srv/agent")`` or ``open_stores("fsspec+sftp://agent@host/srv/agent")``
    builds this through the ``agent_stores.backends`` entry points (``file`` and ``fsspec``).
    The root holds ``files/`` (the harness files at their real paths), ``sessions/`` (one
    JSON snapshot per session) and ``history/`` (the history log). Nothing is connected until a
    store is first used; :meth:`aclose` closes the filesystem's connection.

    Args:
        url: ``file:///absolute/dir`` or ``fsspec+<protocol>://...``; query parameters are
            storage options of the filesystem.
        **options: ``fsync`` and ``capabilities`` for the driver; anything else is a
            storage option of the filesystem (``key_filename=...``, ``endpoint_url=...``).

    Raises:
        ValueError: The URL is malformed or its protocol unknown to fsspec.
    """

    def __init__(self, url: str, **options: Any) -> None:
        store_options, storage_options = split_options(options)
        self.url = url
        self.driver = FsspecObjectDriver.from_url(url, **store_options, **storage_options)
        self._files = self.driver.child("files", markers=True)
        self._sessions = self.driver.child("sessions", markers=False)
        self._history = self.driver.child("history", markers=False)

    def history_provider(self, *, source_id: str, **options: Any) -> FsspecHistoryProvider:
        """Return a history provider over ``<root>/history``; ``options`` as ``FsspecHistoryProvider`` takes them."""
        return FsspecHistoryProvider._over(self._history, source_id=source_id, owned=False, **options)  # pyright: ignore[reportPrivateUsage]

    def file_store(self, **options: Any) -> FsspecAgentFileStore:
        """Return a file store over ``<root>/files`` (no options)."""
        if options:
            raise ValueError(f"unknown file store options: {sorted(options)}")
        store = FsspecAgentFileStore.__new__(FsspecAgentFileStore)
        store._init_driver(self._files, owned=False)  # pyright: ignore[reportPrivateUsage]
        return store

    def session_store(self, **options: Any) -> FsspecSessionStore:
        """Return a session store over ``<root>/sessions`` (no options)."""
        if options:
            raise ValueError(f"unknown session store options: {sorted(options)}")
        store = FsspecSessionStore.__new__(FsspecSessionStore)
        store._init_driver(self._sessions, owned=False)  # pyright: ignore[reportPrivateUsage]
        return store

    async def aclose(self) -> None:
        """Close the shared filesystem's connection."""
        for driver in (self._files, self._sessions, self._history):
            await driver.aclose()
        await self.driver.aclose()

    def __repr__(self) -> str:
        return f"FsspecBackend({self.driver!r})"
