"""Deliberately broken file stores, each caught by the clause written for its bug.

Each test writes a small test module holding one broken store and a ``FileStoreConformance``
subclass, runs the named clauses in it with ``pytester``, and asserts that the clauses
meant to catch the bug fail while a control clause on the same store still passes (so the
failure is the bug, not a broken setup).
"""

from __future__ import annotations

import textwrap

import pytest

pytest_plugins = ["pytester"]

_HEADER = """
import asyncio
import fnmatch
import posixpath

import pytest
import regex
from agent_framework import AgentFileStore, FileSearchMatch, FileSearchResult, FileStoreEntry, InMemoryAgentFileStore

from agent_stores.testing import FileStoreCapabilities, FileStoreConformance
"""

_SHARED_INSTANCE = "store = Store()\n        return lambda **options: store"

_INI = """
[pytest]
asyncio_mode = strict
asyncio_default_fixture_loop_scope = function
filterwarnings =
    ignore::agent_framework._feature_stage.ExperimentalWarning
"""


# These runs only need to see a broken store fail: skip shrinking its counterexamples, which
# can take minutes for long generated texts (notably under Hypothesis's CI profile).
_FAIL_FAST = """
from hypothesis import Phase, settings

settings.register_profile("fail-fast", phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.load_profile("fail-fast")
"""


def run_clauses(
    pytester: pytest.Pytester,
    store: str,
    clauses: list[str],
    *,
    capabilities: str = "",
    factory: str = _SHARED_INSTANCE,
) -> dict[str, tuple[str, str]]:
    """Run ``clauses`` against ``Store`` (defined in ``store``); return ``{test id: (outcome, report)}``."""
    pytester.makeini(_INI)
    pytester.makeconftest(_FAIL_FAST)
    pytester.makepyfile(
        test_broken_store=_HEADER
        + textwrap.dedent(store)
        + "\n\nclass TestBroken(FileStoreConformance):\n"
        + f"    capabilities = FileStoreCapabilities({capabilities})\n\n"
        + "    @pytest.fixture\n"
        + "    def file_store_factory(self):\n"
        + f"        {factory}\n"
    )
    reprec = pytester.inline_run(
        *(f"test_broken_store.py::TestBroken::{clause}" for clause in clauses), "-p", "no:cacheprovider"
    )
    outcomes: dict[str, tuple[str, str]] = {}
    for report in reprec.getreports("pytest_runtest_logreport"):
        test_id = report.nodeid.split("::")[-1]
        if report.failed:
            outcomes[test_id] = ("failed", report.longreprtext)
        else:
            outcomes.setdefault(test_id, (report.outcome, ""))
    assert outcomes, "no clause ran"
    return outcomes


def assert_failed(outcomes: dict[str, tuple[str, str]], test_id: str, *, says: str = "") -> None:
    assert test_id in outcomes, f"{test_id} did not run; ran {sorted(outcomes)}"
    outcome, report = outcomes[test_id]
    assert outcome == "failed", f"{test_id} should catch the bug but {outcome}"
    assert says in report, report


def assert_passed(outcomes: dict[str, tuple[str, str]], test_id: str) -> None:
    assert test_id in outcomes, f"{test_id} did not run; ran {sorted(outcomes)}"
    assert outcomes[test_id][0] == "passed", outcomes[test_id][1]


def test_files_listed_before_directories(pytester: pytest.Pytester) -> None:
    store = """
        class Store(InMemoryAgentFileStore):
            async def list_children(self, directory=""):
                entries = await super().list_children(directory)
                return sorted(entries, key=lambda entry: entry.type != FileStoreEntry.FILE)
        """
    outcomes = run_clauses(
        pytester,
        store,
        ["test_list_children_puts_directories_before_files", "test_list_children_shows_each_subdirectory_once"],
    )
    assert_failed(outcomes, "test_list_children_puts_directories_before_files")
    assert_passed(outcomes, "test_list_children_shows_each_subdirectory_once")


def test_check_then_write_exclusive_create(pytester: pytest.Pytester) -> None:
    store = """
        class Store(InMemoryAgentFileStore):
            async def write(self, path, content, *, overwrite=True):
                if not overwrite and await self.file_exists(path):
                    raise FileExistsError(path)
                await asyncio.sleep(0)  # any real I/O between the check and the write lets others in
                await super().write(path, content)
        """
    outcomes = run_clauses(
        pytester,
        store,
        [
            "test_exclusive_create_race_on_one_instance",
            "test_exclusive_create_race_across_instances",
            "test_exclusive_create_of_existing_file_raises",
        ],
        capabilities="atomic_create_across_instances=True",
    )
    assert_failed(outcomes, "test_exclusive_create_race_on_one_instance", says="8 of 8 concurrent exclusive creates")
    assert_failed(
        outcomes, "test_exclusive_create_race_across_instances", says="concurrent exclusive creates succeeded"
    )
    assert_passed(outcomes, "test_exclusive_create_of_existing_file_raises")


def test_crlf_normalized_on_write(pytester: pytest.Pytester) -> None:
    store = """
        class Store(InMemoryAgentFileStore):
            async def write(self, path, content, *, overwrite=True):
                await super().write(path, content.replace("\\r\\n", "\\n"), overwrite=overwrite)
        """
    outcomes = run_clauses(
        pytester,
        store,
        ["test_content_round_trips_exactly", "test_any_text_round_trips_exactly", "test_search_reports_lines_verbatim"],
    )
    for case in ("crlf", "mixed-endings", "large"):
        assert_failed(outcomes, f"test_content_round_trips_exactly[{case}]")
    assert_failed(outcomes, "test_any_text_round_trips_exactly")
    assert_failed(outcomes, "test_search_reports_lines_verbatim")
    assert_passed(outcomes, "test_content_round_trips_exactly[lone-cr]")


def test_content_stripped_on_write(pytester: pytest.Pytester) -> None:
    store = """
        class Store(InMemoryAgentFileStore):
            async def write(self, path, content, *, overwrite=True):
                await super().write(path, content.strip(), overwrite=overwrite)
        """
    outcomes = run_clauses(pytester, store, ["test_content_round_trips_exactly"])
    for case in ("trailing-newline", "whitespace-only", "surrounding-whitespace", "crlf"):
        assert_failed(outcomes, f"test_content_round_trips_exactly[{case}]")
    assert_passed(outcomes, "test_content_round_trips_exactly[no-trailing-newline]")


def test_search_numbered_by_splitlines(pytester: pytest.Pytester) -> None:
    # The classic hand-written search: str.splitlines() breaks on \r, \x0c, \x85, \u2028 ...
    # and drops the empty line after a final newline; it also compiles without the length cap.
    store = """
        class Store(InMemoryAgentFileStore):
            async def search(self, directory, regex_pattern, glob_pattern=None, *, recursive=False):
                pattern = regex.compile(regex_pattern, regex.IGNORECASE)
                names = await self.find_matching_files(directory, regex_pattern, glob_pattern, recursive=recursive)
                results = []
                for name in names:
                    content = await self.read(f"{directory}/{name}")
                    lines = content.splitlines(keepends=True)
                    matches = [
                        FileSearchMatch(number, line)
                        for number, line in enumerate(lines, start=1)
                        if pattern.search(line.rstrip("\\r\\n"))
                    ]
                    if matches:
                        results.append(FileSearchResult(name, content[:100], matches))
                return results
        """
    clause = "test_search_line_numbers_address_split_lines"
    outcomes = run_clauses(
        pytester,
        store,
        [
            clause,
            "test_search_line_numbers_agree_with_split_lines",
            "test_search_rejects_invalid_and_overlong_patterns",
        ],
    )
    for case in (
        "lone-cr-is-content",
        "unicode-separators-are-content",
        "trailing-newline-ends-with-empty-line",
        "empty-file-is-one-empty-line",
    ):
        assert_failed(outcomes, f"{clause}[{case}]")
    assert_failed(outcomes, "test_search_line_numbers_agree_with_split_lines")
    assert_failed(outcomes, "test_search_rejects_invalid_and_overlong_patterns")
    assert_passed(outcomes, f"{clause}[crlf]")
    assert_passed(outcomes, f"{clause}[leading-blank-lines]")


def test_dot_segments_resolved_instead_of_rejected(pytester: pytest.Pytester) -> None:
    store = """
        def lax(path):
            # Resolves "a/../b" to "b" instead of rejecting it.
            return posixpath.normpath(path.strip().replace("\\\\", "/")) if path.strip() else path

        class Store(InMemoryAgentFileStore):
            async def write(self, path, content, *, overwrite=True):
                await super().write(lax(path), content, overwrite=overwrite)

            async def read(self, path):
                return await super().read(lax(path))

            async def file_exists(self, path):
                return await super().file_exists(lax(path))

            async def delete(self, path):
                return await super().delete(lax(path))
        """
    outcomes = run_clauses(pytester, store, ["test_dot_segments_are_rejected", "test_path_backslashes_are_separators"])
    assert_failed(outcomes, "test_dot_segments_are_rejected", says="was accepted; it must raise ValueError")
    assert_passed(outcomes, "test_path_backslashes_are_separators")


def test_case_insensitive_store_declared_case_sensitive(pytester: pytest.Pytester) -> None:
    store = """
        class Store(InMemoryAgentFileStore):
            pass  # folds case, as the framework's in-memory store does
        """
    outcomes = run_clauses(
        pytester,
        store,
        ["test_case_sensitive_names_are_distinct", "test_list_children_preserves_name_case"],
        capabilities="case_sensitive=True",
    )
    assert_failed(outcomes, "test_case_sensitive_names_are_distinct")
    assert_passed(outcomes, "test_list_children_preserves_name_case")


def test_glob_narrowed_case_sensitively(pytester: pytest.Pytester) -> None:
    # A push-down that matches the glob case-sensitively narrows the candidates and loses files.
    store = """
        class Store(InMemoryAgentFileStore):
            search = AgentFileStore.search  # the base class's search, which asks the hook below

            async def find_matching_files(self, directory, regex_pattern, glob_pattern=None, *, recursive=False):
                names = await super().find_matching_files(directory, regex_pattern, None, recursive=recursive)
                return [n for n in names if not glob_pattern or fnmatch.fnmatchcase(n, glob_pattern)]
        """
    outcomes = run_clauses(
        pytester,
        store,
        ["test_search_glob_is_relative_and_case_insensitive", "test_search_is_not_recursive_by_default"],
    )
    assert_failed(outcomes, "test_search_glob_is_relative_and_case_insensitive")
    assert_passed(outcomes, "test_search_is_not_recursive_by_default")


def test_factory_opening_unrelated_stores(pytester: pytest.Pytester) -> None:
    # The mistake the factory note in test_conformance_files.py warns about: a new, empty
    # InMemoryAgentFileStore per call is not "the same backing data".
    outcomes = run_clauses(
        pytester,
        "Store = InMemoryAgentFileStore\n",
        [
            "test_instances_see_each_others_writes",
            "test_new_instance_sees_earlier_writes",
            "test_overwrite_replaces_whole_content",
        ],
        factory="return lambda **options: Store()",
    )
    assert_failed(outcomes, "test_instances_see_each_others_writes")
    assert_failed(outcomes, "test_new_instance_sees_earlier_writes")
    assert_passed(outcomes, "test_overwrite_replaces_whole_content")


def test_empty_directories_declared_but_not_kept(pytester: pytest.Pytester) -> None:
    outcomes = run_clauses(
        pytester,
        "Store = InMemoryAgentFileStore\n",
        ["test_empty_directories_are_listed", "test_create_directory_keeps_existing_files"],
        capabilities="empty_directories=True",
    )
    assert_failed(outcomes, "test_empty_directories_are_listed")
    assert_passed(outcomes, "test_create_directory_keeps_existing_files")


def test_index_over_compressed_paths(pytester: pytest.Pytester) -> None:
    # A database index over compressed values holds a path of one repeated character in a few
    # bytes: the store must be checked with paths no compression shrinks.
    store = """
        import zlib

        from agent_stores.core.files import ObjectAgentFileStore
        from agent_stores.core.memory import MemoryObjectDriver

        class IndexedDriver(MemoryObjectDriver):
            async def put(self, key, data, *, if_absent=False, if_version=None):
                size = len(zlib.compress(key.encode()))
                if size > 2704:
                    raise RuntimeError(f"index row size {size} exceeds btree maximum 2704")
                return await super().put(key, data, if_absent=if_absent, if_version=if_version)

        class Store(ObjectAgentFileStore):
            def __init__(self):
                super().__init__(IndexedDriver())
        """
    outcomes = run_clauses(
        pytester,
        store,
        ["test_long_names_work", "test_unicode_and_space_names_round_trip"],
        capabilities="long_names=True, case_sensitive=True, empty_directories=True",
    )
    assert_failed(outcomes, "test_long_names_work", says="index row size")
    assert_passed(outcomes, "test_unicode_and_space_names_round_trip")
