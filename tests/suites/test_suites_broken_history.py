"""The history suite catches broken stores: each deliberately broken provider fails the clause naming its bug.

Each test writes a small conformance module for one store, runs only the relevant clauses with
``pytester`` (in process), and asserts exactly which clauses failed. A control run shows the
correct base store passes all of those clauses, so every failure is the bug's, not the harness's.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

import pytest
from agent_framework import HistoryProvider, Message
from agent_framework._sessions import filter_new_messages, get_message_identity

from agent_stores.core import CorruptRecordError, LogHistoryProvider, trim_orphans
from agent_stores.core.memory import MemoryLogDriver
from suite_runs import failed_of

pytest_plugins = ["pytester"]


class DictHistoryProvider(HistoryProvider):
    """A correct minimal store: message dicts in a dict shared by every instance of one factory."""

    def __init__(
        self, data: dict[Hashable, list[dict[str, Any]]], *, source_id: str, max_messages: int | None = None
    ) -> None:
        if max_messages is not None and max_messages <= 0:
            raise ValueError("max_messages must be positive")
        super().__init__(source_id)
        self.data = data
        self.max_messages = max_messages

    @classmethod
    def factory(cls, tmp_path: Path) -> Callable[..., HistoryProvider]:
        data: dict[Hashable, list[dict[str, Any]]] = {}
        return lambda **options: cls(data, **options)

    def key(self, session_id: str | None) -> Hashable:
        return (self.source_id, session_id)

    def encode(self, message: Message) -> dict[str, Any]:
        return message.to_dict()

    def merge(self, existing: list[Message], incoming: Sequence[Message]) -> list[Message]:
        return [*existing, *filter_new_messages(existing, incoming)]

    def window(self, messages: list[Message]) -> list[Message]:
        return messages if self.max_messages is None else trim_orphans(messages[-self.max_messages :])

    def _stored(self, session_id: str | None) -> list[Message]:
        return [Message.from_dict(d) for d in self.data.get(self.key(session_id), [])]

    async def get_messages(
        self, session_id: str | None, *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Message]:
        return self.window(self._stored(session_id))

    async def save_messages(
        self, session_id: str | None, messages: Sequence[Message], *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if messages:
            merged = self.merge(self._stored(session_id), messages)
            self.data[self.key(session_id)] = [self.encode(m) for m in merged]


class SharedAcrossSources(DictHistoryProvider):
    """Leaves ``source_id`` out of the key, like the official Redis provider."""

    def key(self, session_id: str | None) -> Hashable:
        return session_id


class DropsAdditionalProperties(DictHistoryProvider):
    """Stores only the fields it thinks matter."""

    def encode(self, message: Message) -> dict[str, Any]:
        return {k: v for k, v in message.to_dict().items() if k != "additional_properties"}


class LowercasesSessionIds(DictHistoryProvider):
    """Normalises ids to lowercase, so ``"A"`` and ``"a"`` share a history."""

    def key(self, session_id: str | None) -> Hashable:
        return (self.source_id, (session_id or "").lower())


class TruncatesLongSessionIds(DictHistoryProvider):
    """Cuts ids to a column width, so ids sharing a long prefix collide."""

    def key(self, session_id: str | None) -> Hashable:
        return (self.source_id, (session_id or "")[:255])


class NeverDeduplicates(DictHistoryProvider):
    """Appends every incoming message, so replayed transcripts are stored again."""

    def merge(self, existing: list[Message], incoming: Sequence[Message]) -> list[Message]:
        return [*existing, *incoming]


class DropsEveryRepeat(DictHistoryProvider):
    """De-duplicates by identity over the whole history, dropping a user's repeated input."""

    def merge(self, existing: list[Message], incoming: Sequence[Message]) -> list[Message]:
        seen = {get_message_identity(m) for m in existing}
        fresh: list[Message] = []
        for message in incoming:
            if get_message_identity(message) not in seen:
                seen.add(get_message_identity(message))
                fresh.append(message)
        return [*existing, *fresh]


class SortsByMessageId(DictHistoryProvider):
    """Loads ordered by message id, like a table keyed by id instead of sequence."""

    def window(self, messages: list[Message]) -> list[Message]:
        return sorted(messages, key=lambda m: m.message_id or "")


class LosesConcurrentUpdates(DictHistoryProvider):
    """Read-modify-write with an await in between and no condition: the last writer wins."""

    async def save_messages(
        self, session_id: str | None, messages: Sequence[Message], *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if messages:
            existing = self._stored(session_id)
            await asyncio.sleep(0)  # a network round trip
            self.data[self.key(session_id)] = [self.encode(m) for m in self.merge(existing, messages)]


class ChecksThenAppends(DictHistoryProvider):
    """De-duplicates against a read taken before an await, then appends: concurrent replays are stored twice."""

    async def save_messages(
        self, session_id: str | None, messages: Sequence[Message], *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        existing = self._stored(session_id)
        await asyncio.sleep(0)  # a network round trip
        fresh = filter_new_messages(existing, messages)
        self.data.setdefault(self.key(session_id), []).extend(self.encode(m) for m in fresh)


class UploadsThenLinks(DictHistoryProvider):
    """Uploads each message in a request of its own, then links the batch at the end of the log.

    Nothing makes overlapping saves take turns, so a short save started while a longer one is
    uploading links first: the conversation is stored out of call order.
    """

    async def save_messages(
        self, session_id: str | None, messages: Sequence[Message], *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        for _ in messages:
            await asyncio.sleep(0)  # one upload round trip per message
        if messages:
            merged = self.merge(self._stored(session_id), messages)
            self.data[self.key(session_id)] = [self.encode(m) for m in merged]


class WindowStartsWithOrphans(DictHistoryProvider):
    """Cuts the newest N messages without dropping leading tool results."""

    def window(self, messages: list[Message]) -> list[Message]:
        return messages if self.max_messages is None else messages[-self.max_messages :]


class RacyFileHistoryProvider(DictHistoryProvider):
    """One JSON file per session, read, paused and atomically replaced, with no lock shared across processes."""

    def __init__(self, root: str, *, source_id: str, **options: Any) -> None:
        super().__init__({}, source_id=source_id, **options)
        self.root = Path(root)

    @classmethod
    def factory(cls, tmp_path: Path) -> Callable[..., HistoryProvider]:
        return lambda **options: cls(str(tmp_path), **options)

    @classmethod
    def process_factory(cls, tmp_path: Path) -> tuple[str, dict[str, Any]]:
        return f"{__name__}:{cls.__name__}", {"root": str(tmp_path)}

    def _path(self, session_id: str | None) -> Path:
        return self.root / f"{json.dumps([self.source_id, session_id]).encode().hex()}.json"

    def _stored(self, session_id: str | None) -> list[Message]:
        path = self._path(session_id)
        return [Message.from_dict(d) for d in json.loads(path.read_text())] if path.exists() else []

    async def save_messages(
        self, session_id: str | None, messages: Sequence[Message], *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        if messages:
            existing = self._stored(session_id)
            time.sleep(0.05)  # noqa: ASYNC251 - the pause that makes the cross-process race reproducible
            merged = [self.encode(m) for m in self.merge(existing, messages)]
            path = self._path(session_id)
            scratch = path.with_suffix(f".{os.getpid()}.tmp")
            scratch.write_text(json.dumps(merged))
            scratch.replace(path)  # atomic, so readers never see half a file: the bug is the lost update


class RacyAppendFileHistoryProvider(RacyFileHistoryProvider):
    """Appends what a read taken before a pause did not hold: two processes' identical saves are stored twice."""

    def _stored(self, session_id: str | None) -> list[Message]:
        path = self._path(session_id)
        lines = path.read_text().split("\n") if path.exists() else []
        return [Message.from_dict(json.loads(line)) for line in lines if line]

    async def save_messages(
        self, session_id: str | None, messages: Sequence[Message], *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> None:
        existing = self._stored(session_id)
        time.sleep(0.05)  # noqa: ASYNC251 - the pause that makes the cross-process race reproducible
        fresh = "".join(json.dumps(self.encode(m)) + "\n" for m in filter_new_messages(existing, messages))
        with self._path(session_id).open("a") as file:
            file.write(fresh)


_MODULE = """
import pytest
from agent_stores.testing import HistoryCapabilities, HistoryProviderConformance
from {module} import {store}


class TestStore(HistoryProviderConformance):
    capabilities = HistoryCapabilities({capabilities})

    @pytest.fixture
    def history_factory(self, tmp_path):
        return {store}.factory(tmp_path)
{process_fixture}"""

_PROCESS_FIXTURE = """
    @pytest.fixture
    def history_process_factory(self, tmp_path):
        return {store}.process_factory(tmp_path)
"""


# These runs only need to see a broken store fail: skip shrinking its counterexamples.
_FAIL_FAST = """
from hypothesis import Phase, settings

settings.register_profile("fail-fast", phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.load_profile("fail-fast")
"""


def failed_clauses(
    pytester: pytest.Pytester, store: type[HistoryProvider], clauses: Sequence[str], **caps: bool
) -> set[str]:
    """Run ``clauses`` of the suite against ``store``; return the names of those that failed (all must run)."""
    pytester.makeconftest(_FAIL_FAST)
    pytester.makepyfile(
        _MODULE.format(
            module=__name__,
            store=store.__name__,
            capabilities=", ".join(f"{name}={value}" for name, value in caps.items()),
            process_fixture=_PROCESS_FIXTURE.format(store=store.__name__) if caps.get("multi_process") else "",
        )
    )
    return failed_of(pytester, clauses)


_CASES: list[tuple[type[HistoryProvider], list[str], dict[str, bool]]] = [
    (SharedAcrossSources, ["test_source_ids_are_isolated"], {}),
    (DropsAdditionalProperties, ["test_message_fields_round_trip"], {}),
    (LowercasesSessionIds, ["test_session_ids_never_share_history"], {}),
    (TruncatesLongSessionIds, ["test_long_session_ids_keep_separate_histories"], {}),
    (
        NeverDeduplicates,
        ["test_replayed_transcript_is_not_stored_twice", "test_deduplication_matches_the_framework"],
        {},
    ),
    (
        DropsEveryRepeat,
        ["test_repeated_user_message_without_id_is_kept", "test_deduplication_matches_the_framework"],
        {},
    ),
    (SortsByMessageId, ["test_messages_load_in_save_order"], {}),
    (UploadsThenLinks, ["test_overlapping_saves_land_in_call_order"], {}),
    (LosesConcurrentUpdates, ["test_concurrent_saves_lose_and_duplicate_nothing"], {"concurrent_instances": True}),
    (ChecksThenAppends, ["test_concurrent_replays_store_once"], {"concurrent_instances": True}),
    (WindowStartsWithOrphans, ["test_window_never_starts_with_an_orphan_answer"], {"windowed_load": True}),
    (
        RacyFileHistoryProvider,
        ["test_processes_saving_concurrently_lose_and_duplicate_nothing"],
        {"multi_process": True},
    ),
    (
        RacyAppendFileHistoryProvider,
        ["test_processes_saving_concurrently_lose_and_duplicate_nothing"],
        {"multi_process": True},
    ),
]


@pytest.mark.parametrize(("store", "clauses", "caps"), _CASES, ids=[c[0].__name__ for c in _CASES])
def test_broken_store_fails_its_clauses(
    pytester: pytest.Pytester, store: type[HistoryProvider], clauses: list[str], caps: dict[str, bool]
) -> None:
    assert failed_clauses(pytester, store, clauses, **caps) == set(clauses)


def test_correct_base_store_passes_every_clause_used_above(pytester: pytest.Pytester) -> None:
    clauses = sorted(
        {c for _, names, _ in _CASES for c in names} - {"test_processes_saving_concurrently_lose_and_duplicate_nothing"}
    )
    assert (
        failed_clauses(pytester, DictHistoryProvider, clauses, concurrent_instances=True, windowed_load=True) == set()
    )


class LogHistoryOnMemory(LogHistoryProvider):
    """The core's provider over the in-process log driver, shared by every instance of one factory."""

    @classmethod
    def factory(cls, tmp_path: Path) -> Callable[..., HistoryProvider]:
        driver = MemoryLogDriver()
        return lambda **options: cls(driver, **options)


class LetsRecursionErrorEscape(LogHistoryOnMemory):
    """Parses each record first and names what fails, but a record nested too deeply escapes as ``RecursionError``."""

    def _decode(self, key: str, payloads: list[bytes]) -> list[Message]:
        for payload in payloads:
            try:
                json.loads(payload)
            except ValueError as err:
                raise CorruptRecordError(f"history record in {key!r}") from err
        return super()._decode(key, payloads)


_CORRUPTIBLE = {"corruptible": True, "admin": True}


def test_decoder_letting_recursion_error_escape_fails_the_crafted_records_clause(pytester: pytest.Pytester) -> None:
    clause = "test_crafted_records_are_corrupt_record_errors"
    assert failed_clauses(pytester, LetsRecursionErrorEscape, [clause], **_CORRUPTIBLE) == {clause}


def test_core_log_provider_passes_the_crafted_records_clause(pytester: pytest.Pytester) -> None:
    assert (
        failed_clauses(pytester, LogHistoryOnMemory, ["test_crafted_records_are_corrupt_record_errors"], **_CORRUPTIBLE)
        == set()
    )


class CompactsWithoutVersion(LogHistoryOnMemory):
    """Appends a compaction on whatever the log holds now, not on the version the strategy saw."""

    async def append_compaction(
        self, key: str, session_id: str, record: bytes, *, expected_version: int | str | None
    ) -> None:
        current = await self.driver.tail(key, 0)
        await super().append_compaction(key, session_id, record, expected_version=current.version)


class IgnoresCompactionOnLoad(LogHistoryOnMemory):
    """Stores compactions but loads the bare transcript, as if nothing had been decided."""

    def _view(self, key: str, payloads: list[bytes]) -> list[Message]:
        return self._decode(key, payloads)


class CountsRecordsInWindows(LogHistoryOnMemory):
    """Cuts a window by records, so stored compactions shrink it."""

    async def _window(self, key: str, payloads: list[bytes]) -> list[Message]:
        return self._view(key, payloads)


class RetainsInPlace(LogHistoryOnMemory):
    """Retains by deleting the log and writing the compacted view back: a stop in between empties the session."""

    async def retain(self, session_id: str | None) -> int:
        kept = [m for m in await self.get_messages(session_id) if not m.additional_properties.get("_excluded")]
        for _ in range(3):  # as many writes before the new transcript as the staged retention makes
            await self.delete_session(session_id)
        await self.import_messages(session_id, kept)
        return 0


class RetainsNothing(LogHistoryOnMemory):
    """Reports what a retention would drop and keeps every message."""

    async def retain(self, session_id: str | None) -> int:
        return sum(1 for m in await self.get_messages(session_id) if m.additional_properties.get("_excluded"))


_COMPACTION_CAPS = {"stored_compaction": True, "skip_excluded": True, "windowed_load": True}
_COMPACTION_CASES: list[tuple[type[HistoryProvider], list[str]]] = [
    (CompactsWithoutVersion, ["test_compaction_racing_a_save_decides_again_on_the_new_tail"]),
    (
        IgnoresCompactionOnLoad,
        ["test_compaction_is_stored_and_loaded_verbatim", "test_skip_excluded_loads_the_compacted_view"],
    ),
    (CountsRecordsInWindows, ["test_windows_after_a_compaction_count_messages_and_keep_tool_groups_whole"]),
    (RetainsInPlace, ["test_retention_stopped_at_any_write_keeps_a_transcript_and_a_rerun_finishes"]),
    (RetainsNothing, ["test_retention_drops_excluded_messages_and_keeps_the_model_view"]),
]


@pytest.mark.parametrize(("store", "clauses"), _COMPACTION_CASES, ids=[c[0].__name__ for c in _COMPACTION_CASES])
def test_broken_compaction_fails_its_clauses(
    pytester: pytest.Pytester, store: type[HistoryProvider], clauses: list[str]
) -> None:
    assert failed_clauses(pytester, store, clauses, **_COMPACTION_CAPS) == set(clauses)


def test_core_log_provider_passes_every_compaction_clause(pytester: pytest.Pytester) -> None:
    clauses = sorted(
        {c for _, names in _COMPACTION_CASES for c in names} | {"test_saves_after_a_compaction_store_nothing_twice"}
    )
    assert failed_clauses(pytester, LogHistoryOnMemory, clauses, **_COMPACTION_CAPS) == set()


class ServesChangedMessages(LogHistoryOnMemory):
    """Keeps the messages a load built and returns them again for the same records, never checking them."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._built: dict[tuple[str, tuple[bytes, ...]], list[Message]] = {}

    def _decode(self, key: str, payloads: list[bytes]) -> list[Message]:
        kept = self._built.get((key, tuple(payloads)))
        if kept is None:
            kept = self._built[(key, tuple(payloads))] = super()._decode(key, payloads)
        return list(kept)


class RemembersLoadsByLength(LogHistoryOnMemory):
    """Remembers a load by the log's length and rebuilds it from there: new objects, but maybe of an old log."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loaded: dict[tuple[str, int], list[str]] = {}

    def _decode(self, key: str, payloads: list[bytes]) -> list[Message]:
        texts = self._loaded.get((key, len(payloads)))
        if texts is None:
            built = super()._decode(key, payloads)
            texts = self._loaded[(key, len(payloads))] = [json.dumps(m.to_dict()) for m in built]
        return [Message.from_dict(json.loads(t)) for t in texts]


_SHARING_CLAUSES = [
    "test_changes_to_loaded_messages_never_reach_a_later_load",
    "test_a_load_after_another_instance_rewrote_the_session_returns_the_new_messages",
]
_SHARING_CASES: list[tuple[type[HistoryProvider], list[str]]] = [
    (ServesChangedMessages, ["test_changes_to_loaded_messages_never_reach_a_later_load"]),
    (RemembersLoadsByLength, ["test_a_load_after_another_instance_rewrote_the_session_returns_the_new_messages"]),
]


@pytest.mark.parametrize(("store", "clauses"), _SHARING_CASES, ids=[c[0].__name__ for c in _SHARING_CASES])
def test_broken_message_sharing_fails_its_clause(
    pytester: pytest.Pytester, store: type[HistoryProvider], clauses: list[str]
) -> None:
    """Each store passes the other sharing clause, so the failure is the one its bug names."""
    assert failed_clauses(pytester, store, _SHARING_CLAUSES, admin=True, windowed_load=True) == set(clauses)


def test_core_log_provider_passes_the_sharing_clauses(pytester: pytest.Pytester) -> None:
    """The core provider shares unchanged messages across loads and passes both clauses."""
    assert failed_clauses(pytester, LogHistoryOnMemory, _SHARING_CLAUSES, admin=True, windowed_load=True) == set()
