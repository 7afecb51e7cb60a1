"""``S3HistoryProvider``: chat history as immutable segment objects in S3, through the core's ``ObjectLogDriver``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Unpack

from agent_stores.core import LogHistoryProvider, PrefixedObjectDriver
from agent_stores.core.history import HistoryOptions, window_cache_options
from agent_stores.core.objectlog import LOG_OPTIONS, ObjectLogDriver

from ._connect import S3Bucket, S3Store
from ._driver import S3ObjectDriver

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client

__all__ = ["S3HistoryProvider"]


class S3HistoryProvider(S3Store, LogHistoryProvider):
    """The framework's ``HistoryProvider`` on S3: one immutable segment object per save.

    The history of a session lives under ``<prefix>history/<namespace>/<source>/<session>/``
    (the core's :class:`~agent_stores.core.objectlog.ObjectLogDriver`). Each save writes one
    segment holding the whole batch, claimed with ``PutObject`` + ``If-None-Match: *`` on the
    next sequence number: of two processes saving at once exactly one claims it, the other
    re-reads and retries, so nothing is lost or doubled. Segment names sort newest first, so a
    load with ``max_messages`` is one LIST of one key plus GETs of the newest segments, in
    parallel; long sessions are compacted into checkpoints that concurrent readers and writers
    survive. A window this store loaded before is loaded again with one LIST and one GET, sent
    together: the store remembers the newest records of the sessions it loaded (16 MiB in all)
    and the GET proves them current. A steady conversation costs one PUT per save. A session
    deleted (or expired) and written again never reuses a version. A save stores exactly what
    ``InMemoryHistoryProvider`` would (the framework's ``filter_new_messages`` decides).

    ``ttl`` is recorded in the segments, not in bucket lifecycle rules: an expired session
    reads as empty and is removed by its next save or by :meth:`purge_expired` (run it on a
    schedule to reclaim storage). Never expire or remove history objects by age (no bucket
    lifecycle rule, no clean-up job): a removed segment is a gap that makes the session
    unreadable, and the empty placeholders of deleted sessions are what make a stale writer
    conflict.

    ``S3HistoryProvider(client, bucket)`` borrows a boto3 S3 client (never closed; ``aclose()``
    stops the worker threads the store made); :meth:`from_url` owns one
    (``from_url("s3://bucket/prefix?endpoint_url=...", session=..., max_messages=...)``).

    Security posture:
        Messages are stored as plaintext (msgpack segments of the messages' JSON): use bucket
        encryption (SSE-S3 or SSE-KMS) and a bucket policy as you would for the conversations
        themselves. Keys are derived injectively from ``namespace``, ``source_id`` and the
        session id, so no id can reach another session's objects or leave the prefix; tenants
        sharing a bucket are isolated only by distinct prefixes or namespaces (and IAM policies
        scoped to them). A deleted session's segments are overwritten with nothing, but stay as
        empty objects (and as old versions, if the bucket has versioning on).

    Args:
        client: A boto3 S3 client to borrow, or an :class:`S3ObjectDriver` or :class:`S3Bucket`
            shared with other stores.
        bucket: The bucket (omitted with a driver or bucket handle).
        prefix: Key prefix of this store's data; history lives under ``<prefix>history/``
            (``<prefix>tenants/<tenant>/history/`` with ``tenant``); omitted with a bucket
            handle, which has its own.
        driver_options: With a client, ``S3ObjectDriver`` options (``create_bucket``,
            ``conditional_delete``, ``ordered_listing``, ``path_keys``, ``max_concurrency``).
        clock: Seconds since the epoch, for expiry (tests pass a fake one).
        fair_claims: Writers of one session take turns when they contend (the default; see
            ``docs/reliability.md``); ``False`` claims as earlier releases did: a little less
            waiting per save, but the writer that lost most may keep losing. Also the URL option
            ``?fair_claims=false``.
        concurrency: Most S3 requests one operation keeps in flight (a whole positive number).
        compact_after: A full load that read more segments than this writes a checkpoint.
        tail_after: A load that read more segments than this below the newest writes a tail
            object holding what it read; ``None`` (``none`` in a URL) writes and reads no tails.
        tail_records: Most messages a tail object holds.
            These four are the :class:`~agent_stores.core.objectlog.ObjectLogDriver`'s, read as it
            reads them; each is also a URL option (``?compact_after=128&tail_after=none``).
        **options: The options of every history provider (``source_id``, ``namespace``,
            ``tenant``, ``max_messages``, ``ttl``, ``skip_excluded``, ``cache_bytes``...), as
            :class:`~agent_stores.core.LogHistoryProvider` documents them; ``cache_bytes`` also
            bounds the remembered windows.
    """

    def __init__(
        self,
        client: S3Client | S3ObjectDriver | S3Bucket,
        bucket: str | None = None,
        *,
        prefix: str | None = None,
        driver_options: dict[str, Any] | None = None,
        clock: Callable[[], float] = time.time,
        fair_claims: bool = True,
        concurrency: int = 32,
        compact_after: int = 64,
        tail_after: int | None = 8,
        tail_records: int = 1000,
        **options: Unpack[HistoryOptions],
    ) -> None:
        settings = {
            "fair_claims": fair_claims,
            "concurrency": concurrency,
            "compact_after": compact_after,
            "tail_after": tail_after,
            "tail_records": tail_records,
        }
        log_settings = {name: LOG_OPTIONS[name](value) for name, value in settings.items()}  # refused before connecting
        handle = self._connect(client, bucket=bucket, prefix=prefix, **(driver_options or {}))
        self.objects = handle.driver
        view = PrefixedObjectDriver(handle.driver, handle.prefix) if handle.prefix else handle.driver
        log = ObjectLogDriver(view, prefix="history/", clock=clock, **window_cache_options(options), **log_settings)
        super().__init__(log, **options)
