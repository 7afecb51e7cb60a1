"""``S3SessionStore``: session snapshots as S3 objects."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Self

import boto3

from agent_stores.core import ObjectSessionStore

from ._connect import borrow_driver, join_prefix, open_driver, parse_s3_url
from ._driver import S3ObjectDriver
from ._lifecycle import S3Resource

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client

__all__ = ["S3SessionStore"]


class S3SessionStore(S3Resource, ObjectSessionStore):
    """The framework's ``SessionStore`` on S3: one JSON object per session under ``<prefix>sessions/``.

    Snapshots use ``FileSessionStore``'s JSON envelope, so they move between stores unchanged.
    ``get`` is one GET and returns an independent copy; ``set`` is one PUT, last-writer-wins;
    ``delete`` is a HEAD and a conditional DELETE. A snapshot that is not JSON is copied aside to
    ``<key>.<uuid>.corrupt`` (``If-None-Match: *``) and removed with ``If-Match`` on the ETag
    that was read — so a snapshot rewritten meanwhile is never removed — and reported as a
    ``ValueError`` (``CorruptRecordError``); a retry starts clean. Borrowing and owning the
    client work as in :class:`~agent_stores.s3.S3AgentFileStore`.

    Security posture:
        Snapshots (session state included) are stored as plaintext JSON objects: use bucket
        encryption and a bucket policy as you would for the conversations themselves.
        Session ids map injectively to key segments (long ids by SHA-256), so no id can reach
        another session's object or leave the prefix. Tenants sharing a bucket are isolated
        only by distinct prefixes (and IAM policies scoped to them).

    Args:
        client: A boto3 S3 client to borrow, or an :class:`S3ObjectDriver` shared with other stores.
        bucket: The bucket (omitted with a driver).
        prefix: Key prefix of this store's data; snapshots live under ``<prefix>sessions/``.
        **options: Driver options with a client (``create_bucket``, ``conditional_delete``,
            ``max_concurrency``).
    """

    def __init__(
        self, client: S3Client | S3ObjectDriver, bucket: str | None = None, *, prefix: str = "", **options: Any
    ) -> None:
        driver, made = borrow_driver(client, bucket, **options)
        super().__init__(driver, prefix=join_prefix(prefix, "sessions"))
        self._made_driver = made

    @classmethod
    def from_url(cls, url: str, *, session: boto3.Session | None = None, **options: Any) -> Self:
        """Open a store on ``s3://bucket/prefix?...`` owning its client (see ``S3AgentFileStore.from_url``)."""
        location = parse_s3_url(url, **options)
        store = cls(open_driver(location, session=session), prefix=location.prefix)
        store._adopt(store.driver, owned=True)
        return store
