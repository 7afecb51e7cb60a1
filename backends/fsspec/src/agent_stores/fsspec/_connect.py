"""The fsspec connector: an owned filesystem from a URL, or a driver around your filesystem and root."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Final

from agent_stores.core import MUST_EXIST, ConnectedStore, Connector
from agent_stores.core.codec import validate_cache_bytes, validate_cache_idle
from agent_stores.core.lifecycle import CACHE_BYTES, CACHE_IDLE
from agent_stores.core.objectlog import LOG_OPTIONS
from agent_stores.core.urls import parse_bool
from fsspec import AbstractFileSystem  # pyright: ignore[reportMissingTypeStubs]

from ._capabilities import FilesystemCapabilities
from ._driver import FsspecObjectDriver

__all__ = ["CONNECTOR", "FsspecConnector", "FsspecStore"]


def _fsync(options: dict[str, Any]) -> bool:
    """The ``fsync`` option, read strictly (``None`` or absent: off)."""
    value = options.pop("fsync", None)
    return False if value is None else parse_bool(value, option="fsync")


class FsspecConnector(Connector[FsspecObjectDriver]):
    """Opens :class:`FsspecObjectDriver` handles (a filesystem and a root directory on it).

    ``fsync``, ``capabilities`` and ``must_exist`` configure the driver; every option no store
    takes is a storage option of the filesystem (``key_filename=...``, ``endpoint_url=...``).
    """

    handle_type = FsspecObjectDriver
    options = frozenset({"fsync", "capabilities", MUST_EXIST})
    open_ended = True
    name = "fsspec"

    def open(self, url: str, **options: Any) -> FsspecObjectDriver:
        """A driver owning a filesystem of its own for ``file:///dir`` or ``fsspec+<protocol>://...``.

        Raises:
            ValueError: The URL is malformed or its protocol unknown to fsspec.
        """
        fsync = _fsync(options)
        capabilities: FilesystemCapabilities | None = options.pop("capabilities", None)
        must_exist = options.pop(MUST_EXIST, False)
        return FsspecObjectDriver.from_url(
            url, fsync=fsync, capabilities=capabilities, must_exist=must_exist, **options
        )

    def borrow(self, client: Any, **options: Any) -> FsspecObjectDriver:
        """A driver over the filesystem ``client`` (never closed) at ``root``.

        Raises:
            TypeError: ``client`` is not an fsspec ``AbstractFileSystem``.
            ValueError: No ``root``, or an unknown option.
        """
        if not isinstance(client, AbstractFileSystem):
            raise TypeError(f"expected an fsspec AbstractFileSystem or FsspecObjectDriver, got {type(client).__name__}")
        root: str | None = options.pop("root", None)
        if root is None:
            raise ValueError("a store built on a filesystem needs the root directory on it")
        fsync = _fsync(options)
        capabilities: FilesystemCapabilities | None = options.pop("capabilities", None)
        must_exist = options.pop(MUST_EXIST, False)
        if options:
            raise ValueError(f"unknown options {sorted(options)} for a borrowed filesystem")
        return FsspecObjectDriver(client, root, fsync=fsync, capabilities=capabilities, must_exist=must_exist)


CONNECTOR: Final = FsspecConnector()


class FsspecStore(ConnectedStore[FsspecObjectDriver]):
    """Borrow-or-own for the fsspec stores (``from_url`` from the core), each seeing the root with its markers.

    ``cache_bytes`` and the object log's options (:data:`~agent_stores.core.objectlog.LOG_OPTIONS`)
    in a URL's query are store options, never storage options.
    """

    connector: ClassVar[Connector[Any]] = CONNECTOR
    url_options: ClassVar[Mapping[str, Callable[[Any], Any]]] = {
        CACHE_BYTES: validate_cache_bytes,
        CACHE_IDLE: validate_cache_idle,
        **LOG_OPTIONS,
    }
    #: Whether the store lists directories as marker keys (files: yes; sessions, history: no).
    markers: ClassVar[bool] = False

    def _connect_root(
        self,
        fs: AbstractFileSystem | FsspecObjectDriver,
        root: str | None,
        *,
        fsync: bool | None,
        capabilities: FilesystemCapabilities | None,
    ) -> FsspecObjectDriver:
        driver = self._connect(fs, root=root, fsync=fsync, capabilities=capabilities)
        return driver if driver.markers == self.markers else driver.child("", markers=self.markers)
