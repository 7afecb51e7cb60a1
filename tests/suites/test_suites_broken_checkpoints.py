"""The checkpoint suite catches broken storage: each deliberately broken one fails the clause naming its bug.

Each broken storage is the core's ``ObjectCheckpointStorage`` with one step done the way a
first version would do it. A run of the correct storage passes every clause used here, so each
failure is the bug's, not the harness's.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from agent_framework import WorkflowCheckpoint
from agent_framework._workflows._checkpoint_encoding import decode_checkpoint_value

from agent_stores.core import StoreConflictError, decode_segment
from agent_stores.core.checkpoints import (  # pyright: ignore[reportPrivateUsage]
    ObjectCheckpointStorage,
    _parse_entry,  # pyright: ignore[reportPrivateUsage]
    _Record,  # pyright: ignore[reportPrivateUsage]
    encode_record,
)
from suite_runs import failed_of

pytest_plugins = ["pytester"]


class SkipsFieldValidation(ObjectCheckpointStorage):
    """Checks the envelope only: a field of the wrong type reaches the code that orders and indexes it."""

    def _decode(self, data: bytes, record_key: str, checkpoint_id: str | None = None) -> _Record:
        envelope = json.loads(data)
        checkpoint = WorkflowCheckpoint(**decode_checkpoint_value(envelope["checkpoint"]))
        return _Record(checkpoint, envelope["expires_at"], self._index_key(checkpoint))


class DecodesWithoutTheFramework(ObjectCheckpointStorage):
    """Builds checkpoints from the parsed JSON alone: pickled values come back as their marker mappings."""

    def _decode(self, data: bytes, record_key: str, checkpoint_id: str | None = None) -> _Record:
        envelope = json.loads(data)
        checkpoint = WorkflowCheckpoint(**envelope["checkpoint"])
        return _Record(checkpoint, envelope["expires_at"], self._index_key(checkpoint, envelope["expires_at"]))


class PurgesOnlyTheIndex(ObjectCheckpointStorage):
    """Finds expired checkpoints through the index alone, so a record whose save never wrote its entry stays."""

    async def purge_expired(self) -> int:
        removed = 0
        for index_key in (await self.driver.list(f"{self.root}workflows/", delimiter=None)).keys:
            record_key = self._record_key_of_entry(index_key)
            stored = await self.driver.get(record_key)
            found = None if stored is None else self._peek(stored.data, record_key)
            if stored is not None and found is not None and found[0] == index_key and self._expired(found[1]):
                removed += await self._remove(record_key, stored.version, index_key)
        return removed


class RemovesTheEntryUnconditionally(ObjectCheckpointStorage):
    """Removes a checkpoint's index entry whatever happened since, then its record if unchanged."""

    async def _remove(self, record_key: str, version: str, index_key: str) -> bool:
        await self.driver.delete(index_key)
        try:
            await self.driver.delete(record_key, if_version=version)
        except StoreConflictError:
            return False
        return True


class MovesTheRecordFirst(ObjectCheckpointStorage):
    """Re-saves under a new timestamp as record, new entry, then old entry deleted: killed between, it is unlisted."""

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        record_key = self.record_key(checkpoint.checkpoint_id)
        index_key = self._index_key(checkpoint)
        previous = await self.driver.get(record_key)
        await self.driver.put(record_key, encode_record(checkpoint, allowed_types=self.allowed_types))
        await self._put_entry(index_key, checkpoint.checkpoint_id)
        old = None if previous is None else self._peek(previous.data, record_key)
        if old is not None and old[0] != index_key:
            await self.driver.delete(old[0])
        return checkpoint.checkpoint_id


class TakesEveryIdForNew(ObjectCheckpointStorage):
    """Writes record then entry without looking for an earlier one: a re-save killed between them is unlisted."""

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        await self.driver.put(
            self.record_key(checkpoint.checkpoint_id), encode_record(checkpoint, allowed_types=self.allowed_types)
        )
        await self._put_entry(self._index_key(checkpoint), checkpoint.checkpoint_id)
        return checkpoint.checkpoint_id


class ListsIdsIgnoringExpiry(ObjectCheckpointStorage):
    """Names the ids from the index keys alone, expired entries included, while the records say they expired."""

    async def list_checkpoint_ids(self, *, workflow_name: str) -> list[str]:
        keys = await self._entries(self._index_prefix(workflow_name))  # pyright: ignore[reportPrivateUsage]
        return [decode_segment(_parse_entry(k).segment) or "" for k in reversed(keys)]


_MODULE = """
import pytest
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.testing import ObjectCheckpointStorageConformance
from {module} import {store}


class TestStore(ObjectCheckpointStorageConformance):
    fake_clock = True

    @pytest.fixture
    def checkpoint_storage_factory(self, clock):
        driver = MemoryObjectDriver()
        return lambda **options: {store}(driver, clock=clock, **options)
"""


def failed_clauses(pytester: pytest.Pytester, store: type[ObjectCheckpointStorage], clauses: Sequence[str]) -> set[str]:
    """Run ``clauses`` of the suite against ``store``; return the names of those that failed (all must run)."""
    pytester.makepyfile(_MODULE.format(module=__name__, store=store.__name__))
    return failed_of(pytester, clauses)


_CASES: list[tuple[type[ObjectCheckpointStorage], str]] = [
    (SkipsFieldValidation, "test_malformed_fields_are_corrupt_checkpoints"),
    (DecodesWithoutTheFramework, "test_checkpoints_read_back_as_the_framework_file_store_returns_them"),
    (PurgesOnlyTheIndex, "test_killed_save_leaves_nothing_after_expiry_and_purge"),
    (RemovesTheEntryUnconditionally, "test_trim_racing_a_resave_keeps_the_resaved_checkpoint"),
    (MovesTheRecordFirst, "test_resave_killed_between_writes_keeps_the_checkpoint_listed"),
    (TakesEveryIdForNew, "test_resave_killed_between_writes_keeps_the_checkpoint_listed"),
    (ListsIdsIgnoringExpiry, "test_listings_agree_on_liveness_expiry_and_order"),
]


@pytest.mark.parametrize(("store", "clause"), _CASES, ids=[c[0].__name__ for c in _CASES])
def test_broken_storage_fails_its_clause(
    pytester: pytest.Pytester, store: type[ObjectCheckpointStorage], clause: str
) -> None:
    assert failed_clauses(pytester, store, [clause]) == {clause}


def test_correct_storage_passes_every_clause_used_above(pytester: pytest.Pytester) -> None:
    assert failed_clauses(pytester, ObjectCheckpointStorage, [clause for _, clause in _CASES]) == set()
