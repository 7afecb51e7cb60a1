"""Operations on S3 through s3fs's async API: one request per operation, conditional writes by the server.

Every request goes through s3fs's ``_call_s3`` (its one funnel, with its retries), so a
``put`` is one ``PutObject`` carrying ``If-None-Match: *`` (exclusive create) or ``If-Match``
(compare-and-set), a conditional ``delete`` one ``DeleteObject`` with ``If-Match``, and a
``get`` is one ``GetObject`` whose ETag is the version. A conditional ``put`` also carries a
token unique to the call in its user metadata: when s3fs retries a PUT whose answer was lost
and the retry is refused (412), one ``HeadObject`` tells whether the object is the call's own
write, which then succeeded. Objects are
flat keys: a directory marker is the empty object ``dir/``, a file and a directory may share a
name, and nothing is a directory until something is stored under it.
"""

from __future__ import annotations

import uuid
from typing import Any

from agent_stores.core import StoreConflictError
from agent_stores.core.s3codes import CONFLICT_CODES, MISSING_BUCKET_CODES, MISSING_CODES
from fsspec import AbstractFileSystem  # pyright: ignore[reportMissingTypeStubs]

from ._errors import s3_code
from ._keys import Entry

__all__ = ["WRITE_TOKEN", "S3Ops", "is_s3"]

#: User metadata every conditional PUT carries (``x-amz-meta-agent-stores-write``), unique per call.
WRITE_TOKEN = "agent-stores-write"


def is_s3(fs_class: type[AbstractFileSystem]) -> bool:
    """Whether ``fs_class`` is s3fs's ``S3FileSystem`` (s3fs installed)."""
    try:
        from s3fs import S3FileSystem  # pyright: ignore[reportMissingTypeStubs]
    except ImportError:
        return False
    return issubclass(fs_class, S3FileSystem)


class S3Ops:
    """The async half of the driver for s3fs; each method is one or a few S3 requests.

    Args:
        fs: The ``S3FileSystem`` (borrowed unless the driver owns it).
        root: ``bucket/prefix`` (no trailing ``/``).
    """

    is_async = True

    def __init__(self, fs: AbstractFileSystem, root: str) -> None:
        self.fs: Any = fs  # s3fs ships no type information
        bucket, _, prefix = root.partition("/")
        self.bucket = bucket
        self.prefix = f"{prefix}/" if prefix else ""

    def _key(self, rel: str, directory: bool) -> str:
        return f"{self.prefix}{rel}/" if directory else f"{self.prefix}{rel}"

    async def _s3(self, method: str, **kwargs: Any) -> Any:
        return await self.fs._call_s3(method, Bucket=self.bucket, **kwargs)

    async def bucket_exists(self) -> bool:
        """One ``HeadBucket``: whether the bucket exists (any other failure raises)."""
        try:
            await self.fs._call_s3("head_bucket", Bucket=self.bucket)
        except OSError as err:
            if isinstance(err, FileNotFoundError) or s3_code(err) in MISSING_CODES | MISSING_BUCKET_CODES:
                return False
            raise
        return True

    async def get(self, rel: str, directory: bool) -> tuple[bytes, str] | None:
        """One ``GetObject``: the bytes and the ETag they were stored under."""
        try:
            response = await self._s3("get_object", Key=self._key(rel, directory))
        except OSError as err:
            if isinstance(err, FileNotFoundError) or s3_code(err) in MISSING_CODES:
                return None
            raise
        body = response["Body"]
        try:
            data = await body.read()
        finally:
            body.close()
        return bytes(data), str(response["ETag"]).strip('"')

    async def head(self, rel: str, directory: bool) -> str | None:
        """One ``HeadObject``: the ETag, or ``None``."""
        try:
            response = await self._s3("head_object", Key=self._key(rel, directory))
        except OSError as err:
            if isinstance(err, FileNotFoundError) or s3_code(err) in MISSING_CODES:
                return None
            raise
        return str(response["ETag"]).strip('"')

    async def put(self, rel: str, data: bytes, *, if_absent: bool, if_version: str | None) -> str:
        """One conditional ``PutObject``."""
        return await self._put(self._key(rel, False), data, if_absent=if_absent, if_version=if_version)

    async def _put(self, key: str, data: bytes, *, if_absent: bool, if_version: str | None) -> str:
        condition: dict[str, str] = {}
        if if_absent:
            condition["IfNoneMatch"] = "*"
        if if_version is not None:
            condition["IfMatch"] = f'"{if_version}"'
        # A token unique to this call: a retried PUT whose first answer was lost meets its own
        # object (412) and recognises it, so the write succeeds exactly once.
        token = uuid.uuid4().hex
        extra: dict[str, Any] = {"Metadata": {WRITE_TOKEN: token}} if condition else {}
        try:
            response = await self._s3("put_object", Key=key, Body=data, **condition, **extra)
        except OSError as err:
            code = s3_code(err)
            if condition and (
                isinstance(err, FileExistsError)
                or code in CONFLICT_CODES
                or (if_version is not None and (isinstance(err, FileNotFoundError) or code in MISSING_CODES))
            ):
                mine = await self._written_by(key, token)
                if mine is not None:
                    return mine
            if condition and (isinstance(err, FileExistsError) or code in CONFLICT_CODES):
                raise StoreConflictError(f"object {key!r}: the condition {condition} did not hold") from err
            if if_version is not None and (isinstance(err, FileNotFoundError) or code in MISSING_CODES):
                raise StoreConflictError(f"object {key!r} is absent, not at version {if_version!r}") from err
            raise
        finally:
            self.fs.invalidate_cache(f"{self.bucket}/{key}")
        return str(response["ETag"]).strip('"')

    async def _written_by(self, key: str, token: str) -> str | None:
        """The object's ETag if it carries this write's ``token``, else ``None``."""
        try:
            response = await self._s3("head_object", Key=key)
        except OSError:
            return None
        if response.get("Metadata", {}).get(WRITE_TOKEN) != token:
            return None
        return str(response["ETag"]).strip('"')

    async def make_directory(self, rel: str, *, if_absent: bool) -> str:
        """Store the empty marker object ``rel/``."""
        return await self._put(self._key(rel, True), b"", if_absent=if_absent, if_version=None)

    async def delete(self, rel: str, directory: bool, *, if_version: str | None) -> bool:
        """One ``DeleteObject`` with ``If-Match`` when ``if_version`` is given (atomic on the server).

        Without a condition a ``HeadObject`` first tells whether the object existed (S3's
        delete does not say).
        """
        key = self._key(rel, directory)
        try:
            if if_version is not None:
                try:
                    await self._s3("delete_object", Key=key, IfMatch=f'"{if_version}"')
                except OSError as err:
                    code = s3_code(err)
                    if isinstance(err, FileNotFoundError) or code in CONFLICT_CODES or code in MISSING_CODES:
                        raise StoreConflictError(f"object {key!r} is not at version {if_version!r}") from err
                    raise
                return True
            if await self.head(rel, directory) is None:
                return False
            await self._s3("delete_object", Key=key)
            return True
        finally:
            self.fs.invalidate_cache(f"{self.bucket}/{key}")

    async def entries(self, directory: str, start: str, *, recursive: bool) -> list[Entry]:
        """List the keys under ``directory/start`` (one paged ``ListObjectsV2``), as entries."""
        prefix = f"{self.prefix}{directory}/{start}" if directory else f"{self.prefix}{start}"
        delimiter = {} if recursive else {"Delimiter": "/"}
        found: list[Entry] = []
        token: dict[str, str] = {}
        strip = len(self.prefix)
        while True:
            page: Any = await self._s3("list_objects_v2", Prefix=prefix, **delimiter, **token)
            for item in page.get("Contents", []):
                key = str(item["Key"])[strip:]
                if not key or key == "/":
                    continue
                found.append(Entry(key[:-1], True) if key.endswith("/") else Entry(key, False))
            for common in page.get("CommonPrefixes", []):
                found.append(Entry(str(common["Prefix"])[strip:].rstrip("/"), True))
            if not page.get("IsTruncated"):
                return found
            token = {"ContinuationToken": str(page["NextContinuationToken"])}
