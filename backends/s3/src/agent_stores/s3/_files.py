"""``S3AgentFileStore``: harness files as S3 objects whose keys are the real paths."""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Final

from agent_framework import FileSearchResult

from agent_stores.core import KeySpace, ObjectAgentFileStore, StoredObject, decode_text

from ._connect import S3Bucket, S3Store
from ._driver import S3ObjectDriver

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client

__all__ = ["S3AgentFileStore"]

#: Files a search fetches at once, in parallel, ahead of the base class's reads.
SEARCH_WINDOW: Final = 32


class _Prefetch:
    """The candidates of one search, fetched in parallel windows just ahead of the reads."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.position: dict[str, int] = {}
        self.fetched: dict[str, StoredObject | None] = {}

    def plan(self, keys: list[str]) -> None:
        self.order = keys
        self.position = {k: i for i, k in enumerate(keys)}

    async def take(self, driver: S3ObjectDriver, key: str) -> tuple[bool, StoredObject | None]:
        """Return ``(True, object)`` for a planned key (fetching its window first), else ``(False, None)``."""
        at = self.position.get(key)
        if at is None:
            return False, None
        if key not in self.fetched:
            window = [k for k in self.order[at : at + SEARCH_WINDOW] if k not in self.fetched]
            for k, stored in zip(window, await driver.get_many(window), strict=True):
                self.fetched[k] = stored
        del self.position[key]
        return True, self.fetched.pop(key)


_SEARCH: ContextVar[_Prefetch | None] = ContextVar("agent_stores_s3_search", default=None)


class S3AgentFileStore(S3Store, ObjectAgentFileStore):
    """The framework's ``AgentFileStore`` on S3: one object per file at ``<prefix>files/<path>``.

    The bucket stays browsable: keys are the normalized paths. Paths follow the framework's
    rules (``_normalize_relative_path``): relative, ``/``-separated, no ``.``/``..``; a bad
    path, NUL, or a key over S3's 1,024-byte limit is a ``ValueError`` and nothing is written.
    Names are case sensitive. ``create_directory`` stores an empty marker object ``<dir>/`` so
    empty directories are listed. ``write(..., overwrite=False)`` is ``PutObject`` with
    ``If-None-Match: *``: atomic across processes, the loser gets ``FileExistsError``.
    ``read`` is one GET, ``write`` one PUT, ``file_exists`` one HEAD, ``list_children`` one LIST
    per 1,000 entries. ``search`` LISTs the candidates once and GETs them in parallel windows of
    32 while the base class scans (and numbers lines) as the framework does.

    ``S3AgentFileStore(client, bucket)`` borrows a boto3 S3 client and never closes it;
    :meth:`from_url` makes and owns one. Either way :meth:`aclose` stops the store's worker
    threads.

    Security posture:
        Content is stored as plaintext UTF-8 objects; use bucket encryption (SSE-S3 or SSE-KMS)
        and a bucket policy for confidentiality. Every key starts with ``<prefix>files/`` and no
        path can leave it. Tenants sharing a bucket are isolated by their roots, but an
        IAM principal that can read the bucket reads every tenant unless its policy restricts
        it to the tenant's root (``s3:prefix`` conditions, resource ARNs ending in
        ``<prefix>tenants/<tenant>/*``: everything of one tenant, of every kind, lies there).

    Args:
        client: A boto3 S3 client to borrow, or an :class:`S3ObjectDriver` or :class:`S3Bucket`
            shared with other stores.
        bucket, prefix, driver_options: Where the data lives, as in :class:`S3HistoryProvider`;
            files live under ``<prefix>files/``.
        tenant: Keep the files under ``<prefix>tenants/<tenant>/files/``.

    Raises:
        ValueError: No bucket with a client, or an unknown option.
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
        super().__init__(handle.driver, prefix=handle.under(KeySpace(tenant=tenant).root, "files"))
        self.tenant = tenant

    async def read(self, path: str) -> str | None:
        """Return the file's text, or ``None`` when absent (one GET; during a search, fetched ahead).

        Raises:
            ValueError: The object is not UTF-8, or ``path`` breaks the path rules.
        """
        prefetch = _SEARCH.get()
        if prefetch is not None:
            planned, stored = await prefetch.take(self.driver, self._file_key(path))  # type: ignore[arg-type]
            if planned:
                if stored is None:
                    return None
                return decode_text(stored.data, path)
        return await super().read(path)

    async def search(
        self,
        directory: str,
        regex_pattern: str,
        glob_pattern: str | None = None,
        *,
        recursive: bool = False,
    ) -> list[FileSearchResult]:
        """Search as the framework does, fetching the candidates in parallel (see the class docs).

        Raises:
            ValueError: ``directory`` breaks the path rules, the pattern is too long, or the
                search timed out.
            regex.error: ``regex_pattern`` is not a valid regular expression.
        """
        token = _SEARCH.set(_Prefetch())
        try:
            return await super().search(directory, regex_pattern, glob_pattern, recursive=recursive)
        finally:
            _SEARCH.reset(token)

    async def find_matching_files(
        self,
        directory: str,
        regex_pattern: str,
        glob_pattern: str | None = None,
        *,
        recursive: bool = False,
    ) -> list[str]:
        """Return the files in scope whose relative path matches ``glob_pattern`` (one LIST per 1,000)."""
        names = await super().find_matching_files(directory, regex_pattern, glob_pattern, recursive=recursive)
        prefetch = _SEARCH.get()
        if prefetch is not None:
            base = self._dir_prefix(directory)
            prefetch.plan([base + n for n in names])
        return names
