"""``S3Backend``: the ``s3://`` backend of ``agent_stores.core.open_stores``, as a declaration."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any, ClassVar

from agent_stores.core import ConnectedBackend, Connector, ObjectDriver, PrefixedObjectDriver
from agent_stores.core.objectlog import ObjectLogDriver, log_options

from ._connect import CONNECTOR, S3Bucket
from ._driver import S3ObjectDriver
from ._files import S3AgentFileStore
from ._history import S3HistoryProvider
from ._sessions import S3SessionStore

__all__ = ["S3Backend"]


class S3Backend(ConnectedBackend[S3Bucket]):
    """All S3 stores on ONE boto3 client and one driver (one thread pool, one connection pool).

    ``open_stores("s3://bucket/prefix?endpoint_url=...&region=...")`` builds this through the
    ``agent_stores.backends`` entry point. Nothing is contacted until a store is first used:
    the client is made (from the standard credential chain, or ``session``) and the bucket
    checked then. :meth:`aclose` closes the client; the stores handed out stop working.

    Objects live at ``<prefix>files/<path>``, ``<prefix>sessions/<id>.json`` and
    ``<prefix>history/<namespace>/<source>/<session>/...``.

    Args:
        url: ``s3://bucket/prefix`` with options in the query: ``endpoint_url``, ``region``,
            ``profile``, ``addressing_style``, ``create_bucket``, ``conditional_delete``,
            ``ordered_listing``, ``path_keys``, ``max_attempts``, ``connect_timeout``,
            ``read_timeout``, ``max_concurrency``; and, for the stores, ``cache_bytes`` and the
            object log's ``fair_claims``, ``concurrency``, ``compact_after``, ``tail_after`` and
            ``tail_records`` (see :class:`S3HistoryProvider`), read strictly.
        **options: The same options as keywords (they win over the query), and ``session``:
            a ``boto3.Session`` to make the client from.

    Raises:
        ValueError: The URL is malformed or an option is unknown.
    """

    connector: ClassVar[Connector[Any]] = CONNECTOR
    history_type = S3HistoryProvider
    file_store_type = S3AgentFileStore
    session_store_type = S3SessionStore
    #: A key is at most S3's 1,024 bytes: no 4,000-character paths.
    capabilities: ClassVar[Mapping[str, Mapping[str, Any]]] = {"files": {"long_names": False}}

    @property
    def driver(self) -> S3ObjectDriver:
        """The shared driver."""
        return self.handle.driver

    def object_driver(self) -> ObjectDriver:
        """The shared driver, seen from under the URL's prefix."""
        if not self.handle.prefix:
            return self.handle.driver
        return PrefixedObjectDriver(self.handle.driver, self.handle.prefix)

    def log_driver(self) -> ObjectLogDriver:
        """The object-store log under ``<prefix>history/`` (``within`` a tenant's root: its history)."""
        return ObjectLogDriver(
            self.object_driver(),
            prefix="history/",
            cache_idle=self.decode_cache.max_idle,
            clock=self.clock or time.time,
            **log_options(self.store_defaults),
        )
