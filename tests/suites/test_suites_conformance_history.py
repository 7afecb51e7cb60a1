"""The chat-history conformance suite against the framework's reference providers and the core adapter."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import get_args

import pytest
from agent_framework import FileHistoryProvider, InMemoryHistoryProvider
from agent_framework._types import ContentType

from agent_stores.core import LogHistoryProvider
from agent_stores.core.memory import MemoryLogDriver
from agent_stores.testing import FakeClock, HistoryCapabilities, HistoryProviderConformance
from agent_stores.testing.history import sample_contents


class TestInMemoryHistoryProvider(HistoryProviderConformance):
    """History lives in ``AgentSession.state``: the suite's session objects are the store.

    Saves never await, so instances sharing one session's state cannot interleave: concurrent
    saves in one event loop are safe. Nothing is shared across processes.
    """

    capabilities = HistoryCapabilities(skip_excluded=True, concurrent_instances=True)
    divergences = {
        "test_changes_to_loaded_messages_never_reach_a_later_load": (
            "InMemoryHistoryProvider keeps the message objects it was given in the session state and "
            "returns them on every load: a change to a loaded message is a change to the stored history."
        ),
    }

    @pytest.fixture
    def history_factory(self) -> Callable[..., InMemoryHistoryProvider]:
        return lambda **options: InMemoryHistoryProvider(**options)


class TestFileHistoryProvider(HistoryProviderConformance):
    """One JSONL file per session; a per-file thread lock and event-loop lock guard saves within one process."""

    capabilities = HistoryCapabilities(skip_excluded=True, concurrent_instances=True, corruptible=True)
    divergences = {
        "test_crafted_records_are_corrupt_record_errors": (
            "FileHistoryProvider raises a ValueError of its own (not CorruptRecordError) for a line that is "
            "not JSON or not a mapping, and lets TypeError, AttributeError, RecursionError and "
            "UnicodeDecodeError escape for the other crafted lines."
        ),
        "test_source_ids_are_isolated": (
            "FileHistoryProvider names its files after the session id only: two providers with different "
            "source_id over one storage_path read and write the same file."
        ),
        "test_long_session_ids_keep_separate_histories": (
            "FileHistoryProvider uses a lowercase-safe session id verbatim as the file name, at any length: "
            "a 300-character id fails with ENAMETOOLONG (_storage_key_segment digests only ids it encodes)."
        ),
    }

    @pytest.fixture
    def history_factory(self, tmp_path: Path) -> Callable[..., FileHistoryProvider]:
        return lambda **options: FileHistoryProvider(tmp_path / "history", **options)

    @pytest.fixture
    def corrupt_history(self) -> Callable[[FileHistoryProvider, str, bytes], Awaitable[None]]:
        async def corrupt(provider: FileHistoryProvider, session_id: str, record: bytes) -> None:
            path = provider._session_file_path(session_id)  # pyright: ignore[reportPrivateUsage]
            with path.open("ab") as file:
                file.write(record + b"\n")

        return corrupt


class TestLogHistoryProviderInMemory(HistoryProviderConformance):
    """The core adapter over the in-process driver; one driver per clause is the backing store."""

    capabilities = HistoryCapabilities(
        windowed_load=True,
        skip_excluded=True,
        concurrent_instances=True,
        admin=True,
        ttl=True,
        corruptible=True,
        stored_compaction=True,
    )

    fake_clock = True

    @pytest.fixture
    def history_factory(self, clock: FakeClock) -> Callable[..., LogHistoryProvider]:
        driver = MemoryLogDriver(clock=clock)
        return lambda **options: LogHistoryProvider(driver, **options)


def test_samples_cover_every_content_type() -> None:
    """The round-trip clause must exercise every ``Content`` type the installed framework defines."""
    assert {c.type for c in sample_contents()} == set(get_args(ContentType))
