"""Conformance clauses for ``agent_framework.AgentFileStore`` implementations.

The clauses pin down what the harness relies on: the framework's path rules
(``_normalize_relative_path``), byte-exact content, atomic exclusive create, directory
listings, and search results whose line numbers address the same lines as
``AgentFileStore.split_lines`` of what ``read`` returns. Where the framework's two reference
stores (``InMemoryAgentFileStore`` and ``FileSystemAgentFileStore``) legitimately differ, the
difference is a declared capability in :class:`FileStoreCapabilities`.

Every clause works under its own unique top-level directory, so the suite can run against a
live store that already holds data: it never lists the root, and never reads, writes or
deletes a path it did not make up itself.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
import pytest_asyncio
import regex
from agent_framework import AgentFileStore, FileSearchResult, FileStoreEntry
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ._base import ConformanceBase, incompressible, raises, relies_on, requires, unique_id

__all__ = ["FileStoreCapabilities", "FileStoreConformance"]

#: Concurrent exclusive-create attempts in a race clause.
_RACERS = 8

#: Content of every file the search clauses look for, unless a clause needs specific text.
_NEEDLE = "needle"

#: Health checks the property clauses suppress, safely: each example writes under its own
#: ``unique_id()`` directory, so reusing the clause's store across examples (a
#: function-scoped fixture) and running the clause from several subclasses (differing
#: executors) cannot make one example see another's data.
_SHARED_CLAUSE_CHECKS = [HealthCheck.function_scoped_fixture, HealthCheck.differing_executors]

#: Arbitrary text, with the sequences stores most often mangle drawn far more often than chance.
_TRICKY_TEXT = st.lists(
    st.one_of(
        st.text(max_size=12),
        st.sampled_from(["\r\n", "\r", "\n", "\u2028", "\x85", "e\u0301", "😀", "\ufeff", " ", "\t", "\x00"]),
    ),
    max_size=16,
).map("".join)


@dataclass(frozen=True)
class FileStoreCapabilities:
    """What a file store declares about itself; the defaults are the minimal contract.

    Each field selects clauses; nothing is detected by probing. Declare what your store
    really does: a wrong declaration fails the clauses of the declared behaviour.

    Attributes:
        case_sensitive: ``True`` when ``A.txt`` and ``a.txt`` are two files (like
            ``FileSystemAgentFileStore`` on Linux); ``False`` when they name one file (like
            ``InMemoryAgentFileStore``, which keys files by the lowercased path). There is
            no neutral answer: the suite checks whichever behaviour is declared.
        empty_directories: ``create_directory`` records a directory that is listed while it
            holds no file (``FileSystemAgentFileStore``). Without it, ``create_directory``
            must still succeed and must not create a file (``InMemoryAgentFileStore``, where
            directories exist only as prefixes of file paths).
        atomic_create_across_instances: ``write(..., overwrite=False)`` is an atomic
            exclusive create even when the racing writers use two different store instances
            from the factory (``FileSystemAgentFileStore`` opens with ``O_EXCL``).
            Atomicity among concurrent writers on one instance is always required; a store
            that only serialises exclusive creates with a per-instance lock declares
            ``False``.
        rejects_file_directory_conflicts: A file and a directory may not share a path:
            writing a file where a directory exists raises ``IsADirectoryError``, writing
            under a file raises ``NotADirectoryError`` (``FileSystemAgentFileStore``).
            ``False`` means both may exist side by side and both are listed
            (``InMemoryAgentFileStore``); the suite checks whichever is declared.
        long_names: Path segments of 1,000 characters and paths of about 4,000 characters
            (random characters, which no compression shrinks) are stored and listed. Without
            it only segments of up to 200 characters are required (a local file system caps a
            segment at 255 bytes).

    """

    case_sensitive: bool = False
    empty_directories: bool = False
    atomic_create_across_instances: bool = False
    rejects_file_directory_conflicts: bool = False
    long_names: bool = False


def _terminator(line: str) -> str:
    r"""Return the line terminator ``line`` ends with (``\r\n``, ``\n`` or nothing)."""
    if line.endswith("\r\n"):
        return "\r\n"
    return "\n" if line.endswith("\n") else ""


def _line_numbers(results: list[FileSearchResult]) -> list[int]:
    """Return every reported line number of a one-file search, in reported order."""
    assert len(results) == 1, f"expected exactly one matching file, got {[r.file_name for r in results]}"
    return [match.line_number for match in results[0].matching_lines]


def _names(entries: list[FileStoreEntry]) -> list[tuple[str, str]]:
    """Return ``(type, name)`` pairs of a listing, in listed order."""
    return [(entry.type, entry.name) for entry in entries]


def _large_content() -> str:
    """Return about 1 MB of text mixing line endings, unicode and a final line without terminator."""
    endings = ("\n", "\r\n", "\r")
    lines = [f"line {i:06d} ünïcødé 😀 e\u0301{endings[i % 3]}" for i in range(36_000)]
    return "".join(lines) + "last line without terminator"


#: Contents that must survive ``write`` then ``read`` unchanged (id, content).
_CONTENT_CASES: list[tuple[str, str]] = [
    ("crlf", "first\r\nsecond\r\n"),
    ("lone-cr", "first\rsecond\rthird"),
    ("mixed-endings", "a\nb\r\nc\rd\n\r\n"),
    ("empty", ""),
    ("trailing-newline", "text\n"),
    ("no-trailing-newline", "text\nmore"),
    ("whitespace-only", "  \t\n \n"),
    ("surrounding-whitespace", "\n\n  padded  \n\n"),
    ("astral-plane", "emoji 😀 clef 𝄞 cjk 𠀋"),
    ("combining-characters", "e\u0301 a\u0308 n\u0303 (decomposed, not NFC)"),
    ("byte-order-mark", "\ufeffstarts with a BOM"),
    ("control-characters", "nul\x00 bell\x07 escape\x1b"),
    ("unicode-line-separators", "a\u2028b\u2029c\x85d\x0be\x0cf"),
    ("large", _large_content()),
]

#: Search cases (id, content, pattern, expected line numbers, content after editing the first reported line).
_LINE_NUMBER_CASES: list[tuple[str, str, str, list[int], str]] = [
    ("crlf", "alpha\r\nbeta\r\ngamma\r\n", "beta$", [2], "alpha\r\nEDITED\r\ngamma\r\n"),
    ("lone-cr-is-content", "one\rtwo\nthree", "two|three", [1, 2], "EDITED\nthree"),
    ("unicode-separators-are-content", "a\u2028b\x0cc\x85d\nneedle", "b|needle", [1, 2], "EDITED\nneedle"),
    ("trailing-newline-ends-with-empty-line", "x\ny\n", "^$", [3], "x\ny\nEDITED"),
    ("no-trailing-newline", "x\n\ny", "^$", [2], "x\nEDITED\ny"),
    ("empty-file-is-one-empty-line", "", "^$", [1], "EDITED"),
    ("leading-blank-lines", "\n\nneedle\n", "needle", [3], "\n\nEDITED\n"),
]


def _assert_same_text(got: str | None, expected: str) -> None:
    """Fail with where two texts first differ: a full diff of a megabyte of text helps nobody and takes minutes."""
    if got == expected:
        return
    if got is None:
        pytest.fail("read returned None for a file just written", pytrace=False)
    at = next((i for i, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b), min(len(got), len(expected)))
    pytest.fail(
        f"content changed: read {len(got)} characters for {len(expected)} written; first difference at "
        f"index {at}: read {got[max(0, at - 20) : at + 20]!r}, wrote {expected[max(0, at - 20) : at + 20]!r}",
        pytrace=False,
    )


#: What clauses rely on, besides their own subject (see ``relies_on``).
_EXCLUSIVE_CREATE = (
    "write(overwrite=False) of an existing file raises FileExistsError (test_exclusive_create_of_existing_file_raises)"
)


class FileStoreConformance(ConformanceBase):
    """Conformance clauses for an ``AgentFileStore``.

    Subclass it, set ``capabilities`` (and optionally ``divergences``), and provide a
    ``file_store_factory`` fixture returning a callable ``(**options) -> store`` (or an
    awaitable of one). Every call must open a store over the same backing data: the suite
    opens two instances to race them and a fresh one to check that writes persist.
    """

    capabilities: ClassVar[FileStoreCapabilities] = FileStoreCapabilities()
    factory_fixture: ClassVar[str] = "file_store_factory"
    driver_suite: ClassVar[str | None] = "ObjectDriverConformance"

    @pytest_asyncio.fixture
    async def file_store(self, open_store: Callable[..., Awaitable[Any]]) -> AgentFileStore:
        """Open one store instance from the factory."""
        store: AgentFileStore = await open_store()
        return store

    @pytest.fixture
    def file_root(self) -> str:
        """Return this clause's own top-level directory; nothing else in the store is touched."""
        return unique_id("files")

    # ------------------------------------------------------------------ path rules

    async def test_path_surrounding_whitespace_is_trimmed(self, file_store: AgentFileStore, file_root: str) -> None:
        r"""Whitespace around a path is trimmed: ``"  dir/a.txt \n"`` is the file ``dir/a.txt``.

        Failing means the store keeps the spaces as part of the file name (or rejects the path),
        unlike the framework's ``_normalize_relative_path``. Fix: normalize every path argument
        with the framework's rules before using it as a key.
        """
        await file_store.write(f"  {file_root}/a.txt \n", "trimmed")
        assert await file_store.read(f"{file_root}/a.txt") == "trimmed"
        assert await file_store.read(f"\t{file_root}/a.txt  ") == "trimmed"
        assert await file_store.file_exists(f" {file_root}/a.txt ")
        assert _names(await file_store.list_children(f" {file_root} ")) == [("file", "a.txt")]
        assert await file_store.delete(f"  {file_root}/a.txt  ")
        assert await file_store.read(f"{file_root}/a.txt") is None

    async def test_a_file_is_listed_in_its_folder_whatever_the_names_spacing(
        self, file_store: AgentFileStore, file_root: str
    ) -> None:
        """A folder or file name with spaces around it is refused (``ValueError``) or stays reachable.

        The framework trims a whole path, so the folder ``"b "`` of ``"b /c.txt"`` is listed as
        ``list_children("b ")`` = the folder ``"b"``. Failing means a file was stored where
        listing its own folder cannot find it. Fix: refuse names that begin or end with
        whitespace (as ``agent_stores.core.files.normalize_path`` does).
        """
        for path in (f"{file_root}/b /c.txt", f"{file_root}/ d/e.txt", f"{file_root}/f/g.txt "):
            folder = path.rpartition("/")[0]
            try:
                await file_store.write(path, "spaced")
            except ValueError:
                continue
            stored = path.strip()
            name = stored.rpartition("/")[2]
            listed = _names(await file_store.list_children(folder))
            assert ("file", name) in listed, f"{stored!r} was written but listing {folder!r} shows {listed!r}"

    async def test_path_backslashes_are_separators(self, file_store: AgentFileStore, file_root: str) -> None:
        r"""A backslash is a path separator: ``dir\sub\a.txt`` is the file ``dir/sub/a.txt``.

        Failing means the store keeps backslashes as part of a name, so the same file has two
        spellings that do not meet. Fix: replace ``\`` with ``/`` before splitting the path
        (the framework's ``_normalize_relative_path`` does this).
        """
        await file_store.write(f"{file_root}\\sub\\a.txt", "backslashed")
        assert await file_store.read(f"{file_root}/sub/a.txt") == "backslashed"
        assert await file_store.file_exists(f"{file_root}/sub\\a.txt")
        assert _names(await file_store.list_children(file_root)) == [("directory", "sub")]
        assert _names(await file_store.list_children(f"{file_root}\\sub")) == [("file", "a.txt")]

    async def test_path_repeated_separators_collapse(self, file_store: AgentFileStore, file_root: str) -> None:
        """Repeated separators collapse: ``dir//sub///a.txt`` is the file ``dir/sub/a.txt``.

        Failing means empty segments survive normalization and create a second spelling of the
        same path (or a nameless directory). Fix: drop empty segments when splitting the path.
        """
        await file_store.write(f"{file_root}//sub///a.txt", "collapsed")
        assert await file_store.read(f"{file_root}/sub/a.txt") == "collapsed"
        assert await file_store.read(f"{file_root}\\/sub/\\a.txt") == "collapsed"
        assert _names(await file_store.list_children(f"{file_root}//")) == [("directory", "sub")]
        assert _names(await file_store.list_children(f"{file_root}/sub/")) == [("file", "a.txt")]

    async def test_rooted_paths_are_rejected(self, file_store: AgentFileStore, file_root: str) -> None:
        r"""Rooted paths and drive letters are a ``ValueError`` for every operation.

        Failing means a path such as ``/etc/x`` or ``C:\x`` was accepted, so a caller can
        address something outside the store's root. Fix: reject paths starting with ``/`` or
        ``\`` and paths whose first two characters are a letter and ``:``.
        """
        for path in (
            f"/{file_root}/x.txt",
            f"\\{file_root}\\x.txt",
            f"C:/{file_root}/x.txt",
            f"C:\\{file_root}\\x.txt",
            f"c:{file_root}/x.txt",
        ):
            await _expect_rejected(file_store, path, is_directory=False)
        for directory in (f"/{file_root}", f"\\{file_root}", f"C:/{file_root}", f"d:{file_root}"):
            await _expect_rejected(file_store, directory, is_directory=True)

    async def test_dot_segments_are_rejected(self, file_store: AgentFileStore, file_root: str) -> None:
        r"""Paths with ``.`` or ``..`` segments are a ``ValueError`` for every operation.

        Failing means the store resolves (or ignores) dot segments, so ``..`` can climb out of
        a folder the harness scoped a caller to. Fix: reject any segment equal to ``.`` or
        ``..`` after splitting on ``/`` and ``\``; never resolve them.
        """
        for path in (
            f"{file_root}/./x.txt",
            f"./{file_root}/x.txt",
            f"{file_root}/sub/../x.txt",
            f"{file_root}\\sub\\..\\x.txt",
            f"../{file_root}/x.txt",
            f"{file_root}/x/..",
        ):
            await _expect_rejected(file_store, path, is_directory=False)
        for directory in (f"{file_root}/sub/..", f"../{file_root}", f"{file_root}/.", f"{file_root}\\..\\{file_root}"):
            await _expect_rejected(file_store, directory, is_directory=True)

    async def test_empty_file_paths_are_rejected(self, file_store: AgentFileStore) -> None:
        """An empty or whitespace-only file path is a ``ValueError``.

        Failing means the store accepted a file with no name (often silently mapped to its
        root). Fix: reject a file path that is empty once trimmed and normalized.
        """
        for path in ("", "   ", "\t\n"):
            await _expect_rejected(file_store, path, is_directory=False)

    async def test_file_path_with_trailing_separator_is_rejected(
        self, file_store: AgentFileStore, file_root: str
    ) -> None:
        r"""A file path ending with a separator (``dir/a.txt/``) is a ``ValueError``; nothing is created.

        Failing means a directory-shaped path was silently treated as the file without the
        separator. Fix: for file paths, reject a trailing ``/`` or ``\`` before stripping
        separators (directory paths may end with one).
        """
        for path in (f"{file_root}/a.txt/", f"{file_root}\\a.txt\\", f"{file_root}/d//"):
            await _expect_rejected(file_store, path, is_directory=False)
        assert await file_store.list_children(file_root) == []

    # ------------------------------------------------------------------ content

    @pytest.mark.parametrize(("content"), [c for _, c in _CONTENT_CASES], ids=[i for i, _ in _CONTENT_CASES])
    async def test_content_round_trips_exactly(self, file_store: AgentFileStore, file_root: str, content: str) -> None:
        """``read`` returns exactly what ``write`` stored: line endings, whitespace, unicode, 1 MB.

        Failing means the store rewrites content: normalizes CRLF or lone CR, strips
        whitespace, drops an empty file, re-encodes or normalizes unicode, or truncates large
        content. Line numbers from ``search`` and line edits then address the wrong text.
        Fix: store the UTF-8 bytes of ``content`` as they are and decode them unchanged.
        """
        path = f"{file_root}/content.txt"
        await file_store.write(path, content)
        _assert_same_text(await file_store.read(path), content)
        assert await file_store.file_exists(path)

    @settings(max_examples=40, deadline=None, suppress_health_check=_SHARED_CLAUSE_CHECKS)
    @given(content=_TRICKY_TEXT)
    async def test_any_text_round_trips_exactly(self, file_store: AgentFileStore, content: str) -> None:
        """Any text (arbitrary unicode, any line endings) survives ``write`` then ``read`` unchanged.

        Failing means some character or sequence is altered on the way in or out; the
        shrunk example names it. Fix: store and return the exact UTF-8 encoding.
        """
        path = f"{unique_id('files')}/any.txt"
        await file_store.write(path, content)
        _assert_same_text(await file_store.read(path), content)

    async def test_overwrite_replaces_whole_content(self, file_store: AgentFileStore, file_root: str) -> None:
        """Overwriting with shorter content leaves only the new content.

        Failing means the old content's tail survives (a write that does not truncate) or the
        write was ignored. Fix: replace the whole file on ``write(..., overwrite=True)``.
        """
        path = f"{file_root}/a.txt"
        await file_store.write(path, "a long first version\nwith two lines\n")
        await file_store.write(path, "short")
        assert await file_store.read(path) == "short"
        await file_store.write(path, "short", overwrite=True)
        assert await file_store.read(path) == "short"

    async def test_read_of_missing_file_is_none(self, file_store: AgentFileStore, file_root: str) -> None:
        """Reading a file that does not exist returns ``None`` (not ``""``, not an error).

        Failing means the harness cannot tell a missing file from an empty one. Fix: return
        ``None`` when nothing is stored at the path.
        """
        assert await file_store.read(f"{file_root}/missing.txt") is None
        assert await file_store.read(f"{file_root}/missing/nested.txt") is None
        assert not await file_store.file_exists(f"{file_root}/missing.txt")

    async def test_delete_reports_whether_the_file_existed(self, file_store: AgentFileStore, file_root: str) -> None:
        """``delete`` returns ``True`` when it removed a file and ``False`` when there was none.

        Failing means the return value lies, or the file is still readable, reported or
        listed after deletion. Fix: return whether a file was actually removed, and remove it
        from every view (read, ``file_exists``, listing).
        """
        path = f"{file_root}/a.txt"
        await file_store.write(path, "doomed")
        await file_store.write(f"{file_root}/b.txt", "kept")
        assert await file_store.delete(path) is True
        assert await file_store.delete(path) is False
        assert await file_store.read(path) is None
        assert not await file_store.file_exists(path)
        assert _names(await file_store.list_children(file_root)) == [("file", "b.txt")]
        assert await file_store.read(f"{file_root}/b.txt") == "kept"

    async def test_file_exists_only_for_files(self, file_store: AgentFileStore, file_root: str) -> None:
        """``file_exists`` is ``True`` for a file (even an empty one) and ``False`` for a directory.

        A directory path also reads as ``None`` and ``delete`` of it is ``False`` and removes
        nothing. Failing means directories and files are confused, or an empty file counts
        as missing. Fix: answer for files only; a directory is never a file.
        """
        await file_store.write(f"{file_root}/d/a.txt", "inside")
        await file_store.write(f"{file_root}/empty.txt", "")
        assert await file_store.file_exists(f"{file_root}/d/a.txt")
        assert await file_store.file_exists(f"{file_root}/empty.txt")
        assert not await file_store.file_exists(f"{file_root}/d")
        assert not await file_store.file_exists(f"{file_root}/missing.txt")
        assert await file_store.read(f"{file_root}/d") is None
        assert await file_store.delete(f"{file_root}/d") is False
        assert await file_store.read(f"{file_root}/d/a.txt") == "inside"

    # ------------------------------------------------------------------ exclusive create

    async def test_exclusive_create_writes_a_new_file(self, file_store: AgentFileStore, file_root: str) -> None:
        """``write(..., overwrite=False)`` creates a file that does not exist yet, also after a delete.

        Failing means exclusive create refuses new paths or remembers deleted files. Fix:
        condition the create only on the file's current absence.
        """
        path = f"{file_root}/new.txt"
        await file_store.write(path, "first", overwrite=False)
        assert await file_store.read(path) == "first"
        assert await file_store.delete(path)
        await file_store.write(path, "second", overwrite=False)
        assert await file_store.read(path) == "second"

    async def test_exclusive_create_of_existing_file_raises(self, file_store: AgentFileStore, file_root: str) -> None:
        """``write(..., overwrite=False)`` on an existing file raises ``FileExistsError`` and changes nothing.

        Failing means exclusive create overwrote the file or raised another error. Fix:
        make the write conditional on absence and raise ``FileExistsError`` (translate your
        backend's "precondition failed").
        """
        path = f"{file_root}/a.txt"
        await file_store.write(path, "original")
        with raises(FileExistsError, "write(overwrite=False) of a file that exists"):
            await file_store.write(path, "replacement", overwrite=False)
        with raises(FileExistsError, "write(overwrite=False) of another spelling of a file that exists"):
            await file_store.write(f" {file_root}//a.txt", "other spelling", overwrite=False)
        assert await file_store.read(path) == "original"

    @relies_on(_EXCLUSIVE_CREATE)
    async def test_exclusive_create_race_on_one_instance(self, file_store: AgentFileStore, file_root: str) -> None:
        """Concurrent exclusive creates of one path on one instance: exactly one wins.

        The others raise ``FileExistsError`` and the file holds the winner's content.
        Failing means the create checks and then writes (several writers see "absent"), so
        two agents both believe they created the file. Fix: use the backend's conditional
        write (``O_EXCL``, ``If-None-Match: *``, ``SET NX``, a unique index) instead of a
        check followed by a write.
        """
        await _race_exclusive_create([file_store], f"{file_root}/race.txt")

    @relies_on(_EXCLUSIVE_CREATE)
    @requires("atomic_create_across_instances")
    async def test_exclusive_create_race_across_instances(
        self, open_store: Callable[..., Awaitable[Any]], file_root: str
    ) -> None:
        """Concurrent exclusive creates from two store instances: exactly one wins.

        Failing means exclusive create is only serialised inside one instance (an in-process
        lock), so two processes can both create the file. Fix: make the create atomic in the
        backend itself, or declare ``atomic_create_across_instances=False``.
        """
        first: AgentFileStore = await open_store()
        second: AgentFileStore = await open_store()
        await _race_exclusive_create([first, second], f"{file_root}/race.txt")

    # ------------------------------------------------------------------ listing

    async def test_list_children_puts_directories_before_files(
        self, file_store: AgentFileStore, file_root: str
    ) -> None:
        """``list_children`` returns every subdirectory before any file.

        Failing means the listing is in plain name order (or any other order) instead of
        directories first, as ``AgentFileStore.list_children`` specifies. Fix: partition the
        entries into directories then files.
        """
        for path in ("a.txt", "zz/x.txt", "m.txt", "b/y.txt", "0.txt"):
            await file_store.write(f"{file_root}/{path}", "x")
        entries = _names(await file_store.list_children(file_root))
        kinds = [kind for kind, _ in entries]
        assert kinds == sorted(kinds, key=lambda kind: kind != "directory"), entries
        assert sorted(entries) == [
            ("directory", "b"),
            ("directory", "zz"),
            ("file", "0.txt"),
            ("file", "a.txt"),
            ("file", "m.txt"),
        ]

    async def test_list_children_returns_names_not_paths(self, file_store: AgentFileStore, file_root: str) -> None:
        """Listing entries are bare names relative to the listed directory, never paths.

        Failing means entries carry the directory prefix (``dir/a.txt``) or a separator.
        Fix: strip the listed directory's path from each entry and keep only its first segment.
        """
        await file_store.write(f"{file_root}/d/e/deep.txt", "x")
        await file_store.write(f"{file_root}/d/shallow.txt", "x")
        assert _names(await file_store.list_children(f"{file_root}/d")) == [("directory", "e"), ("file", "shallow.txt")]
        assert _names(await file_store.list_children(f"{file_root}/d/e")) == [("file", "deep.txt")]

    async def test_list_children_shows_each_subdirectory_once(self, file_store: AgentFileStore, file_root: str) -> None:
        """A subdirectory holding many files and nested directories is listed once.

        Failing means the listing has one entry per descendant file. Fix: de-duplicate the
        first path segment of the descendants (or list with a delimiter).
        """
        for path in ("d/a.txt", "d/b.txt", "d/e/c.txt", "d/e/f/g.txt"):
            await file_store.write(f"{file_root}/{path}", "x")
        assert _names(await file_store.list_children(file_root)) == [("directory", "d")]

    async def test_list_children_of_missing_directory_is_empty(
        self, file_store: AgentFileStore, file_root: str
    ) -> None:
        """Listing a directory that does not exist (or is a file) returns ``[]``, not an error.

        Failing means the store raises or invents entries. Fix: return an empty list when
        nothing is stored under the directory.
        """
        assert await file_store.list_children(f"{file_root}/missing") == []
        await file_store.write(f"{file_root}/a.txt", "x")
        assert await file_store.list_children(f"{file_root}/a.txt") == []

    async def test_list_children_preserves_name_case(self, file_store: AgentFileStore, file_root: str) -> None:
        """Names are listed as written (``Plan.MD`` stays ``Plan.MD``), whether or not the store is case sensitive.

        Failing means the store lowercases (or otherwise changes) names it lists, so the
        agent sees names it never wrote. Fix: keep the original spelling next to any
        case-folded key.
        """
        await file_store.write(f"{file_root}/Docs/Plan.MD", "x")
        assert _names(await file_store.list_children(file_root)) == [("directory", "Docs")]
        assert _names(await file_store.list_children(f"{file_root}/Docs")) == [("file", "Plan.MD")]

    async def test_unicode_and_space_names_round_trip(self, file_store: AgentFileStore, file_root: str) -> None:
        """Names with spaces, accents, CJK and emoji are stored, listed and read as written.

        Failing means the store mangles (encodes, normalizes, or rejects) such names.
        Fix: use the normalized path verbatim as the key, escaping only where the backend
        needs it and unescaping on listing.
        """
        names = ["naïve café.txt", "日本語.md", "emoji 😀.txt", "e\u0301.txt"]
        for name in names:
            await file_store.write(f"{file_root}/{name}", name)
        for name in names:
            assert await file_store.read(f"{file_root}/{name}") == name
        assert sorted(_names(await file_store.list_children(file_root))) == sorted(("file", n) for n in names)

    async def test_names_of_200_characters_work(self, file_store: AgentFileStore, file_root: str) -> None:
        """A 200-character name in a nested path is stored, read and listed.

        Failing means the store's key or name limit is below the minimal contract. Fix:
        raise the limit (or hash only names beyond the backend's limit, reversibly).
        """
        name = incompressible(196, "file") + ".txt"
        await file_store.write(f"{file_root}/a/b/{name}", "long")
        assert await file_store.read(f"{file_root}/a/b/{name}") == "long"
        assert _names(await file_store.list_children(f"{file_root}/a/b")) == [("file", name)]

    @requires("long_names")
    async def test_long_names_work(self, file_store: AgentFileStore, file_root: str) -> None:
        """A 1,000-character segment in a path of about 4,000 characters is stored, read and listed.

        The names are random characters, so a database that compresses indexed values (an
        index row limit of 2,704 bytes in PostgreSQL, 3,072 in MySQL) cannot shrink them below
        their real size. Failing means the store cannot hold the long names it declared. Fix:
        lift the limit or declare ``long_names=False``: a store over an object driver keeping the
        1,024-byte key limit ``drivers.py`` recommends (S3's) cannot hold them.
        """
        segment, second, third = (incompressible(1_000, f"segment {i}") for i in range(3))
        directory = f"{file_root}/{segment}/{second}/{third}"
        name = incompressible(996, "file") + ".txt"
        path = f"{directory}/{name}"
        try:
            await file_store.write(path, "long")
        except ValueError as err:
            pytest.fail(
                f"the store declared long_names=True but refused a path of {len(path.encode())} bytes "
                f"(ValueError: {err}); declare long_names=False for a store whose keys stop short of that",
                pytrace=False,
            )
        assert await file_store.read(path) == "long", "a file with a long path did not read back"
        assert _names(await file_store.list_children(directory)) == [("file", name)], (
            "list_children of a long directory path does not list its file"
        )
        assert _names(await file_store.list_children(file_root)) == [("directory", segment)], (
            "list_children does not list a directory with a 1,000-character name"
        )

    # ------------------------------------------------------------------ directories

    @requires("empty_directories")
    async def test_empty_directories_are_listed(self, file_store: AgentFileStore, file_root: str) -> None:
        """``create_directory`` makes a directory (with its parents) that is listed while empty.

        Failing means the store declared ``empty_directories`` but does not record them.
        Fix: store a directory marker (and treat it as a directory in listings), or declare
        ``empty_directories=False``.
        """
        await file_store.create_directory(f"{file_root}/a/b")
        assert _names(await file_store.list_children(file_root)) == [("directory", "a")]
        assert _names(await file_store.list_children(f"{file_root}/a")) == [("directory", "b")]
        assert await file_store.list_children(f"{file_root}/a/b") == []
        assert not await file_store.file_exists(f"{file_root}/a/b")
        await file_store.write(f"{file_root}/a/b/c.txt", "x")
        await file_store.create_directory(f"{file_root}/a/b")
        assert _names(await file_store.list_children(f"{file_root}/a/b")) == [("file", "c.txt")]

    @requires("empty_directories")
    async def test_create_directory_rejects_bad_paths(self, file_store: AgentFileStore, file_root: str) -> None:
        """A store that records directories rejects rooted and dot-segment directory paths with ``ValueError``.

        Failing means ``create_directory`` can create a directory outside the root. Fix:
        apply the directory path rules before creating anything.
        """
        for directory in (f"/{file_root}", f"C:/{file_root}", f"../{file_root}", f"{file_root}/a/../b"):
            with raises(ValueError, f"create_directory({directory!r})"):
                await file_store.create_directory(directory)
        assert await file_store.list_children(file_root) == []

    @requires(absent=("empty_directories",))
    async def test_create_directory_without_empty_directories_creates_no_file(
        self, file_store: AgentFileStore, file_root: str
    ) -> None:
        """Without ``empty_directories``, ``create_directory`` still succeeds and creates no file.

        Failing means ``create_directory`` raises, or leaves a file (for example a marker
        object) that shows up as a file. Fix: make it a no-op, or record directories and
        declare ``empty_directories=True``.
        """
        await file_store.create_directory(f"{file_root}/a")
        assert not await file_store.file_exists(f"{file_root}/a")
        assert await file_store.read(f"{file_root}/a") is None
        listed = await file_store.list_children(file_root)
        assert [e.name for e in listed if e.type == FileStoreEntry.FILE] == []

    @requires(absent=("empty_directories",))
    async def test_directory_without_files_is_not_listed(self, file_store: AgentFileStore, file_root: str) -> None:
        """Without ``empty_directories``, a directory whose last file was deleted is no longer listed.

        Failing means the store leaves a phantom directory behind; it can represent empty
        directories after all. Fix: declare ``empty_directories=True``, or stop listing it.
        """
        await file_store.write(f"{file_root}/d/only.txt", "x")
        await file_store.write(f"{file_root}/kept.txt", "x")
        assert await file_store.delete(f"{file_root}/d/only.txt")
        assert _names(await file_store.list_children(file_root)) == [("file", "kept.txt")]

    async def test_create_directory_keeps_existing_files(self, file_store: AgentFileStore, file_root: str) -> None:
        """``create_directory`` on a directory that already holds files changes nothing.

        Failing means the call failed, replaced the directory, or made it appear twice.
        Fix: make ``create_directory`` idempotent.
        """
        await file_store.write(f"{file_root}/d/a.txt", "kept")
        await file_store.create_directory(f"{file_root}/d")
        await file_store.create_directory(f"{file_root}/d/")
        assert await file_store.read(f"{file_root}/d/a.txt") == "kept"
        assert _names(await file_store.list_children(file_root)) == [("directory", "d")]
        assert _names(await file_store.list_children(f"{file_root}/d")) == [("file", "a.txt")]

    @requires(absent=("rejects_file_directory_conflicts",))
    async def test_file_and_directory_may_share_a_name(self, file_store: AgentFileStore, file_root: str) -> None:
        """Without ``rejects_file_directory_conflicts``, a file ``x`` and a directory ``x`` coexist.

        Both are readable and both are listed (the directory first). Failing means one of
        them silently replaced or hid the other. Fix: keep both, or make the conflict an
        error and declare ``rejects_file_directory_conflicts=True``.
        """
        await file_store.write(f"{file_root}/x", "file")
        await file_store.write(f"{file_root}/x/y.txt", "nested")
        assert await file_store.read(f"{file_root}/x") == "file"
        assert await file_store.read(f"{file_root}/x/y.txt") == "nested"
        assert _names(await file_store.list_children(file_root)) == [("directory", "x"), ("file", "x")]
        assert _names(await file_store.list_children(f"{file_root}/x")) == [("file", "y.txt")]

    @requires("rejects_file_directory_conflicts")
    async def test_file_directory_conflicts_are_rejected(self, file_store: AgentFileStore, file_root: str) -> None:
        """With ``rejects_file_directory_conflicts``, a file never shares a path with a directory.

        Writing a file over a directory raises ``IsADirectoryError``; writing below a file
        raises ``NotADirectoryError``; nothing changes. Failing means the store accepted the
        conflict or raised something else. Fix: raise those errors, or declare
        ``rejects_file_directory_conflicts=False``.
        """
        await file_store.write(f"{file_root}/x/y.txt", "nested")
        await file_store.write(f"{file_root}/f.txt", "file")
        with raises(IsADirectoryError, "a write of a file where a directory is"):
            await file_store.write(f"{file_root}/x", "file over directory")
        with raises(IsADirectoryError, "write(overwrite=False) of a file where a directory is"):
            await file_store.write(f"{file_root}/x", "file over directory", overwrite=False)
        with raises(NotADirectoryError, "a write of a file below a file"):
            await file_store.write(f"{file_root}/f.txt/z.txt", "below a file")
        assert await file_store.read(f"{file_root}/x/y.txt") == "nested"
        assert await file_store.read(f"{file_root}/f.txt") == "file"
        assert _names(await file_store.list_children(file_root)) == [("directory", "x"), ("file", "f.txt")]

    # ------------------------------------------------------------------ case sensitivity

    @requires("case_sensitive")
    async def test_case_sensitive_names_are_distinct(self, file_store: AgentFileStore, file_root: str) -> None:
        """With ``case_sensitive``, ``A.txt`` and ``a.txt`` are two files.

        Failing means the store folds case although it declared ``case_sensitive=True``.
        Fix: declare ``case_sensitive=False``, or stop folding case in keys.
        """
        await file_store.write(f"{file_root}/A.txt", "upper")
        await file_store.write(f"{file_root}/a.txt", "lower", overwrite=False)
        assert await file_store.read(f"{file_root}/A.txt") == "upper"
        assert await file_store.read(f"{file_root}/a.txt") == "lower"
        assert sorted(_names(await file_store.list_children(file_root))) == [("file", "A.txt"), ("file", "a.txt")]
        assert await file_store.delete(f"{file_root}/a.txt")
        assert await file_store.read(f"{file_root}/A.txt") == "upper"

    @requires(absent=("case_sensitive",))
    async def test_case_insensitive_names_are_one_file(self, file_store: AgentFileStore, file_root: str) -> None:
        """Without ``case_sensitive``, ``A.txt`` and ``a.txt`` name the same file.

        Failing means the store distinguishes case although it declared
        ``case_sensitive=False`` (the default). Fix: declare ``case_sensitive=True``, or
        fold case in keys while keeping the written spelling for listings.
        """
        await file_store.write(f"{file_root}/Dir/A.txt", "upper")
        assert await file_store.read(f"{file_root}/dir/a.txt") == "upper"
        assert await file_store.file_exists(f"{file_root}/DIR/a.TXT")
        with raises(
            FileExistsError, "write(overwrite=False) of another case of a file that exists, on a case-insensitive store"
        ):
            await file_store.write(f"{file_root}/dir/a.txt", "lower", overwrite=False)
        await file_store.write(f"{file_root}/dir/a.txt", "lower")
        assert await file_store.read(f"{file_root}/Dir/A.txt") == "lower"
        assert len(await file_store.list_children(file_root)) == 1
        assert len(await file_store.list_children(f"{file_root}/dir")) == 1
        assert await file_store.delete(f"{file_root}/DIR/A.TXT")
        assert await file_store.read(f"{file_root}/Dir/A.txt") is None

    # ------------------------------------------------------------------ search

    async def test_search_regex_is_case_insensitive(self, file_store: AgentFileStore, file_root: str) -> None:
        """``search`` matches the regex case-insensitively and only reports matching files.

        Failing means the store matched case-sensitively (or pushed the pattern down to a
        case-sensitive index) and lost matches. Fix: compile with ``IGNORECASE`` and widen
        any push-down; the base class's ``search`` already does this.
        """
        await file_store.write(f"{file_root}/hit.txt", "first line\nHello World\n")
        await file_store.write(f"{file_root}/miss.txt", "nothing here\n")
        results = await file_store.search(file_root, "hello WORLD")
        assert [r.file_name for r in results] == ["hit.txt"]
        assert _line_numbers(results) == [2]

    async def test_search_is_not_recursive_by_default(self, file_store: AgentFileStore, file_root: str) -> None:
        """Without ``recursive=True`` only the direct children of the directory are searched.

        Failing means nested files leak into a non-recursive search. Fix: limit the scan to
        files directly in the directory.
        """
        await file_store.write(f"{file_root}/d/top.txt", _NEEDLE)
        await file_store.write(f"{file_root}/d/sub/deep.txt", _NEEDLE)
        results = await file_store.search(f"{file_root}/d", _NEEDLE)
        assert [r.file_name for r in results] == ["top.txt"]

    async def test_search_recursive_reports_relative_paths(self, file_store: AgentFileStore, file_root: str) -> None:
        """With ``recursive=True`` every descendant is searched; ``file_name`` is its path relative to the directory.

        Failing means nested files are missed, or names are absolute, bare basenames, or use
        backslashes. Fix: report the forward-slash path relative to the searched directory.
        """
        await file_store.write(f"{file_root}/d/top.txt", _NEEDLE)
        await file_store.write(f"{file_root}/d/sub/deep.txt", _NEEDLE)
        await file_store.write(f"{file_root}/d/sub/deeper/Deepest.txt", _NEEDLE)
        await file_store.write(f"{file_root}/outside.txt", _NEEDLE)
        results = await file_store.search(f"{file_root}/d", _NEEDLE, recursive=True)
        assert sorted(r.file_name for r in results) == ["sub/deep.txt", "sub/deeper/Deepest.txt", "top.txt"]

    async def test_search_glob_is_relative_and_case_insensitive(
        self, file_store: AgentFileStore, file_root: str
    ) -> None:
        """The glob filters files by their path relative to the searched directory, case-insensitively.

        ``*`` also matches ``/`` (``fnmatch``), so ``*.md`` matches at any depth in a
        recursive search, while ``x.md`` does not match ``sub/x.md``. Failing means the glob
        was matched case-sensitively, against full paths, or against basenames. Fix: use
        the framework's rule, ``fnmatchcase(relative.lower(), glob.lower())``.
        """
        for name in ("notes.md", "LOUD.MD", "plain.txt", "sub/x.md"):
            await file_store.write(f"{file_root}/d/{name}", _NEEDLE)
        directory = f"{file_root}/d"

        async def found(glob: str, *, recursive: bool = False) -> list[str]:
            results = await file_store.search(directory, _NEEDLE, glob, recursive=recursive)
            return sorted(r.file_name for r in results)

        assert await found("*.MD") == ["LOUD.MD", "notes.md"]
        assert await found("*.md", recursive=True) == ["LOUD.MD", "notes.md", "sub/x.md"]
        assert await found("SUB/*", recursive=True) == ["sub/x.md"]
        assert await found("x.md", recursive=True) == []
        assert await found("  ") == ["LOUD.MD", "notes.md", "plain.txt"]

    async def test_search_directory_follows_path_rules(self, file_store: AgentFileStore, file_root: str) -> None:
        r"""The searched directory is normalized like any path: ``" dir\sub// "`` searches ``dir/sub``.

        Failing means files were found but then read under the raw directory spelling (the
        base class's ``search`` joins the directory as given with each candidate name, so a
        trailing space makes every read miss) and silently dropped. Fix: normalize the
        directory with the framework's rules before searching, e.g. in a ``search`` override
        that calls ``super().search(normalized, ...)``.
        """
        await file_store.write(f"{file_root}/d/sub/a.txt", _NEEDLE)
        for spelling in (f" {file_root}\\d\\sub ", f"{file_root}//d/sub/ ", f"{file_root}/d/sub\t"):
            results = await file_store.search(spelling, _NEEDLE)
            assert [r.file_name for r in results] == ["a.txt"], spelling
        results = await file_store.search(f"{file_root}/d ", _NEEDLE, recursive=True)
        assert [r.file_name for r in results] == ["sub/a.txt"]

    async def test_search_of_missing_directory_is_empty(self, file_store: AgentFileStore, file_root: str) -> None:
        """Searching a directory that does not exist (or is a file) returns ``[]``.

        Failing means the store raised or returned files from elsewhere. Fix: return no
        results when nothing is stored under the directory.
        """
        assert await file_store.search(f"{file_root}/missing", _NEEDLE, recursive=True) == []
        await file_store.write(f"{file_root}/a.txt", _NEEDLE)
        assert await file_store.search(f"{file_root}/a.txt", _NEEDLE, recursive=True) == []

    @pytest.mark.parametrize(
        ("content", "pattern", "expected", "after_edit"),
        [case[1:] for case in _LINE_NUMBER_CASES],
        ids=[case[0] for case in _LINE_NUMBER_CASES],
    )
    async def test_search_line_numbers_address_split_lines(
        self,
        file_store: AgentFileStore,
        file_root: str,
        content: str,
        pattern: str,
        expected: list[int],
        after_edit: str,
    ) -> None:
        r"""Line numbers are 1-based positions in ``AgentFileStore.split_lines`` of what ``read`` returns.

        Checked the way the harness uses them: grep, then edit the reported line. Lines split
        on ``\n`` only, so a lone ``\r`` or a unicode line separator is content, a trailing
        ``\n`` is followed by an empty last line, and ``$`` matches before a ``\r\n``.
        Failing means ``search`` numbers lines its own way (0-based, ``str.splitlines``,
        ``\r`` as a break) and a line edit lands on the wrong line. Fix: do not override
        ``search``; narrow candidates in ``find_matching_files`` and let the base class
        number lines, or number with ``AgentFileStore.scan_content``.
        """
        path = f"{file_root}/lines.txt"
        await file_store.write(path, content)
        results = await file_store.search(file_root, pattern)
        numbers = _line_numbers(results)
        assert numbers == expected
        stored = await file_store.read(path)
        assert stored is not None
        lines = AgentFileStore.split_lines(stored)
        target = numbers[0]
        lines[target - 1] = "EDITED" + _terminator(lines[target - 1])
        await file_store.write(path, "".join(lines))
        assert await file_store.read(path) == after_edit

    async def test_search_reports_lines_verbatim(self, file_store: AgentFileStore, file_root: str) -> None:
        r"""Each match carries its line exactly as ``split_lines`` gives it, terminator included.

        Failing means the reported line was stripped of ``\r\n``/``\n`` or otherwise
        altered, so feeding it back to ``replace_lines`` changes the file's line endings.
        Fix: report ``split_lines(content)[line_number - 1]``, as ``scan_content`` does.
        """
        content = "alpha\r\nbeta one\r\nmid\rbeta two\nbeta three"
        await file_store.write(f"{file_root}/verbatim.txt", content)
        results = await file_store.search(file_root, "beta")
        assert len(results) == 1
        reported = [(m.line_number, m.line) for m in results[0].matching_lines]
        assert reported == [(2, "beta one\r\n"), (3, "mid\rbeta two\n"), (4, "beta three")]

    async def test_search_snippet_contains_the_match(self, file_store: AgentFileStore, file_root: str) -> None:
        """The result's snippet shows the first match in context.

        Failing means the snippet is empty or taken from elsewhere in the file. Fix: cut the
        snippet around the first match (``scan_content`` does).
        """
        content = "x" * 300 + "\n" + "y" * 120 + " NeEdLe " + "z" * 120 + "\n" + "w" * 300
        await file_store.write(f"{file_root}/snippet.txt", content)
        results = await file_store.search(file_root, _NEEDLE)
        assert len(results) == 1
        assert "NeEdLe" in results[0].snippet
        assert results[0].snippet in content

    async def test_search_rejects_invalid_and_overlong_patterns(
        self, file_store: AgentFileStore, file_root: str
    ) -> None:
        """An invalid regex raises ``regex.error``; a pattern over 256 characters raises ``ValueError``.

        Failing means the store swallowed the error (reporting "no matches" the model
        cannot learn from) or accepted an unbounded pattern. Fix: compile the pattern the
        way the base class does (``regex`` module, length cap) before searching.
        """
        await file_store.write(f"{file_root}/a.txt", _NEEDLE)
        with raises(regex.error, "search with the invalid pattern 'needle('"):
            await file_store.search(file_root, "needle(")
        with raises(ValueError, "search with a pattern of 257 characters"):
            await file_store.search(file_root, "a" * 257)

    @settings(max_examples=40, deadline=None, suppress_health_check=_SHARED_CLAUSE_CHECKS)
    @given(content=st.text(alphabet="ab \r\n\t\u2028\x85\x0c"))
    async def test_search_line_numbers_agree_with_split_lines(self, file_store: AgentFileStore, content: str) -> None:
        r"""For any content, ``search`` reports exactly the ``split_lines`` lines that contain the match.

        Property version of the line-number clause over every mix of ``\n``, ``\r``,
        ``\r\n`` and unicode separators. Failing means the store's numbering or its line
        splitting differs from ``AgentFileStore.split_lines``; the shrunk example shows how.
        Fix: let the base class (or ``scan_content``) number lines.
        """
        directory = unique_id("files")
        await file_store.write(f"{directory}/prop.txt", content)
        lines = AgentFileStore.split_lines(content)
        expected = [(n, line) for n, line in enumerate(lines, start=1) if "a" in line]
        results = await file_store.search(directory, "A")
        reported = [(m.line_number, m.line) for r in results for m in r.matching_lines]
        assert reported == expected

    # ------------------------------------------------------------------ instances

    async def test_instances_see_each_others_writes(
        self, open_store: Callable[..., Awaitable[Any]], file_root: str
    ) -> None:
        """Two instances from the factory share one backing store: writes and deletes are visible to both.

        Failing means instances cache data or the factory does not open the same data each
        time. Fix: read through to the backend (or invalidate caches), and make the factory
        fixture return instances over the same data.
        """
        first: AgentFileStore = await open_store()
        second: AgentFileStore = await open_store()
        await first.write(f"{file_root}/a.txt", "from first")
        assert await second.read(f"{file_root}/a.txt") == "from first"
        await second.write(f"{file_root}/a.txt", "from second")
        assert await first.read(f"{file_root}/a.txt") == "from second"
        assert _names(await second.list_children(file_root)) == [("file", "a.txt")]
        assert await second.delete(f"{file_root}/a.txt")
        assert not await first.file_exists(f"{file_root}/a.txt")

    async def test_new_instance_sees_earlier_writes(
        self, open_store: Callable[..., Awaitable[Any]], file_root: str
    ) -> None:
        """A store opened after writes returned (a restart) reads, lists and searches them.

        Failing means a write is not durable when it returns (buffered in the instance).
        Fix: complete the backend write before ``write`` returns.
        """
        writer: AgentFileStore = await open_store()
        await writer.write(f"{file_root}/d/a.txt", "durable\r\n")
        await writer.write(f"{file_root}/b.txt", "")
        restarted: AgentFileStore = await open_store()
        assert await restarted.read(f"{file_root}/d/a.txt") == "durable\r\n"
        assert await restarted.read(f"{file_root}/b.txt") == ""
        assert _names(await restarted.list_children(file_root)) == [("directory", "d"), ("file", "b.txt")]
        results = await restarted.search(file_root, "durable", recursive=True)
        assert [r.file_name for r in results] == ["d/a.txt"]


async def _expect_rejected(store: AgentFileStore, path: str, *, is_directory: bool) -> None:
    """Assert every operation taking ``path`` raises ``ValueError``.

    Directory paths go to ``list_children`` and ``search``; file paths to ``write`` (only
    paths that stay inside the clause's own directory when wrongly accepted), ``read``,
    ``file_exists`` and ``delete``.
    """
    operations: list[tuple[str, Callable[[], Awaitable[object]]]]
    if is_directory:
        operations = [
            ("list_children", lambda: store.list_children(path)),
            ("search", lambda: store.search(path, _NEEDLE)),
        ]
    else:
        operations = [
            ("write", lambda: store.write(path, "must not be written")),
            ("read", lambda: store.read(path)),
            ("file_exists", lambda: store.file_exists(path)),
            ("delete", lambda: store.delete(path)),
        ]
    for name, call in operations:
        try:
            await call()
        except ValueError:
            continue
        pytest.fail(f"{name}({path!r}) was accepted; it must raise ValueError")


async def _race_exclusive_create(stores: list[AgentFileStore], path: str) -> None:
    """Race ``_RACERS`` exclusive creates of ``path`` over ``stores``; assert exactly one winner."""

    async def attempt(index: int) -> None:
        await stores[index % len(stores)].write(path, f"writer-{index}", overwrite=False)

    outcomes = await asyncio.gather(*(attempt(i) for i in range(_RACERS)), return_exceptions=True)
    winners = [i for i, outcome in enumerate(outcomes) if outcome is None]
    unexpected = [o for o in outcomes if o is not None and not isinstance(o, FileExistsError)]
    assert not unexpected, f"exclusive create raised something other than FileExistsError: {unexpected!r}"
    assert len(winners) == 1, f"{len(winners)} of {_RACERS} concurrent exclusive creates succeeded"
    for store in stores:
        assert await store.read(path) == f"writer-{winners[0]}"
