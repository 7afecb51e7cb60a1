"""``ObjectAgentFileStore``: the framework's ``AgentFileStore`` over any :class:`ObjectDriver`."""

from __future__ import annotations

from typing import Final, TypedDict

from agent_framework import AgentFileStore, FileSearchResult, FileStoreEntry

from ._experimental import subclassing_experimental
from ._framework import matches_glob, normalize_relative_path
from .drivers import ObjectDriver
from .errors import StoreConflictError
from .keys import KeySpace
from .lifecycle import OwnedResource
from .telemetry import store_operation

__all__ = ["ObjectAgentFileStore", "ObjectStoreOptions", "decode_text", "normalize_path", "plain_literal"]


class ObjectStoreOptions(TypedDict, total=False):
    """Where a file or session store keeps its objects (see :class:`ObjectAgentFileStore`)."""

    prefix: str
    tenant: str | None


# Characters with a meaning in the framework's regex dialect (the ``regex`` module, VERSION1).
# A pattern without any of them matches exactly its own text.
_REGEX_SYNTAX: Final = frozenset("\\.^$*+?{}[]|()")


def normalize_path(path: str, *, is_directory: bool = False) -> str:
    r"""Return the normalized form of a file path, by the framework's rules plus one of ours.

    The framework's ``_normalize_relative_path`` trims surrounding whitespace, turns ``\``
    into ``/``, collapses repeated separators and refuses rooted paths, drive letters and
    ``.``/``..`` segments. On top of it every file store refuses a path that, once trimmed,
    holds a control character (U+0000 to U+001F and U+007F, NUL included: POSIX and SFTP cut
    a name at NUL, S3 listings cannot carry most of them in XML, S3-compatible servers differ
    on newlines, and a name with an escape sequence rewrites the terminal of whoever lists the
    folder), text that is not valid Unicode (a lone surrogate has no UTF-8 form), or a folder or
    file name that begins or ends with whitespace (the framework trims a whole path, so the
    folder ``"a "`` of ``"a /b"`` could never be listed: its name trims to ``"a"``), so every
    backend accepts and refuses exactly the same paths, and every file can be found by listing
    its folder.

    Raises:
        TypeError: ``path`` is not a string.
        ValueError: ``path`` breaks the rules above.
    """
    if not isinstance(path, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"a file path is a string, got {type(path).__name__}")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError as err:
        raise ValueError(f"Invalid path: {path!r}. Paths must be valid Unicode text.") from err
    normalized = normalize_relative_path(path, is_directory=is_directory)
    if any(ord(character) < 0x20 or character == "\x7f" for character in normalized):
        raise ValueError(f"Invalid path: {path!r}. Paths must not contain NUL or other control characters.")
    if any(segment != segment.strip() for segment in normalized.split("/")):
        raise ValueError(f"Invalid path: {path!r}. A folder or file name must not begin or end with whitespace.")
    return normalized


def plain_literal(pattern: str) -> str | None:
    """Return ``pattern`` lowercased when a backend may narrow a search by it, else ``None`` (no content filter).

    Only a plain printable ASCII literal qualifies: the framework matches case-insensitively
    with full Unicode case folding, under which ASCII letters also match non-ASCII text (``k``
    matches the Kelvin sign, ``ss`` matches ``ß``), so a backend narrowing by this literal
    must keep every file that is not plain ASCII as a candidate. The base class then scans
    the candidates as the framework does, so narrowing never changes a result.
    """
    if not pattern or not pattern.isascii() or not pattern.isprintable() or not _REGEX_SYNTAX.isdisjoint(pattern):
        return None
    return pattern.lower()


def decode_text(data: bytes, path: str) -> str:
    """Return a stored file's text.

    Raises:
        ValueError: ``data`` is not UTF-8 (the message names ``path``).
    """
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ValueError(f"File {path!r} is not UTF-8 text and cannot be read.") from err


with subclassing_experimental(AgentFileStore):

    class ObjectAgentFileStore(OwnedResource, AgentFileStore):
        """Files as objects whose keys are ``prefix`` + the normalized path, so a bucket stays browsable.

        Paths follow the framework's rules (``_normalize_relative_path``): relative, forward
        slashes, no ``.``/``..`` segments; control characters (NUL included) and lone surrogates
        are refused too
        (:func:`normalize_path`); a bad path is a ``ValueError``. Names are case
        sensitive. ``create_directory`` stores an empty marker object ``<dir>/`` so empty
        directories are listed. Exclusive create (``overwrite=False``) is a conditional write,
        atomic across processes.

        Security posture:
            Content is stored as plaintext UTF-8. Every key starts with ``prefix`` (under the
            tenant's root with ``tenant``); no path can escape it.

        Args:
            driver: The object driver; borrowed unless ``owns_driver``.
            prefix: Key prefix of every file (``""`` or ending with ``/``).
            tenant: Keep every file under ``tenants/<tenant>/`` (what a tenant view passes).
            owns_driver: Close the driver on ``aclose()``.

        Raises:
            ValueError: ``prefix`` does not end with ``/``, or ``tenant`` is empty.
        """

        case_sensitive = True
        empty_directories = True

        def __init__(
            self, driver: ObjectDriver, *, prefix: str = "files/", tenant: str | None = None, owns_driver: bool = False
        ) -> None:
            self.driver = driver
            self.prefix = KeySpace(tenant=tenant).under(prefix)
            self.tenant = tenant
            self._adopt(driver, owned=owns_driver)

        def _file_key(self, path: str) -> str:
            return self.prefix + normalize_path(path)

        def _dir_prefix(self, directory: str) -> str:
            normalized = normalize_path(directory, is_directory=True)
            return f"{self.prefix}{normalized}/" if normalized else self.prefix

        @store_operation("files", "write")
        async def write(self, path: str, content: str, *, overwrite: bool = True) -> None:
            """Write ``content``; with ``overwrite=False`` an atomic exclusive create.

            Raises:
                FileExistsError: ``overwrite`` is ``False`` and the file exists.
                ValueError: ``path`` breaks the path rules.
            """
            key = self._file_key(path)
            try:
                await self.driver.put(key, content.encode("utf-8"), if_absent=not overwrite)
            except StoreConflictError as err:
                raise FileExistsError(f"File already exists: {path!r}") from err

        @store_operation("files", "read")
        async def read(self, path: str) -> str | None:
            """Return the file's text, or ``None`` when absent.

            Raises:
                ValueError: The stored bytes are not UTF-8, or ``path`` breaks the path rules.
            """
            stored = await self.driver.get(self._file_key(path))
            if stored is None:
                return None
            return decode_text(stored.data, path)

        @store_operation("files", "delete")
        async def delete(self, path: str) -> bool:
            """Delete the file; return whether it existed."""
            return await self.driver.delete(self._file_key(path))

        @store_operation("files", "file_exists")
        async def file_exists(self, path: str) -> bool:
            """Return whether a file exists at ``path``."""
            return await self.driver.head(self._file_key(path)) is not None

        @store_operation("files", "create_directory")
        async def create_directory(self, path: str) -> None:
            """Record ``path`` as a directory so it is listed while empty; the root needs nothing."""
            marker = self._dir_prefix(path)
            if marker != self.prefix:
                await self.driver.put(marker, b"")

        @store_operation("files", "list_children")
        async def list_children(self, directory: str = "") -> list[FileStoreEntry]:
            """Return the direct children of ``directory``: subdirectories first, each group sorted by name."""
            base = self._dir_prefix(directory)
            listing = await self.driver.list(base, delimiter="/")
            directories = sorted({p[len(base) :].rstrip("/") for p in listing.prefixes} - {""})
            files = sorted(name for name in (k[len(base) :] for k in listing.keys) if name and not name.endswith("/"))
            return [FileStoreEntry(d, FileStoreEntry.DIRECTORY) for d in directories] + [
                FileStoreEntry(f, FileStoreEntry.FILE) for f in files
            ]

        @store_operation("files", "search")
        async def search(
            self,
            directory: str,
            regex_pattern: str,
            glob_pattern: str | None = None,
            *,
            recursive: bool = False,
        ) -> list[FileSearchResult]:
            """Search as the base class does (it numbers the lines), over the normalized ``directory``.

            The base class reads each candidate at ``directory`` *as given* joined with its name,
            so a spelling such as ``"docs "`` would list the files of ``docs`` and then read
            ``"docs /name"``, miss, and drop every match silently. Normalizing first avoids that.

            Raises:
                ValueError: ``directory`` breaks the path rules, the pattern is too long, or the
                    search timed out.
                regex.error: ``regex_pattern`` is not a valid regular expression.
            """
            normalized = normalize_path(directory, is_directory=True)
            return await super().search(normalized, regex_pattern, glob_pattern, recursive=recursive)

        @store_operation("files", "find_matching_files")
        async def find_matching_files(
            self,
            directory: str,
            regex_pattern: str,
            glob_pattern: str | None = None,
            *,
            recursive: bool = False,
        ) -> list[str]:
            """Return the files in scope whose relative path matches ``glob_pattern``.

            Candidates come from :meth:`_candidate_keys` (one listing here; a backend with a content
            index narrows them there); the regex is left to the base class's scan, which also
            numbers the lines.
            """
            base = self._dir_prefix(directory)
            keys = await self._candidate_keys(base, regex_pattern, recursive=recursive)
            names = (k[len(base) :] for k in keys)
            return sorted(n for n in names if n and not n.endswith("/") and matches_glob(n, glob_pattern))

        async def _candidate_keys(self, base: str, regex_pattern: str, *, recursive: bool) -> list[str]:
            """Return the keys under ``base`` (only direct children unless ``recursive``) that may match.

            The search push-down hook: a backend that can narrow by content overrides this and
            must return a superset of the keys whose content matches ``regex_pattern``
            case-insensitively (the base class re-scans every candidate). This default lists them all.
            """
            del regex_pattern
            listing = await self.driver.list(base, delimiter=None if recursive else "/")
            return listing.keys
