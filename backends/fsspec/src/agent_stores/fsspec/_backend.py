"""``FsspecBackend``: the ``file://`` and ``fsspec+<protocol>://`` backend of ``open_stores``, as a declaration."""

from __future__ import annotations

import os
import time
from typing import Any, ClassVar

from agent_stores.core import ConnectedBackend, Connector, KeySpace, ObjectLogDriver
from agent_stores.core.lifecycle import merge_capabilities
from agent_stores.core.objectlog import log_options

from ._capabilities import FilesystemCapabilities
from ._connect import CONNECTOR
from ._driver import FsspecObjectDriver
from ._history import FsspecHistoryProvider
from ._stores import FsspecAgentFileStore, FsspecSessionStore

__all__ = ["FsspecBackend"]

_REAL_PATHS = (
    "Objects are files at their real paths: a key that is also the directory of other keys ('a' and "
    "'a/b'), a directory marker with content ('a/' holding bytes), or an empty path segment ('a//b') "
    "cannot exist on a filesystem. Such keys are a NotADirectoryError/IsADirectoryError or ValueError "
    "here; the core's stores never make them (KeySpace and the framework's path rules)."
)
_EMPTY_SEGMENT = (
    "Log keys ending with '/' or holding '//' put the log's folder at an empty path segment, which a "
    "filesystem cannot hold (ValueError); KeySpace keys never contain one."
)


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
        **options: ``fsync`` and ``capabilities`` for the driver; ``cache_bytes`` and the object
            log's ``fair_claims``, ``concurrency``, ``compact_after``, ``tail_after`` and
            ``tail_records`` for the stores (also in the query, read strictly; see
            :class:`FsspecHistoryProvider`); anything else is a storage option of the filesystem
            (``key_filename=...``, ``endpoint_url=...``).

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

    def scoped(self, kind: str, tenant: str | None) -> tuple[FsspecObjectDriver, dict[str, Any]]:
        """The ``<root>/<kind>`` folder, or ``<root>/tenants/<tenant>/<kind>``: files list directories as markers."""
        return self.handle.child(KeySpace(tenant=tenant).root + kind, markers=kind == "files"), {}

    def object_driver(self) -> FsspecObjectDriver:
        """The root, without directory markers: each store the core builds keeps to its own prefix."""
        return self.handle.child("", markers=False)

    def log_driver(self) -> ObjectLogDriver:
        """The object-store log under ``<root>/history`` (``within`` a tenant's root, its history)."""
        return ObjectLogDriver(
            self.object_driver(),
            prefix="history/",
            cache_idle=self.decode_cache.max_idle,
            clock=self.clock or time.time,
            **log_options(self.store_defaults),
        )

    @classmethod
    def declared_on(cls, filesystem: FilesystemCapabilities, *, processes: bool = True) -> dict[str, dict[str, Any]]:
        """What the stores and drivers declare on a filesystem that guarantees ``filesystem``.

        ``processes``: the filesystem is shared between processes (all but fsspec's memory filesystem).
        """
        return merge_capabilities(cls.declared_capabilities(), filesystem.suites(processes=processes))

    def conformance_capabilities(self) -> dict[str, dict[str, Any]]:
        """The core's capabilities, as far as this filesystem guarantees them (:meth:`declared_on`)."""
        return self.declared_on(self.handle.capabilities, processes=self.handle.protocol != "memory")

    def location(self) -> str:
        """A local root's real path (``file://...``); any other filesystem's normalized URL."""
        if self.handle.protocol in ("file", "local"):
            return "file://" + os.path.realpath(self.handle.root)
        return super().location()

    def __repr__(self) -> str:
        return f"FsspecBackend({self.handle!r})"

    def conformance_divergences(self) -> dict[str, dict[str, str]]:
        """Declared divergences for ``agent-stores check``: suite name to ``{clause: reason}``.

        The object log's own divergences (``OBJECT_LOG_DIVERGENCES``) are added by the check itself.
        """
        return {
            "object_driver": dict.fromkeys(
                (
                    "test_keys_are_exact",
                    "test_list_without_delimiter_returns_every_key_under_the_prefix",
                    "test_list_with_delimiter_folds_deeper_keys_into_common_prefixes",
                    "test_list_orders_by_code_point",
                    "test_list_prefix_is_literal",
                    "test_paged_listing_equals_the_unpaged_listing",
                    "test_list_matches_the_specification",
                ),
                _REAL_PATHS,
            ),
            "log_driver": dict.fromkeys(
                ("test_logs_with_related_keys_are_independent", "test_list_logs_prefix_is_literal"), _EMPTY_SEGMENT
            ),
        }
