"""``S3ObjectDriver``: the core's ``ObjectDriver`` over one S3 bucket, through boto3 in threads.

boto3 blocks, so every operation runs in a worker thread of the driver's own pool: one hop per
operation, whatever number of requests it makes (a ``delete`` that reports whether the key
existed is a HEAD and a conditional DELETE in the same hop). Errors pass through one funnel,
:meth:`S3ObjectDriver._run`, which translates them by error code (``_errors.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast
from urllib.parse import urlsplit

from botocore.exceptions import ClientError

from agent_stores.core import Listing, StoreConflictError, StoredObject, StoreUnavailableError

from ._errors import error_code, is_conflict, is_missing, translate
from ._listing import LISTED_KEYS

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client

__all__ = ["MAX_KEY_BYTES", "WRITE_TOKEN", "S3ObjectDriver", "check_key"]

_T = TypeVar("_T")
_log = logging.getLogger("agent_stores.s3")

#: S3's limit on the length of an object key, in UTF-8 bytes.
MAX_KEY_BYTES: Final = 1024
#: Entries S3 returns per LIST page at most.
_PAGE: Final = 1000
#: Attempts of a reporting delete whose HEAD and conditional DELETE race with other writers.
_DELETE_ATTEMPTS: Final = 8
#: User metadata (``x-amz-meta-agent-stores-write``) every conditional PUT carries: a token unique
#: to that call, so a retried PUT recognises its own object (see :meth:`S3ObjectDriver.put`).
WRITE_TOKEN: Final = "agent-stores-write"


def check_key(key: str, *, what: str = "key", path_keys: bool = False) -> str:
    """Return ``key`` when S3 stores it exactly as given, else raise ``ValueError``.

    Always refused: non-strings, the empty key, NUL, more than 1,024 UTF-8 bytes (S3's limit)
    and unencodable text (lone surrogates). With ``path_keys`` (a server that stores keys as
    file paths, such as SeaweedFS, which would silently turn ``a//b`` into ``a/b``, drop a
    leading ``/`` and refuse ``..``), also a leading ``/``, empty segments other than a trailing
    one, and ``.`` or ``..`` segments: on such a server they would alias another key.

    Raises:
        ValueError: ``key`` is one of the above.
    """
    if not isinstance(key, str) or not key:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"S3 {what} must be a non-empty string, got {key!r}")
    if "\x00" in key:
        raise ValueError(f"S3 {what} must not contain NUL: {key!r}")
    try:
        size = len(key.encode("utf-8"))
    except UnicodeEncodeError as err:
        raise ValueError(f"S3 {what} is not encodable as UTF-8: {key!r}") from err
    if size > MAX_KEY_BYTES:
        raise ValueError(f"S3 {what} is {size} bytes of UTF-8, over S3's limit of {MAX_KEY_BYTES}: {key[:80]!r}...")
    if path_keys:
        if key.startswith("/"):
            raise ValueError(f"S3 {what} must be relative (no leading '/') on this server: {key!r}")
        segments = key.split("/")
        if any(s in {".", ".."} for s in segments) or "" in segments[:-1]:
            raise ValueError(f"S3 {what} must not hold '.', '..' or empty segments on this server: {key!r}")
    return key


class S3ObjectDriver:
    """A :class:`~agent_stores.core.ObjectDriver` over one S3 bucket; versions are ETags.

    Conditional writes are S3's own: ``put(if_absent=True)`` is ``PutObject`` with
    ``If-None-Match: *``; ``put(if_version=v)`` and ``delete(if_version=v)`` send ``If-Match: v``.
    A 412 answer, or ``NoSuchKey`` to a request with ``If-Match`` (servers differ), is a
    ``StoreConflictError`` — unless the object now carries this call's own write token: botocore
    retries a request whose answer was lost (a dropped connection, a timeout), and the retry of
    a conditional PUT the server had already stored is answered 412. Every conditional PUT
    therefore carries a token unique to the call in its user metadata
    (``x-amz-meta-agent-stores-write``), and a conflict is checked with one HEAD: our own
    object means the PUT succeeded, exactly once. ``list`` is ``ListObjectsV2`` (``Prefix``, ``Delimiter``,
    ``StartAfter``, ``MaxKeys``, continuation), in S3's UTF-8 byte order.

    Versions are the objects' ETags, which for plain uploads are the MD5 of the content:
    storing the very same bytes again gives the same version. A compare-and-set therefore
    cannot tell "unchanged" from "changed and changed back to the same bytes" — harmless for
    byte-level compare-and-set (the stored bytes are what the writer expected), but a caller
    that needs a fresh version on every write must make every write's bytes unique.

    ``delete`` reports whether the key existed, exactly, even under concurrent writers: it reads
    the ETag (HEAD) and deletes with ``If-Match`` on it, retrying if the object changed in
    between. On a server without conditional deletes (``conditional_delete=False``, e.g. S3
    compatibles that ignore ``If-Match`` on DELETE), ``delete`` is a HEAD then a plain DELETE:
    the answer may be stale under concurrent deletes, and ``delete(if_version=...)`` compares
    the version then deletes, so a write landing between the two is lost.

    The bucket is checked on first use (``HeadBucket``): a missing bucket is a
    ``StoreUnavailableError`` naming it, or is created when ``create_bucket`` is set.

    Args:
        client: A boto3 S3 client (thread-safe; borrowed unless ``owns_client``), or a
            callable that makes one on first use (in a worker thread, so reading the AWS
            config files stays off the event loop).
        bucket: The bucket name.
        owns_client: Close the client on :meth:`aclose`.
        create_bucket: Create the bucket on first use if it does not exist.
        conditional_delete: The server honours ``If-Match`` on ``DeleteObject`` (AWS S3 since
            2024, SeaweedFS, MinIO, moto). ``False`` selects the fallback described above.
        max_concurrency: Worker threads, hence S3 requests in flight at once (parallel GETs);
            at most the borrowed client's ``max_pool_connections``.
        ordered_listing: The server lists in S3's UTF-8 byte order, so a page of ``limit``
            entries is one request of ``MaxKeys=limit``. SeaweedFS lists in path-component
            order instead (``a/`` before ``a-b``: a directory sorts at its bare name), so with
            ``False`` a listing reads every entry under the prefix and sorts them: correct,
            but a paged listing costs one request per 1,000 entries under the prefix — except a
            first page (no ``after``) whose entries hold no ``/`` below the prefix, which is
            provably exact and costs one request (the newest segment of a history log, say).
        path_keys: The server stores keys as file paths (SeaweedFS): keys it would rewrite into
            other keys (``a//b``, ``/a``, ``a/../b``) are refused with ``ValueError`` (see
            :func:`check_key`). Keys our stores derive never have that shape.

    Raises:
        ValueError: ``bucket`` is empty or ``max_concurrency`` is not positive.
    """

    def __init__(
        self,
        client: S3Client | Callable[[], S3Client],
        bucket: str,
        *,
        owns_client: bool = False,
        create_bucket: bool = False,
        conditional_delete: bool = True,
        max_concurrency: int = 32,
        ordered_listing: bool = True,
        path_keys: bool = False,
    ) -> None:
        if not bucket or "/" in bucket:
            raise ValueError(f"an S3 bucket name is required (without '/'), got {bucket!r}")
        if max_concurrency < 1:
            raise ValueError(f"max_concurrency must be positive, got {max_concurrency!r}")
        if callable(client) and not hasattr(client, "put_object"):
            self._client: S3Client | None = None
            self._make_client: Callable[[], S3Client] | None = client
        else:
            self._client = client  # type: ignore[assignment]
            self._make_client = None
            # More threads than the borrowed client's connection pool would only make urllib3
            # open and discard connections (with a warning each time).
            pool = getattr(getattr(getattr(client, "meta", None), "config", None), "max_pool_connections", None)
            if isinstance(pool, int) and pool > 0:
                max_concurrency = min(max_concurrency, pool)
        self.bucket = bucket
        self.owns_client = owns_client
        self.create_bucket = create_bucket
        self.conditional_delete = conditional_delete
        self.max_concurrency = max_concurrency
        self.ordered_listing = ordered_listing
        self.path_keys = path_keys
        self._executor: ThreadPoolExecutor | None = None
        self._ready = False
        self._lock = threading.Lock()
        self._closed = False

    def telemetry_attributes(self) -> dict[str, str | int]:
        """The bucket, and the endpoint of a client made already, for the core's spans."""
        found: dict[str, str | int] = {"db.namespace": self.bucket}
        endpoint = urlsplit(str(getattr(getattr(self._client, "meta", None), "endpoint_url", "") or ""))
        if endpoint.hostname:
            found["server.address"] = endpoint.hostname
            found["server.port"] = endpoint.port or (443 if endpoint.scheme == "https" else 80)
        return found

    # -- the funnel ---------------------------------------------------------------------------

    async def _run(self, call: Callable[[S3Client], _T], *, key: str | None = None, conditional: bool = False) -> _T:
        """Run ``call(client)`` in a worker thread (one hop); translate boto3 errors (``translate``), cause chained.

        The hop is a bare ``submit`` whose worker settles the awaited future through
        ``call_soon_threadsafe``: a third less event-loop CPU than ``run_in_executor``, which
        chains a second future both ways. A caller cancelled before a worker picks the call up
        leaves it unrun, as with ``run_in_executor``.
        """
        if self._closed:
            raise StoreUnavailableError(f"the S3 driver for bucket {self.bucket!r} is closed")
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self.max_concurrency, thread_name_prefix="agent-stores-s3")
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[_T] = loop.create_future()
        try:
            self._executor.submit(self._call, call, loop, answer)
            return await answer
        except Exception as err:
            translated = translate(err, bucket=self.bucket, key=key, conditional=conditional)
            if translated is None:
                raise
            raise translated from err

    def _call(
        self, call: Callable[[S3Client], _T], loop: asyncio.AbstractEventLoop, answer: asyncio.Future[_T]
    ) -> None:
        """In the worker thread: make the client and check the bucket once, run ``call``, hand the outcome back."""
        if answer.cancelled():
            return  # the caller gave up before this thread started: the call is not made
        try:
            client = self._client
            if client is None or not self._ready:
                client = self._prepare()
            result = call(client)
        except BaseException as err:  # every outcome reaches the caller, as run_in_executor's would
            _settle_soon(loop, answer, None, err)
            return
        _settle_soon(loop, answer, result, None)

    def _prepare(self) -> S3Client:
        with self._lock:
            if self._client is None:
                assert self._make_client is not None
                self._client = self._make_client()
            if not self._ready:
                self._check_bucket(self._client)
                self._ready = True
            return self._client

    def _check_bucket(self, client: S3Client) -> None:
        try:
            client.head_bucket(Bucket=self.bucket)
        except ClientError as err:
            if error_code(err) not in {"404", "NoSuchBucket", "NotFound"}:
                raise
            if not self.create_bucket:
                raise ClientError(
                    {"Error": {"Code": "NoSuchBucket", "Message": "bucket not found"}}, "HeadBucket"
                ) from err
            self._create_bucket(client)

    def _create_bucket(self, client: S3Client) -> None:
        region = client.meta.region_name
        try:
            if region and region != "us-east-1":
                client.create_bucket(
                    Bucket=self.bucket,
                    CreateBucketConfiguration={"LocationConstraint": region},  # type: ignore[typeddict-item]
                )
            else:
                client.create_bucket(Bucket=self.bucket)
        except ClientError as err:
            if error_code(err) not in {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}:
                raise

    # -- ObjectDriver -------------------------------------------------------------------------

    async def get(self, key: str) -> StoredObject | None:
        """Return the object's bytes and ETag, or ``None`` when absent (one GET)."""
        check_key(key, path_keys=self.path_keys)
        bucket = self.bucket
        return await self._run(lambda client: _get(client, bucket, key), key=key)

    async def get_many(self, keys: Sequence[str]) -> list[StoredObject | None]:
        """Return :meth:`get` of every key, in order: the GETs spread over the worker threads, one hop each.

        Each thread GETs its share one after another, so ``max_concurrency`` requests are in
        flight and the event loop wakes once per thread, not once per key.
        """
        wanted = [check_key(key, path_keys=self.path_keys) for key in keys]
        if len(wanted) <= 1:
            return [await self.get(key) for key in wanted]
        bucket = self.bucket
        shares = min(self.max_concurrency, len(wanted))

        def call(share: int) -> Callable[[S3Client], list[StoredObject | None]]:
            return lambda client: [_get(client, bucket, key) for key in wanted[share::shares]]

        answers = await asyncio.gather(*(self._run(call(share)) for share in range(shares)))
        found: list[StoredObject | None] = [None] * len(wanted)
        for share, answer in enumerate(answers):
            found[share::shares] = answer
        return found

    async def head(self, key: str) -> str | None:
        """Return the object's ETag, or ``None`` when absent (one HEAD)."""
        check_key(key, path_keys=self.path_keys)
        bucket = self.bucket

        def call(client: S3Client) -> str | None:
            try:
                return client.head_object(Bucket=bucket, Key=key)["ETag"]
            except ClientError as err:
                if is_missing(err):
                    return None
                raise

        return await self._run(call, key=key)

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        """Store ``data`` (one PUT, conditional as asked) and return its ETag.

        Raises:
            StoreConflictError: ``if_absent`` and the key exists, or ``if_version`` is not the
                current ETag (including when the key is absent). Nothing was written.
            ValueError: ``key`` is not a key S3 stores as given (see :func:`check_key`).
        """
        check_key(key, path_keys=self.path_keys)
        if if_absent and if_version is not None:
            # Absent and at a version cannot both hold.
            raise StoreConflictError(f"s3://{self.bucket}/{key}: if_absent and if_version cannot both hold")
        bucket = self.bucket
        body = bytes(data)
        # A token only this call carries: when botocore retries a conditional PUT whose answer
        # was lost after the server stored it, the retry's 412 is recognised as our own write.
        token = os.urandom(16).hex() if if_absent or if_version is not None else ""

        def call(client: S3Client) -> str:
            if not if_absent and if_version is None:
                return client.put_object(Bucket=bucket, Key=key, Body=body)["ETag"]
            metadata = {WRITE_TOKEN: token}
            try:
                if if_absent:
                    answer = client.put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*", Metadata=metadata)
                else:
                    assert if_version is not None
                    answer = client.put_object(Bucket=bucket, Key=key, Body=body, IfMatch=if_version, Metadata=metadata)
            except ClientError as err:
                if not (is_conflict(err) or (if_version is not None and is_missing(err))):
                    raise
                mine = _written_by(client, bucket, key, token)
                if mine is None:
                    raise
                _log.info(
                    "s3://%s/%s: a conditional PUT was answered with a conflict after a retry, "
                    "but the object is this PUT's own write; it succeeded",
                    bucket,
                    key,
                )
                return mine
            return answer["ETag"]

        return await self._run(call, key=key, conditional=if_version is not None)

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        """Remove ``key``; return whether it existed (one hop: HEAD, then DELETE with ``If-Match``).

        Raises:
            StoreConflictError: ``if_version`` is given and is not the current ETag.
        """
        check_key(key, path_keys=self.path_keys)
        bucket = self.bucket
        conditional = self.conditional_delete

        def call(client: S3Client) -> bool:
            if if_version is not None:
                if conditional:
                    client.delete_object(Bucket=bucket, Key=key, IfMatch=if_version)
                    return True
                if _head(client, bucket, key) != if_version:
                    raise ClientError({"Error": {"Code": "PreconditionFailed", "Message": ""}}, "DeleteObject")
                client.delete_object(Bucket=bucket, Key=key)
                return True
            for _ in range(_DELETE_ATTEMPTS):
                version = _head(client, bucket, key)
                if version is None:
                    return False
                if not conditional:
                    client.delete_object(Bucket=bucket, Key=key)
                    return True
                try:
                    client.delete_object(Bucket=bucket, Key=key, IfMatch=version)
                except ClientError as err:
                    if is_conflict(err) or is_missing(err):
                        continue  # changed or deleted meanwhile: look again
                    raise
                return True
            # Rewritten on every look: delete whatever is there now.
            client.delete_object(Bucket=bucket, Key=key)
            return True

        return await self._run(call, key=key, conditional=if_version is not None)

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        """List keys under ``prefix`` in S3's (UTF-8 byte) order; ``after`` exclusive, ``limit`` entries at most.

        With ``ordered_listing`` (S3's own order), one ``ListObjectsV2`` request per 1,000 entries
        returned. Without it, every entry under ``prefix`` is listed, then sorted and cut here.
        With a delimiter and ``after`` equal to a common prefix, S3 may list that prefix again:
        entries ``<= after`` are dropped here.

        Raises:
            ValueError: ``limit`` is not positive, ``prefix`` is not a valid key prefix, or
                ``after`` holds NUL.
        """
        if limit is not None and limit <= 0:
            raise ValueError(f"limit must be positive, got {limit!r}")
        if prefix:
            check_key(prefix, what="prefix", path_keys=self.path_keys)
        if after is not None and "\x00" in after:
            raise ValueError(f"S3 listings cannot start after a string holding NUL: {after!r}")
        bucket = self.bucket

        ordered = self.ordered_listing
        # StartAfter skips what the server orders before it, which is only what sorts before it
        # when the server lists in byte order (SeaweedFS skips "a/" after "a", for one).
        start_after = after if ordered and after is not None and after >= prefix else None

        def call(client: S3Client) -> Listing:
            entries: list[tuple[str, bool]] = []
            request: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
            if delimiter:
                request["Delimiter"] = delimiter
            if start_after is not None:
                request["StartAfter"] = start_after
            # Out of byte order, a first page of ``limit`` entries is still exact when none of
            # them continues below a "/": an entry that sorts before one of them in byte order
            # but after it in component order must hold a "/" where that one holds a lower
            # character, which puts it first in component order, hence on the page.
            trust_first_page = not ordered and limit is not None and after is None
            while True:
                if ordered or trust_first_page:
                    wanted = _PAGE if limit is None else min(_PAGE, limit - len(entries))
                else:
                    wanted = _PAGE
                answer = client.list_objects_v2(**request, MaxKeys=wanted)
                skimmed: list[str] | None = cast(Mapping[str, Any], answer).get(LISTED_KEYS)
                if skimmed is not None:  # a client we made: its keys, without a dict per object
                    page = [(k, False) for k in skimmed]
                else:
                    page = [(o["Key"], False) for o in answer.get("Contents", ()) if "Key" in o]
                page += [(p["Prefix"], True) for p in answer.get("CommonPrefixes", ()) if "Prefix" in p]
                token = answer.get("NextContinuationToken")
                if trust_first_page:
                    trust_first_page = False
                    if all("/" not in k[len(prefix) :] for k, _ in page):
                        entries = page
                        break
                    if answer.get("IsTruncated") and token:
                        # Not provably exact: list everything from the start.
                        continue
                entries += [e for e in page if after is None or e[0] > after]
                if not answer.get("IsTruncated") or not token:
                    break
                if ordered and limit is not None and len(entries) >= limit:
                    break
                request["ContinuationToken"] = token
            entries.sort()
            if limit is not None:
                del entries[limit:]
            return Listing([k for k, folded in entries if not folded], [k for k, folded in entries if folded])

        return await self._run(call, key=prefix)

    async def aclose(self) -> None:
        """Stop the worker threads; close the client if the driver owns it. Idempotent."""
        if self._closed:
            return
        self._closed = True
        executor, self._executor = self._executor, None
        if executor is not None:
            await asyncio.get_running_loop().run_in_executor(None, executor.shutdown)
        if self.owns_client and self._client is not None:
            self._client.close()

    def __repr__(self) -> str:
        return f"S3ObjectDriver(bucket={self.bucket!r})"


def _get(client: S3Client, bucket: str, key: str) -> StoredObject | None:
    """One GET: the object's bytes and ETag, or ``None`` when absent."""
    try:
        answer = client.get_object(Bucket=bucket, Key=key)
    except ClientError as err:
        if is_missing(err):
            return None
        raise
    with answer["Body"] as body:
        return StoredObject(body.read(), answer["ETag"])


def _head(client: S3Client, bucket: str, key: str) -> str | None:
    try:
        return client.head_object(Bucket=bucket, Key=key)["ETag"]
    except ClientError as err:
        if is_missing(err):
            return None
        raise


def _written_by(client: S3Client, bucket: str, key: str, token: str) -> str | None:
    """The object's ETag if it carries this write's ``token`` (the retried PUT had stored it), else ``None``."""
    try:
        answer = client.head_object(Bucket=bucket, Key=key)
    except ClientError as err:
        if is_missing(err):
            return None
        raise
    return answer["ETag"] if answer.get("Metadata", {}).get(WRITE_TOKEN) == token else None


def _settle_soon(
    loop: asyncio.AbstractEventLoop, answer: asyncio.Future[_T], result: _T | None, error: BaseException | None
) -> None:
    """From a worker thread: settle ``answer`` on its loop (dropped when the loop is closed)."""
    with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody awaits the answer
        loop.call_soon_threadsafe(_settle, answer, result, error)


def _settle(answer: asyncio.Future[_T], result: _T | None, error: BaseException | None) -> None:
    """On the loop: settle ``answer`` unless its caller was cancelled meanwhile."""
    if answer.done():
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(cast(_T, result))
