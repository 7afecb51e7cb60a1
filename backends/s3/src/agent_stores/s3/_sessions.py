"""``S3SessionStore``: session snapshots as S3 objects."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_stores.core import KeySpace, ObjectSessionStore

from ._connect import S3Bucket, S3Store
from ._driver import S3ObjectDriver

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client

__all__ = ["S3SessionStore"]


class S3SessionStore(S3Store, ObjectSessionStore):
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
        client: A boto3 S3 client to borrow, or an :class:`S3ObjectDriver` or :class:`S3Bucket`
            shared with other stores.
        bucket, prefix, driver_options: Where the data lives, as in :class:`S3HistoryProvider`;
            snapshots live under ``<prefix>sessions/``.
        tenant: Keep the snapshots under ``<prefix>tenants/<tenant>/sessions/``.
    """

    def __init__(
        self,
        client: S3Client | S3ObjectDriver | S3Bucket,
        bucket: str | None = None,
        *,
        prefix: str | None = None,
        driver_options: dict[str, Any] | None = None,
        tenant: str | None = None,
    ) -> None:
        handle = self._connect(client, bucket=bucket, prefix=prefix, **(driver_options or {}))
        super().__init__(handle.driver, prefix=handle.under(KeySpace(tenant=tenant).root, "sessions"))
        self.tenant = tenant
