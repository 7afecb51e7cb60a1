"""``S3Backend``: the ``s3://`` backend of ``agent_stores.core.open_stores``."""

from __future__ import annotations

from typing import Any

import boto3

from ._connect import S3Location, open_driver, parse_s3_url
from ._files import S3AgentFileStore
from ._history import S3HistoryProvider
from ._sessions import S3SessionStore

__all__ = ["S3Backend"]


class S3Backend:
    """All three S3 stores on ONE boto3 client and one driver (one thread pool, one connection pool).

    ``open_stores("s3://bucket/prefix?endpoint_url=...&region=...")`` builds this through the
    ``agent_stores.backends`` entry point. Nothing is contacted until a store is first used:
    the client is made (from the standard credential chain, or ``session``) and the bucket
    checked then. :meth:`aclose` closes the client; the stores handed out stop working.

    Objects live at ``<prefix>files/<path>``, ``<prefix>sessions/<id>.json`` and
    ``<prefix>history/<namespace>/<source>/<session>/...``.

    Args:
        url: ``s3://bucket/prefix`` with options in the query: ``endpoint_url``, ``region``,
            ``profile``, ``addressing_style``, ``create_bucket``, ``conditional_delete``, ``ordered_listing``,
            ``max_attempts``, ``connect_timeout``, ``read_timeout``, ``max_concurrency``.
        session: A ``boto3.Session`` to make the client from.
        **options: The same options as keywords (they win over the query).

    Raises:
        ValueError: The URL is malformed or an option is unknown.
    """

    def __init__(self, url: str, *, session: boto3.Session | None = None, **options: Any) -> None:
        self.url = url
        self.location: S3Location = parse_s3_url(url, **options)
        self.driver = open_driver(self.location, session=session)

    def history_provider(self, *, source_id: str, **options: Any) -> S3HistoryProvider:
        """Return a history provider on the shared driver; ``options`` as ``S3HistoryProvider`` takes them."""
        return S3HistoryProvider(self.driver, source_id=source_id, prefix=self.location.prefix, **options)

    def file_store(self, **options: Any) -> S3AgentFileStore:
        """Return a file store on the shared driver (files under ``<prefix>files/``)."""
        return S3AgentFileStore(self.driver, prefix=self.location.prefix, **options)

    def session_store(self, **options: Any) -> S3SessionStore:
        """Return a session store on the shared driver (snapshots under ``<prefix>sessions/``)."""
        return S3SessionStore(self.driver, prefix=self.location.prefix, **options)

    async def aclose(self) -> None:
        """Close the shared client and stop the worker threads."""
        await self.driver.aclose()

    def __repr__(self) -> str:
        return f"S3Backend({self.url!r})"
