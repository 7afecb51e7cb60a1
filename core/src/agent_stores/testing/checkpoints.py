"""Conformance clauses for ``agent_framework.CheckpointStorage`` implementations."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import os
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, ClassVar, cast

import pytest
from agent_framework import CheckpointStorage, Message, WorkflowCheckpoint
from agent_framework.exceptions import WorkflowCheckpointException

from agent_stores.core.checkpoints import CorruptCheckpointError, ObjectCheckpointStorage
from agent_stores.core.drivers import Listing, ObjectDriver, StoredObject
from agent_stores.core.lifecycle import adapter_capabilities

from ._base import ConformanceBase, misbehaviour, requires, store_at, unique_id
from .adversarial import adversarial_ids
from .clock import FakeClock

__all__ = [
    "MALFORMED_CHECKPOINT_FIELDS",
    "OBJECT_CHECKPOINT_CAPABILITIES",
    "CheckpointStorageCapabilities",
    "CheckpointStorageConformance",
    "ConformanceState",
    "ObjectCheckpointStorageConformance",
    "checkpoint_storage_at",
    "corrupt_object_checkpoint",
]

OpenStore = Callable[..., Awaitable[Any]]

#: ``"module:qualname"`` of :class:`ConformanceState`, for ``allowed_checkpoint_types``.
CONFORMANCE_STATE_TYPE = "agent_stores.testing.checkpoints:ConformanceState"


@dataclass
class ConformanceState:
    """An application type outside the framework's built-in allow-list (used by the restore-safety clauses)."""

    label: str
    count: int


@dataclass(frozen=True)
class CheckpointStorageCapabilities:
    """What a checkpoint storage declares about itself; defaults are the minimal ``CheckpointStorage`` contract.

    Attributes:
        durable: Checkpoints go through the framework's checkpoint encoding
            (``encode_checkpoint_value`` / ``decode_checkpoint_value``) with
            ``allowed_checkpoint_types``, as ``FileCheckpointStorage`` does: a type outside the
            allow-list is refused at save and at load with ``WorkflowCheckpointException``. The
            factory accepts ``allowed_checkpoint_types=[...]``.
        ordered_listing: ``list_checkpoints`` / ``list_checkpoint_ids`` return checkpoints
            oldest first by ``timestamp`` (the framework's stores return them in storage order).
        lineage_ties: Checkpoints sharing a ``timestamp`` are ordered by lineage: one whose
            ``previous_checkpoint_id`` names another comes after it, in listings and in
            ``get_latest`` (the framework's stores leave ties to dict or directory order).
        keep_last: The factory accepts ``keep_last=N``: each save keeps only the workflow's
            newest N checkpoints.
        ttl: The factory accepts ``ttl=seconds``: a checkpoint expires that long after its save.
            The clause runs on the suite's fake clock (``fake_clock = True`` on the class, the
            factory's stores built with the ``clock`` fixture).
        namespaces: The factory accepts ``namespace=...``; namespaces never share a checkpoint.
        max_id_length: The longest checkpoint id the store accepts; ``None``: any (10 kB tried).
        corruptible: The test class provides a ``corrupt_checkpoint`` fixture: an async callable
            ``(store, checkpoint_id) -> None`` that overwrites the stored checkpoint with bytes
            that are not a checkpoint (a truncated one). For storage built on the core's
            ``ObjectCheckpointStorage``, the fixture returns :func:`corrupt_object_checkpoint`.
        many: How many checkpoints the many-checkpoints clause saves (more with
            ``AGENT_STORES_HEAVY=1``).

    """

    durable: bool = False
    ordered_listing: bool = False
    lineage_ties: bool = False
    keep_last: bool = False
    ttl: bool = False
    namespaces: bool = False
    max_id_length: int | None = None
    corruptible: bool = False
    many: int = 150


#: What the core's ``ObjectCheckpointStorage`` declares on any backend (as ``agent-stores check`` does).
OBJECT_CHECKPOINT_CAPABILITIES = CheckpointStorageCapabilities(**adapter_capabilities()["checkpoints"])


def checkpoint_storage_at(
    url: str, backend_options: Mapping[str, Any] | None = None, **options: Any
) -> ObjectCheckpointStorage:
    """Checkpoint storage on its own ``open_stores(url, **backend_options)``, closed with it.

    A ``checkpoint_storage_factory`` for a backend's stores: every call has its own connection
    (as a separate process would); ``options`` are ``ObjectCheckpointStorage``'s.
    """
    return store_at(url, backend_options, lambda stores: stores.checkpoint_storage(**options))


async def corrupt_object_checkpoint(store: ObjectCheckpointStorage, checkpoint_id: str) -> None:
    """Cut the stored record of ``checkpoint_id`` short, so it is no longer a checkpoint.

    The ``corrupt_checkpoint`` fixture of any storage built on the core's ``ObjectCheckpointStorage``::

        @pytest.fixture
        def corrupt_checkpoint(self):
            return corrupt_object_checkpoint
    """
    key = store.record_key(checkpoint_id)
    stored = await store.driver.get(key)
    assert stored is not None, f"checkpoint {checkpoint_id!r} is not stored"
    await store.driver.put(key, stored.data[:40])


_BASE_TIME = datetime(2026, 1, 1, tzinfo=UTC)


def _at(seconds: float) -> str:
    return (_BASE_TIME + timedelta(seconds=seconds)).isoformat()


def make_checkpoint(
    workflow_name: str,
    *,
    checkpoint_id: str | None = None,
    previous: str | None = None,
    at: float = 0.0,
    iteration: int = 0,
    state: dict[str, Any] | None = None,
) -> WorkflowCheckpoint:
    """Return a checkpoint of ``workflow_name`` whose timestamp is ``at`` seconds after a fixed base time."""
    return WorkflowCheckpoint(
        workflow_name=workflow_name,
        graph_signature_hash="conformance-graph",
        checkpoint_id=checkpoint_id or unique_id("cp"),
        previous_checkpoint_id=previous,
        timestamp=_at(at),
        iteration_count=iteration,
        state=state if state is not None else {"at": at},
    )


def _ids(checkpoints: list[WorkflowCheckpoint]) -> list[str]:
    return [cp.checkpoint_id for cp in checkpoints]


def _assert_same(ours: object, theirs: object, path: str) -> None:
    """Assert ``ours`` and ``theirs`` are the same value, type for type; objects without ``==`` by their attributes."""
    assert type(ours) is type(theirs), f"{path}: {type(ours).__name__} where the framework has {type(theirs).__name__}"
    if isinstance(ours, dict):
        theirs_dict = cast(dict[Any, Any], theirs)
        ours_dict = cast(dict[Any, Any], ours)
        assert list(ours_dict) == list(theirs_dict), f"{path}: keys {list(ours_dict)} != {list(theirs_dict)}"
        for key, value in ours_dict.items():
            _assert_same(value, theirs_dict[key], f"{path}[{key!r}]")
    elif isinstance(ours, list | tuple):
        ours_items, theirs_items = cast(list[Any], list(ours)), cast(list[Any], list(theirs))  # type: ignore[arg-type]
        assert len(ours_items) == len(theirs_items), f"{path}: {len(ours_items)} items != {len(theirs_items)}"
        for index, (mine, other) in enumerate(zip(ours_items, theirs_items, strict=True)):
            _assert_same(mine, other, f"{path}[{index}]")
    elif type(ours).__eq__ is object.__eq__ and hasattr(ours, "__dict__"):
        _assert_same(vars(ours), vars(theirs), f"{path}.__dict__")
    else:
        assert ours == theirs, f"{path}: {ours!r} != {theirs!r}"


class CheckpointStorageConformance(ConformanceBase):
    """Clauses every ``CheckpointStorage`` must pass.

    Provide a ``checkpoint_storage_factory`` fixture returning a callable (sync or async) that
    opens a store over the same backing data on every call, taking the options the declared
    capabilities name (``allowed_checkpoint_types``, ``keep_last``, ``ttl``, ``namespace``).
    """

    capabilities: ClassVar[CheckpointStorageCapabilities] = CheckpointStorageCapabilities()
    factory_fixture: ClassVar[str] = "checkpoint_storage_factory"

    async def test_load_missing_raises(self, open_store: OpenStore) -> None:
        """``load`` of an id never saved raises ``WorkflowCheckpointException``, as the framework's stores do.

        A failure means the store returned ``None`` or raised another error type; the runner
        catches ``WorkflowCheckpointException``.
        """
        store: CheckpointStorage = await open_store()
        with pytest.raises(WorkflowCheckpointException):
            await store.load(unique_id("missing"))

    async def test_round_trip(self, open_store: OpenStore) -> None:
        """``save`` returns the id, and ``load`` returns an equal checkpoint: every field, messages and state.

        State holds JSON values, a tuple, a datetime and a framework ``Message`` (the framework
        pickles the non-JSON ones). A failure means a field was dropped or changed on the way;
        compare ``to_dict()`` of both to see which.
        """
        store: CheckpointStorage = await open_store()
        workflow = unique_id("wf")
        checkpoint = make_checkpoint(
            workflow,
            iteration=3,
            state={
                "nested": {"list": [1, 2.5, "three", None, True], "empty": {}},
                "unicode": "ünïcødé 🙂",
                "pair": (1, "two"),
                "when": _BASE_TIME,
                "message": Message(role="user", contents=["hello"], message_id="m1"),
            },
        )
        checkpoint.metadata = {"superstep": 3}
        assert await store.save(checkpoint) == checkpoint.checkpoint_id
        loaded = await store.load(checkpoint.checkpoint_id)
        assert loaded.to_dict().keys() == checkpoint.to_dict().keys()
        for field, value in checkpoint.to_dict().items():
            if field == "state":
                continue
            assert getattr(loaded, field) == value, f"field {field!r} changed"
        assert loaded.state["nested"] == checkpoint.state["nested"]
        assert loaded.state["pair"] == (1, "two") and loaded.state["when"] == _BASE_TIME
        assert isinstance(loaded.state["message"], Message) and loaded.state["message"].text == "hello"

    async def test_load_returns_independent_copies(self, open_store: OpenStore) -> None:
        """``save`` stores a copy and every ``load`` returns a fresh one.

        A failure means mutating the saved object or a loaded one changed what the store holds.
        """
        store: CheckpointStorage = await open_store()
        checkpoint = make_checkpoint(unique_id("wf"), state={"items": [1]})
        await store.save(checkpoint)
        checkpoint.state["items"].append(2)
        first = await store.load(checkpoint.checkpoint_id)
        first.state["items"].append(3)
        second = await store.load(checkpoint.checkpoint_id)
        assert first is not second
        assert second.state == {"items": [1]}

    async def test_save_existing_id_replaces(self, open_store: OpenStore) -> None:
        """Saving an id that exists replaces that checkpoint, as the framework's stores do; it is listed once.

        Also when the second save moves it to a later timestamp: it is then the latest, listed
        once. A failure means the store kept both versions, kept the first, or listed the id twice.
        """
        store: CheckpointStorage = await open_store()
        workflow = unique_id("wf")
        other = make_checkpoint(workflow, at=5)
        first = make_checkpoint(workflow, at=1, state={"version": 1})
        await store.save(other)
        await store.save(first)
        second = make_checkpoint(workflow, checkpoint_id=first.checkpoint_id, at=9, state={"version": 2})
        await store.save(second)
        assert (await store.load(first.checkpoint_id)).state == {"version": 2}
        ids = await store.list_checkpoint_ids(workflow_name=workflow)
        assert sorted(ids) == sorted([other.checkpoint_id, first.checkpoint_id])
        latest = await store.get_latest(workflow_name=workflow)
        assert latest is not None and latest.checkpoint_id == first.checkpoint_id
        assert latest.state == {"version": 2}

    async def test_list_filters_by_workflow(self, open_store: OpenStore) -> None:
        """``list_checkpoints`` and ``list_checkpoint_ids`` return exactly the named workflow's checkpoints.

        A failure means checkpoints of another workflow leaked in, or some were missing.
        """
        store: CheckpointStorage = await open_store()
        one, two = unique_id("wf"), unique_id("wf")
        saved_one = [make_checkpoint(one, at=i) for i in range(3)]
        saved_two = [make_checkpoint(two, at=i) for i in range(2)]
        for checkpoint in [*saved_one, *saved_two]:
            await store.save(checkpoint)
        assert sorted(_ids(await store.list_checkpoints(workflow_name=one))) == sorted(_ids(saved_one))
        assert sorted(await store.list_checkpoint_ids(workflow_name=two)) == sorted(_ids(saved_two))
        assert await store.list_checkpoints(workflow_name=unique_id("none")) == []
        assert await store.list_checkpoint_ids(workflow_name=unique_id("none")) == []

    @requires("ordered_listing")
    async def test_list_is_oldest_first(self, open_store: OpenStore) -> None:
        """Listings are ordered by ``timestamp``, oldest first, whatever the save order; the latest is last.

        A failure means the store returned storage or save order; the message shows the order.
        """
        store: CheckpointStorage = await open_store()
        workflow = unique_id("wf")
        offsets = [5, 1, 4, 2, 3, 0]
        saved = {at: make_checkpoint(workflow, at=at) for at in offsets}
        for at in offsets:
            await store.save(saved[at])
        expected = [saved[at].checkpoint_id for at in sorted(offsets)]
        assert _ids(await store.list_checkpoints(workflow_name=workflow)) == expected
        assert await store.list_checkpoint_ids(workflow_name=workflow) == expected

    async def test_get_latest_by_timestamp_not_iteration(self, open_store: OpenStore) -> None:
        """``get_latest`` picks the newest ``timestamp``, not the highest ``iteration_count`` nor the last saved.

        A human-in-the-loop resume records a checkpoint at the same (or a lower) iteration
        than the one before it. A failure means the store ordered by iteration or save order.
        """
        store: CheckpointStorage = await open_store()
        workflow = unique_id("wf")
        newest = make_checkpoint(workflow, at=30, iteration=1)
        await store.save(newest)
        await store.save(make_checkpoint(workflow, at=10, iteration=7))
        await store.save(make_checkpoint(workflow, at=20, iteration=7))
        latest = await store.get_latest(workflow_name=workflow)
        assert latest is not None and latest.checkpoint_id == newest.checkpoint_id

    async def test_get_latest_none_when_empty(self, open_store: OpenStore) -> None:
        """``get_latest`` of a workflow with no checkpoint is ``None``.

        A failure means the store raised, or returned another workflow's checkpoint.
        """
        store: CheckpointStorage = await open_store()
        await store.save(make_checkpoint(unique_id("wf")))
        assert await store.get_latest(workflow_name=unique_id("none")) is None

    @requires("lineage_ties")
    async def test_tied_timestamps_follow_lineage(self, open_store: OpenStore) -> None:
        """Checkpoints sharing a timestamp are ordered by lineage: a child after its parent, whatever the save order.

        Clocks are coarse (Windows ticks every ~15 ms), so a pause and its resume checkpoint
        can share a timestamp. A failure means ``get_latest`` returned the parent (the
        workflow would resume from before the human's answer) or a listing put it last.
        """
        store: CheckpointStorage = await open_store()
        for child_first in (False, True):
            workflow = unique_id("wf")
            older = make_checkpoint(workflow, at=0)
            parent = make_checkpoint(workflow, at=5, previous=older.checkpoint_id, checkpoint_id=f"z-{unique_id()}")
            child = make_checkpoint(workflow, at=5, previous=parent.checkpoint_id, checkpoint_id=f"a-{unique_id()}")
            order = [older, child, parent] if child_first else [older, parent, child]
            for checkpoint in order:
                await store.save(checkpoint)
            latest = await store.get_latest(workflow_name=workflow)
            assert latest is not None and latest.checkpoint_id == child.checkpoint_id, (
                f"get_latest returned the parent (child saved {'first' if child_first else 'last'})"
            )
            expected = [older.checkpoint_id, parent.checkpoint_id, child.checkpoint_id]
            assert _ids(await store.list_checkpoints(workflow_name=workflow)) == expected
            assert await store.list_checkpoint_ids(workflow_name=workflow) == expected

    async def test_delete(self, open_store: OpenStore) -> None:
        """``delete`` returns ``True`` once, then ``False``; the checkpoint is gone from load, listings and latest.

        A failure means a deleted checkpoint is still visible somewhere, or ``delete`` of an
        absent id raised or returned ``True``.
        """
        store: CheckpointStorage = await open_store()
        workflow = unique_id("wf")
        older, newer = make_checkpoint(workflow, at=1), make_checkpoint(workflow, at=2)
        await store.save(older)
        await store.save(newer)
        assert await store.delete(newer.checkpoint_id) is True
        assert await store.delete(newer.checkpoint_id) is False
        assert await store.delete(unique_id("never")) is False
        with pytest.raises(WorkflowCheckpointException):
            await store.load(newer.checkpoint_id)
        assert await store.list_checkpoint_ids(workflow_name=workflow) == [older.checkpoint_id]
        latest = await store.get_latest(workflow_name=workflow)
        assert latest is not None and latest.checkpoint_id == older.checkpoint_id

    async def test_adversarial_names_are_distinct(self, open_store: OpenStore) -> None:
        """Ids and workflow names that differ in case, separators, `..`, globs, operators or Unicode never collide.

        The names are a unique base alone and with each adversarial fragment every store must
        keep (:func:`agent_stores.testing.adversarial.storable`) after it. A failure means two
        ids share one checkpoint or two workflows share a listing (the assertion names them);
        derive keys injectively, never by normalising names.
        """
        store: CheckpointStorage = await open_store()
        base = unique_id("adv")
        names = adversarial_ids(base)
        for index, name in enumerate(names):
            await store.save(make_checkpoint(name, checkpoint_id=name, state={"index": index}))
        for index, name in enumerate(names):
            loaded = await store.load(name)
            assert loaded.state == {"index": index}, f"{name!r} collided with {names[loaded.state['index']]!r}"
            assert await store.list_checkpoint_ids(workflow_name=name) == [name], f"workflow {name!r} mixed"

    async def test_long_ids(self, open_store: OpenStore) -> None:
        """Ids and workflow names of 1 kB and 10 kB work (up to the declared ``max_id_length``) and stay distinct.

        A failure means long ids were truncated (they collide) or rejected without being declared.
        """
        store: CheckpointStorage = await open_store()
        limit = self.capabilities.max_id_length
        base = unique_id("long")
        for length in [1_000, 10_000] if limit is None else [limit]:
            first = base + "x" * (length - len(base) - 1) + "1"
            second = first[:-1] + "2"
            await store.save(make_checkpoint(first, checkpoint_id=first, state={"n": 1}))
            await store.save(make_checkpoint(first, checkpoint_id=second, state={"n": 2}, at=1))
            assert (await store.load(first)).state == {"n": 1}
            assert (await store.load(second)).state == {"n": 2}
            assert sorted(await store.list_checkpoint_ids(workflow_name=first)) == sorted([first, second])

    async def test_save_replaces_what_another_store_saved(self, open_store: OpenStore) -> None:
        """A save of an id another store instance saved replaces it, in place or under a new timestamp.

        Each instance sees one version, listed once, whichever instance saved last. A failure
        means an instance took the id for new because it never saw it (both versions kept or
        listed, or the other instance's version still returned).
        """
        first: CheckpointStorage = await open_store()
        second: CheckpointStorage = await open_store()
        workflow = unique_id("wf")
        checkpoint = make_checkpoint(workflow, at=1, state={"version": 1})
        await first.save(checkpoint)
        await second.save(make_checkpoint(workflow, checkpoint_id=checkpoint.checkpoint_id, at=1, state={"version": 2}))
        await first.save(make_checkpoint(workflow, checkpoint_id=checkpoint.checkpoint_id, at=5, state={"version": 3}))
        for store in (first, second):
            assert await store.list_checkpoint_ids(workflow_name=workflow) == [checkpoint.checkpoint_id]
            assert [cp.state for cp in await store.list_checkpoints(workflow_name=workflow)] == [{"version": 3}]
            assert (await store.load(checkpoint.checkpoint_id)).state == {"version": 3}
            latest = await store.get_latest(workflow_name=workflow)
            assert latest is not None and latest.state == {"version": 3}

    async def test_restart_sees_checkpoints(self, open_store: OpenStore) -> None:
        """A second store instance over the same data sees what the first saved, and its deletes.

        A failure means checkpoints live in the instance rather than the backing store (or the
        factory does not reopen the same data).
        """
        first: CheckpointStorage = await open_store()
        workflow = unique_id("wf")
        checkpoint = make_checkpoint(workflow)
        await first.save(checkpoint)
        second: CheckpointStorage = await open_store()
        latest = await second.get_latest(workflow_name=workflow)
        assert latest is not None and latest.checkpoint_id == checkpoint.checkpoint_id
        assert await second.delete(checkpoint.checkpoint_id) is True
        assert await first.get_latest(workflow_name=workflow) is None

    async def test_concurrent_saves_lose_nothing(self, open_store: OpenStore) -> None:
        """Concurrent saves from two store instances to one workflow keep every checkpoint.

        A failure means one writer's index or listing update overwrote another's; the message
        names the lost ids.
        """
        stores: list[CheckpointStorage] = [await open_store(), await open_store()]
        workflow = unique_id("wf")
        saved = [make_checkpoint(workflow, at=i) for i in range(24)]
        await asyncio.gather(*(stores[i % 2].save(cp) for i, cp in enumerate(saved)))
        listed = set(await stores[0].list_checkpoint_ids(workflow_name=workflow))
        lost = set(_ids(saved)) - listed
        assert not lost, f"lost {sorted(lost)}"
        latest = await stores[1].get_latest(workflow_name=workflow)
        assert latest is not None and latest.checkpoint_id == saved[-1].checkpoint_id

    async def test_many_checkpoints(self, open_store: OpenStore) -> None:
        """With many checkpoints (past any page size), listings hold each once and ``get_latest`` is the newest.

        A failure means paging dropped or repeated checkpoints. ``AGENT_STORES_HEAVY=1`` saves 20x more.
        """
        store: CheckpointStorage = await open_store()
        workflow = unique_id("wf")
        count = self.capabilities.many * (20 if os.environ.get("AGENT_STORES_HEAVY") == "1" else 1)
        saved = [make_checkpoint(workflow, at=i, state={}) for i in range(count)]
        for start in range(0, count, 16):
            await asyncio.gather(*(store.save(cp) for cp in saved[start : start + 16]))
        newest = make_checkpoint(workflow, at=count + 1)
        await store.save(newest)
        latest = await store.get_latest(workflow_name=workflow)
        assert latest is not None and latest.checkpoint_id == newest.checkpoint_id
        ids = await store.list_checkpoint_ids(workflow_name=workflow)
        assert len(ids) == len(set(ids)) == count + 1
        if self.capabilities.ordered_listing:
            assert ids == [*_ids(saved), newest.checkpoint_id]

    @requires("durable")
    async def test_disallowed_type_refused_at_save(self, open_store: OpenStore) -> None:
        """A checkpoint holding a type outside the allow-list is refused at ``save`` (``WorkflowCheckpointException``).

        This is what ``FileCheckpointStorage`` does: nothing is written that could not be
        restored. A failure means the store wrote it (a later restore would fail) or raised
        another error type.
        """
        store: CheckpointStorage = await open_store()
        workflow = unique_id("wf")
        checkpoint = make_checkpoint(workflow, state={"app": ConformanceState("x", 1)})
        with pytest.raises(WorkflowCheckpointException):
            await store.save(checkpoint)
        with pytest.raises(WorkflowCheckpointException):
            await store.load(checkpoint.checkpoint_id)
        assert await store.list_checkpoint_ids(workflow_name=workflow) == []

    @requires("durable")
    async def test_allow_list_governs_restore(self, open_store: OpenStore) -> None:
        """With the type allowed it round-trips; a store opened without it refuses the load as the framework does.

        A failure means the store ignored ``allowed_checkpoint_types`` (restored a type it
        should refuse, or refused one it allows), or refused with another error type.
        """
        allowing: CheckpointStorage = await open_store(allowed_checkpoint_types=[CONFORMANCE_STATE_TYPE])
        workflow = unique_id("wf")
        checkpoint = make_checkpoint(workflow, state={"app": ConformanceState("x", 2)})
        await allowing.save(checkpoint)
        assert (await allowing.load(checkpoint.checkpoint_id)).state == {"app": ConformanceState("x", 2)}
        strict: CheckpointStorage = await open_store()
        with pytest.raises(WorkflowCheckpointException, match="blocked"):
            await strict.load(checkpoint.checkpoint_id)

    @requires("durable")
    async def test_checkpoints_read_back_as_the_framework_file_store_returns_them(
        self, open_store: OpenStore, tmp_path: Path
    ) -> None:
        """The listings, ``load`` and ``get_latest`` return what ``FileCheckpointStorage`` does for the same saves.

        Field by field, nested types included: pickled values (a tuple, a set, a datetime, a
        framework ``Message``, an allowed application type), plain JSON values a store might
        decode without the framework's decoding (strings spelling the pickle marker, backslash
        and unicode escapes, many brackets, deep nesting) and a key that is the marker itself.
        A failure names the checkpoint and the path of the first value that differs: a store
        whose own decoding drifted from the framework's (a value left a mapping that the
        framework unpickles, or the reverse, a lost type, a changed string).
        """
        from agent_framework import FileCheckpointStorage

        allowed = [CONFORMANCE_STATE_TYPE]
        store: CheckpointStorage = await open_store(allowed_checkpoint_types=allowed)
        reference = FileCheckpointStorage(tmp_path / "reference", allowed_checkpoint_types=allowed)
        workflow = unique_id("wf")
        nested: Any = "leaf"
        for _ in range(60):
            nested = {"n": [nested]}
        states: list[dict[str, Any]] = [
            {"json": {"list": [1, 2.5, "three", None, True], "empty": {}, "unicode": "ünïcødé 🙂"}},
            {"pair": (1, "two"), "set": {1, 2}, "when": _BASE_TIME, "app": ConformanceState("x", 3)},
            {"message": Message(role="user", contents=["hello"], message_id="m1"), "messages": [{"role": "user"}]},
            {"text": "__pickled__ and __type__ in a string", "escapes": 'a\nb "q" \\u005f \u00e9 \u2028 \x00'},
            {"__pickled__": "a marker key without its type", "wide": [{"a": [i]} for i in range(300)]},
            {"deep": nested},
        ]
        previous: str | None = None
        saved: list[WorkflowCheckpoint] = []
        for index, state in enumerate(states):
            checkpoint = make_checkpoint(workflow, at=index, previous=previous, iteration=index, state=state)
            checkpoint.metadata = {"superstep": index, "note": ["a", {"b": None}]}
            await store.save(checkpoint)
            await reference.save(checkpoint)
            saved.append(checkpoint)
            previous = checkpoint.checkpoint_id
        expected = {cp.checkpoint_id: cp for cp in await reference.list_checkpoints(workflow_name=workflow)}
        listed = await store.list_checkpoints(workflow_name=workflow)
        assert sorted(_ids(listed)) == sorted(_ids(saved))
        if self.capabilities.ordered_listing:
            assert _ids(listed) == _ids(saved)
        for checkpoint in listed:
            _assert_same(checkpoint.to_dict(), expected[checkpoint.checkpoint_id].to_dict(), checkpoint.checkpoint_id)
        for original in saved:
            loaded = await store.load(original.checkpoint_id)
            _assert_same(loaded.to_dict(), (await reference.load(original.checkpoint_id)).to_dict(), "load")
        latest = await store.get_latest(workflow_name=workflow)
        assert latest is not None
        _assert_same(latest.to_dict(), expected[saved[-1].checkpoint_id].to_dict(), "get_latest")

    @requires("corruptible")
    async def test_corrupt_checkpoint_is_named_error(
        self, open_store: OpenStore, request: pytest.FixtureRequest
    ) -> None:
        """A corrupt or truncated checkpoint is a ``WorkflowCheckpointException`` naming it; ``delete`` removes it.

        A failure means the store crashed with an unrelated error (deep inside the runner),
        returned a half-read checkpoint, or could not delete the broken record.
        """
        corrupt: Callable[[Any, str], Awaitable[None]] = request.getfixturevalue("corrupt_checkpoint")
        store: CheckpointStorage = await open_store()
        workflow = unique_id("wf")
        checkpoint = make_checkpoint(workflow)
        await store.save(checkpoint)
        await corrupt(store, checkpoint.checkpoint_id)
        with pytest.raises(WorkflowCheckpointException) as caught:
            await store.load(checkpoint.checkpoint_id)
        assert checkpoint.checkpoint_id in str(caught.value), f"the error does not name the checkpoint: {caught.value}"
        assert await store.delete(checkpoint.checkpoint_id) is True
        with pytest.raises(WorkflowCheckpointException):
            await store.load(checkpoint.checkpoint_id)
        assert await store.get_latest(workflow_name=workflow) is None
        assert await store.list_checkpoint_ids(workflow_name=workflow) == []

    @requires("corruptible")
    async def test_corrupt_latest_is_not_skipped(self, open_store: OpenStore, request: pytest.FixtureRequest) -> None:
        """When the newest checkpoint is corrupt, ``get_latest`` and ``list_checkpoints`` raise; they never skip it.

        Skipping would silently resume the workflow from an older state. A failure means the
        store returned the older checkpoint (or ``None``) without saying so.
        """
        corrupt: Callable[[Any, str], Awaitable[None]] = request.getfixturevalue("corrupt_checkpoint")
        store: CheckpointStorage = await open_store()
        workflow = unique_id("wf")
        older, newer = make_checkpoint(workflow, at=1), make_checkpoint(workflow, at=2)
        await store.save(older)
        await store.save(newer)
        await corrupt(store, newer.checkpoint_id)
        with pytest.raises(WorkflowCheckpointException):
            await store.get_latest(workflow_name=workflow)
        with pytest.raises(WorkflowCheckpointException):
            await store.list_checkpoints(workflow_name=workflow)
        await store.delete(newer.checkpoint_id)
        latest = await store.get_latest(workflow_name=workflow)
        assert latest is not None and latest.checkpoint_id == older.checkpoint_id

    @requires("keep_last")
    async def test_keep_last(self, open_store: OpenStore) -> None:
        """With ``keep_last=3`` only the newest 3 checkpoints of each workflow remain after each save.

        A failure means older checkpoints survived, the wrong ones were removed, or another
        workflow's checkpoints were trimmed.
        """
        store: CheckpointStorage = await open_store(keep_last=3)
        workflow, other = unique_id("wf"), unique_id("wf")
        kept_other = make_checkpoint(other, at=0)
        await store.save(kept_other)
        saved = [make_checkpoint(workflow, at=i) for i in range(6)]
        for checkpoint in saved:
            await store.save(checkpoint)
        assert sorted(await store.list_checkpoint_ids(workflow_name=workflow)) == sorted(_ids(saved[-3:]))
        for gone in saved[:3]:
            with pytest.raises(WorkflowCheckpointException):
                await store.load(gone.checkpoint_id)
        assert await store.list_checkpoint_ids(workflow_name=other) == [kept_other.checkpoint_id]
        latest = await store.get_latest(workflow_name=workflow)
        assert latest is not None and latest.checkpoint_id == saved[-1].checkpoint_id

    @requires("ttl", fake_clock=True)
    async def test_ttl_expires(self, open_store: OpenStore, clock: FakeClock) -> None:
        """With ``ttl``, a checkpoint reads as whole until its time has passed, then as absent everywhere.

        On the fake clock. A failure means an expired checkpoint was still loaded, listed or
        returned as latest, or one expired early.
        """
        ttl = 600.0
        store: CheckpointStorage = await open_store(ttl=ttl)
        workflow = unique_id("wf")
        checkpoint = make_checkpoint(workflow)
        await store.save(checkpoint)
        clock.advance(ttl - 1)
        assert (await store.load(checkpoint.checkpoint_id)).checkpoint_id == checkpoint.checkpoint_id
        assert await store.list_checkpoint_ids(workflow_name=workflow) == [checkpoint.checkpoint_id]
        clock.advance(2)
        assert await store.get_latest(workflow_name=workflow) is None
        with pytest.raises(WorkflowCheckpointException):
            await store.load(checkpoint.checkpoint_id)
        assert await store.list_checkpoint_ids(workflow_name=workflow) == []

    @requires("ttl", "ordered_listing", "lineage_ties", fake_clock=True)
    async def test_listings_agree_on_liveness_expiry_and_order(self, open_store: OpenStore, clock: FakeClock) -> None:
        """``list_checkpoint_ids`` names exactly the checkpoints ``list_checkpoints`` returns, in its order.

        Through expiry, deletes, re-saves that move a checkpoint (to a new timestamp, to another
        workflow) and a tie ordered by lineage, on the fake clock, and ``get_latest`` is the last
        of them. A failure shows both listings: a store answering the ids from an index and the
        checkpoints from their records has let the two drift apart (an expiry read from one
        place only, an entry left behind by a move, a tie ordered without the lineage).
        """
        ttl = 600.0
        store: CheckpointStorage = await open_store(ttl=ttl)
        workflow, other = unique_id("wf"), unique_id("wf")
        early = [make_checkpoint(workflow, at=i) for i in range(3)]
        for checkpoint in early:
            await store.save(checkpoint)
        clock.advance(ttl / 2)
        parent = make_checkpoint(workflow, at=10, checkpoint_id=f"z-{unique_id()}")
        child = make_checkpoint(workflow, at=10, previous=parent.checkpoint_id, checkpoint_id=f"a-{unique_id()}")
        late = [make_checkpoint(workflow, at=20 + i) for i in range(3)]
        for checkpoint in [child, *late, parent]:
            await store.save(checkpoint)
        # Moves: the oldest re-saved later (a new timestamp and expiry), one into the other workflow.
        moved = make_checkpoint(workflow, checkpoint_id=early[0].checkpoint_id, at=30)
        await store.save(moved)
        away = make_checkpoint(other, checkpoint_id=late[0].checkpoint_id, at=25)
        await store.save(away)
        assert await store.delete(late[1].checkpoint_id) is True

        async def agree(expected: list[WorkflowCheckpoint], when: str) -> None:
            ids = await store.list_checkpoint_ids(workflow_name=workflow)
            listed = _ids(await store.list_checkpoints(workflow_name=workflow))
            wanted = _ids(expected)
            assert ids == listed == wanted, f"{when}: ids {ids}, checkpoints {listed}, expected {wanted}"
            latest = await store.get_latest(workflow_name=workflow)
            assert (latest and latest.checkpoint_id) == (expected[-1].checkpoint_id if expected else None), when

        await agree([early[1], early[2], parent, child, late[2], moved], "all saved")
        assert await store.list_checkpoint_ids(workflow_name=other) == [away.checkpoint_id]
        clock.advance(ttl / 2 + 1)  # the first saves expired; the moved one was saved again later
        await agree([parent, child, late[2], moved], "the first saves expired")
        clock.advance(ttl)
        await agree([], "everything expired")
        assert await store.list_checkpoint_ids(workflow_name=other) == []

    @requires("namespaces")
    async def test_namespaces_are_isolated(self, open_store: OpenStore) -> None:
        """Stores with different namespaces never see each other's checkpoints, even with equal ids and names.

        A failure means the namespace is not part of every key.
        """
        one: CheckpointStorage = await open_store(namespace=unique_id("tenant"))
        two: CheckpointStorage = await open_store(namespace=unique_id("tenant"))
        workflow, checkpoint_id = unique_id("wf"), unique_id("cp")
        await one.save(make_checkpoint(workflow, checkpoint_id=checkpoint_id, state={"tenant": 1}))
        with pytest.raises(WorkflowCheckpointException):
            await two.load(checkpoint_id)
        assert await two.get_latest(workflow_name=workflow) is None
        await two.save(make_checkpoint(workflow, checkpoint_id=checkpoint_id, state={"tenant": 2}))
        assert (await one.load(checkpoint_id)).state == {"tenant": 1}
        assert await two.delete(checkpoint_id) is True
        assert (await one.load(checkpoint_id)).state == {"tenant": 1}


class _Missing:
    def __repr__(self) -> str:
        return "<missing>"


@dataclass(frozen=True)
class _RawJson:
    """Bytes written in place of a field's JSON value (what ``json.dumps`` cannot produce)."""

    label: str
    data: bytes


_MISSING = _Missing()
_DEEP = _RawJson("nested 3,000 deep", b'{"a":' * 3000 + b"1" + b"}" * 3000)
_NOT_UTF8 = _RawJson("not UTF-8", b'"\xff\xfe"')
_SURROGATE = _RawJson("a lone surrogate", b'"\\ud800"')

_MALFORMED: tuple[tuple[str, tuple[object, ...]], ...] = (
    ("timestamp", (5, None, True, ["2026-01-01T00:00:00+00:00"], {"$date": 0}, "", "yesterday", _MISSING)),
    ("workflow_name", (5, None, ["wf"], {"name": "wf"}, _SURROGATE, _MISSING)),
    ("checkpoint_id", (5, None, ["cp"], "", "another-checkpoint", _SURROGATE, _MISSING)),
    ("previous_checkpoint_id", (5, False, ["cp"], {"id": "cp"}, _NOT_UTF8)),
    ("graph_signature_hash", (5, _MISSING)),
    ("iteration_count", ("3", True, 1.5)),
    ("version", (1,)),
    ("state", ([], "state", _DEEP)),
    ("messages", (5,)),
    ("pending_request_info_events", ([],)),
    ("metadata", ("metadata",)),
)
#: Stored checkpoint fields set to what no save writes, for the malformed-record clause: the
#: wrong JSON type, the wrong shape (an empty id, another checkpoint's id, a timestamp that is
#: not ISO 8601, a lone surrogate no key can hold), a required field missing, values nested
#: past any parser's depth and bytes that are not UTF-8. Each entry is ``label -> (field, value)``.
MALFORMED_CHECKPOINT_FIELDS: dict[str, tuple[str, object]] = {
    f"{field} {value.label if isinstance(value, _RawJson) else repr(value)}": (field, value)
    for field, values in _MALFORMED
    for value in values
}

_PLACEHOLDER = "agent-stores:conformance:raw"


async def _rewrite_field(store: ObjectCheckpointStorage, checkpoint_id: str, field: str, value: object) -> None:
    """Set one field of a stored checkpoint to ``value`` (``_MISSING`` removes it), through the driver."""
    key = store.record_key(checkpoint_id)
    stored = await store.driver.get(key)
    assert stored is not None, f"checkpoint {checkpoint_id!r} is not stored"
    envelope = json.loads(stored.data)
    body: dict[str, Any] = envelope["checkpoint"]
    if value is _MISSING:
        del body[field]
    else:
        body[field] = _PLACEHOLDER if isinstance(value, _RawJson) else value
    data = json.dumps(envelope).encode("utf-8")
    if isinstance(value, _RawJson):
        data = data.replace(json.dumps(_PLACEHOLDER).encode(), value.data)
    await store.driver.delete(key)  # then a new object: the record as a crafted write leaves it
    await store.driver.put(key, data)


class _Killed(Exception):
    """Raised by :class:`_Interrupting` in place of a write: the process died there."""


class _Interrupting:
    """An object driver over another that runs ``hook`` once, just before its ``at``-th write (put or delete).

    A hook that raises :class:`_Killed` stops the caller there, as a killed process would; one
    that writes through another store forces a race at exactly that point. It has no
    ``put_in_order``, so a save's writes come here one by one (the core's fallback): every
    state a driver writing them in order can be stopped in (a prefix of them) is reached.
    """

    def __init__(self, driver: ObjectDriver, *, at: int, hook: Callable[[], Awaitable[None]]) -> None:
        self._driver = driver
        self._at = at
        self._hook = hook
        self._writes = 0
        #: Whether the hook ran (the caller made at least ``at`` writes).
        self.fired = False

    async def _before_write(self) -> None:
        self._writes += 1
        if self._writes == self._at:
            self.fired = True
            await self._hook()

    async def get(self, key: str) -> StoredObject | None:
        return await self._driver.get(key)

    async def head(self, key: str) -> str | None:
        return await self._driver.head(key)

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        await self._before_write()
        return await self._driver.put(key, data, if_absent=if_absent, if_version=if_version)

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        await self._before_write()
        return await self._driver.delete(key, if_version=if_version)

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        return await self._driver.list(prefix, delimiter=delimiter, after=after, limit=limit)

    async def aclose(self) -> None:
        return None  # borrowed


async def _kill(*_: object) -> None:
    raise _Killed


def _beside(store: ObjectCheckpointStorage, driver: ObjectDriver, **options: Any) -> ObjectCheckpointStorage:
    """Storage of ``store``'s class over ``driver``, with its keys (prefix, tenant, namespace) and allow-list."""
    return type(store)(
        driver,
        prefix=store.prefix,  # already under the tenant's root
        namespace=store.namespace,
        allowed_checkpoint_types=sorted(store.allowed_types),
        **options,
    )


async def _one_version(
    fresh: ObjectCheckpointStorage, workflow: str, checkpoint_id: str, what: str
) -> WorkflowCheckpoint:
    """Assert that ``fresh`` lists ``checkpoint_id`` alone, in one version, with one record and one entry left.

    The listing, ``load`` and ``get_latest`` must agree on that version; it is returned as loaded.
    """
    listed = await fresh.list_checkpoints(workflow_name=workflow)
    assert _ids(listed) == [checkpoint_id], f"{what}: listed {_ids(listed)}"
    loaded = await fresh.load(checkpoint_id)
    latest = await fresh.get_latest(workflow_name=workflow)
    assert latest is not None
    versions = {(cp.timestamp, cp.state["version"]) for cp in (listed[0], loaded, latest)}
    assert len(versions) == 1, f"{what}: listing, load and get_latest disagree: {versions}"
    left = await _stored_keys(fresh)
    assert len(left) == 2, f"{what}: left {left} (one record and one index entry)"
    return loaded


async def _stored_keys(store: ObjectCheckpointStorage) -> list[str]:
    return (await store.driver.list(store.root, delimiter=None)).keys


class ObjectCheckpointStorageConformance(CheckpointStorageConformance):
    """The checkpoint suite for storage built on the core's ``ObjectCheckpointStorage`` (every backend's).

    Declares :data:`OBJECT_CHECKPOINT_CAPABILITIES` and provides ``corrupt_checkpoint``; a
    subclass provides ``checkpoint_storage_factory`` (see :func:`checkpoint_storage_at`).
    """

    capabilities = OBJECT_CHECKPOINT_CAPABILITIES

    @pytest.fixture
    def corrupt_checkpoint(self) -> Callable[[ObjectCheckpointStorage, str], Awaitable[None]]:
        """The stored record cut short (:func:`corrupt_object_checkpoint`)."""
        return corrupt_object_checkpoint

    async def test_malformed_fields_are_corrupt_checkpoints(self, open_store: OpenStore) -> None:
        """A stored field of the wrong type or shape is a ``CorruptCheckpointError`` naming it, from every read.

        Every entry of :data:`MALFORMED_CHECKPOINT_FIELDS` is written into a saved checkpoint;
        ``load``, ``get_latest`` and ``list_checkpoints`` must each raise it (never skip the
        checkpoint, never return it); ``list_checkpoint_ids``, answered from the index, must raise
        it or list the id (never skip it); and ``delete`` must still remove it. A
        failure lists each shape and call: a bare ``ValueError``/``TypeError`` means a reader
        used the field before checking it (to order or index the checkpoint); "returned" means
        the runner would get a checkpoint it crashes on. Check every field in the one decode
        step all readers share.
        """
        store: ObjectCheckpointStorage = await open_store()
        failures: list[str] = []
        for label, (field, value) in MALFORMED_CHECKPOINT_FIELDS.items():
            workflow = unique_id("wf")
            checkpoint = make_checkpoint(workflow)
            checkpoint_id = checkpoint.checkpoint_id
            await store.save(checkpoint)
            await _rewrite_field(store, checkpoint_id, field, value)
            reads: dict[str, Awaitable[object]] = {
                "load": store.load(checkpoint_id),
                "get_latest": store.get_latest(workflow_name=workflow),
                "list_checkpoints": store.list_checkpoints(workflow_name=workflow),
            }
            for call, read in reads.items():
                if wrong := await misbehaviour(read, CorruptCheckpointError, checkpoint_id):
                    failures.append(f"{label}: {call} {wrong}")
            with contextlib.suppress(CorruptCheckpointError):
                if (ids := await store.list_checkpoint_ids(workflow_name=workflow)) != [checkpoint_id]:
                    failures.append(f"{label}: list_checkpoint_ids skipped it: returned {ids}")
            try:
                deleted = await store.delete(checkpoint_id)
                listed = await store.list_checkpoint_ids(workflow_name=workflow)
            except Exception as err:
                failures.append(f"{label}: delete, then a listing, raised {type(err).__name__}: {err}")
            else:
                if not deleted or listed:
                    failures.append(f"{label}: delete returned {deleted}, then the listing held {listed}")
        assert not failures, "\n".join(failures)

    async def test_killed_save_leaves_nothing_after_expiry_and_purge(self, open_store: OpenStore) -> None:
        """A save with a ttl killed at any write leaves nothing once it expired and ``purge_expired`` ran.

        The save's process dies just before its 1st, 2nd, ... write (until a save completes);
        a fresh storage never lists what it left, and after ``purge_expired`` nothing is left
        under the namespace's keys (the object driver's listing) and ``load`` finds nothing. A
        failure names the write the save died at and what was left: typically a record whose
        index entry was never written, which a purge walking only the index never finds.
        """
        for at in itertools.count(1):
            namespace = unique_id("ns")
            store: ObjectCheckpointStorage = await open_store(namespace=namespace)
            driver = _Interrupting(store.driver, at=at, hook=_kill)
            # Saved an hour ago by its clock: expired by the time the fresh storage looks.
            killed_store = _beside(store, driver, ttl=60, clock=lambda: time.time() - 3600)
            workflow = unique_id("wf")
            checkpoint = make_checkpoint(workflow)
            with contextlib.suppress(_Killed):
                await killed_store.save(checkpoint)
            fresh: ObjectCheckpointStorage = await open_store(namespace=namespace)
            assert await fresh.list_checkpoint_ids(workflow_name=workflow) == [], f"killed before write {at}: listed"
            assert await fresh.get_latest(workflow_name=workflow) is None, f"killed before write {at}: latest"
            left = await _stored_keys(fresh)
            purged = await fresh.purge_expired()
            after = await _stored_keys(fresh)
            assert after == [], f"killed before write {at}: purge_expired left {after} (stored before it: {left})"
            assert purged == (1 if left else 0), f"killed before write {at}: purge_expired returned {purged}"
            with pytest.raises(WorkflowCheckpointException):
                await fresh.load(checkpoint.checkpoint_id)
            if not driver.fired:
                return

    async def test_resave_killed_between_writes_keeps_the_checkpoint_listed(self, open_store: OpenStore) -> None:
        """A re-save of a listed checkpoint under a new timestamp, killed at any write, leaves it listed and loadable.

        The re-save's process dies just before its 1st, 2nd, ... write; a fresh storage then
        lists the checkpoint exactly once, and ``load``, ``get_latest`` and the listing agree on
        one version of it (the old or the new), with no other object left once read. A failure
        names the write: the listing lost it when the new record was written before the new
        index entry (the old entry then looks stale and is dropped).
        """
        for at in itertools.count(1):
            namespace = unique_id("ns")
            store: ObjectCheckpointStorage = await open_store(namespace=namespace)
            workflow = unique_id("wf")
            first = make_checkpoint(workflow, at=1, state={"version": 1})
            await store.save(first)
            driver = _Interrupting(store.driver, at=at, hook=_kill)
            second = make_checkpoint(workflow, checkpoint_id=first.checkpoint_id, at=2, state={"version": 2})
            with contextlib.suppress(_Killed):
                await _beside(store, driver).save(second)
            fresh: ObjectCheckpointStorage = await open_store(namespace=namespace)
            loaded = await _one_version(fresh, workflow, first.checkpoint_id, f"killed before write {at}")
            if not driver.fired:
                assert loaded.state == {"version": 2}
                return

    async def test_saves_of_one_id_racing_leave_one_version_listed(self, open_store: OpenStore) -> None:
        """Two stores saving one id under different timestamps, racing at any write: one version, listed once.

        Another store saves the id (a later timestamp, another state) just before this store's
        1st, 2nd, ... write of its own save of that id, which it has never seen. Then a fresh
        storage lists the id exactly once, and ``load``, ``get_latest`` and the listing agree
        on one version, with one record and one index entry left once read. A failure names
        the write: a save that took the id for new after the other store created it.
        """
        for at in itertools.count(1):
            namespace = unique_id("ns")
            store: ObjectCheckpointStorage = await open_store(namespace=namespace)
            other: ObjectCheckpointStorage = await open_store(namespace=namespace)
            workflow = unique_id("wf")
            mine = make_checkpoint(workflow, at=1, state={"version": 1})
            theirs = make_checkpoint(workflow, checkpoint_id=mine.checkpoint_id, at=2, state={"version": 2})

            async def race(theirs: WorkflowCheckpoint = theirs, other: ObjectCheckpointStorage = other) -> None:
                await other.save(theirs)

            driver = _Interrupting(store.driver, at=at, hook=race)
            await _beside(store, driver).save(mine)
            fresh: ObjectCheckpointStorage = await open_store(namespace=namespace)
            assert await fresh.list_checkpoint_ids(workflow_name=workflow) == [mine.checkpoint_id], (
                f"raced before write {at}: ids listed {await fresh.list_checkpoint_ids(workflow_name=workflow)}"
            )
            await _one_version(fresh, workflow, mine.checkpoint_id, f"raced before write {at}")
            if not driver.fired:
                return

    async def test_trim_racing_a_resave_keeps_the_resaved_checkpoint(self, open_store: OpenStore) -> None:
        """A ``keep_last`` trim racing a re-save of the checkpoint it removes: it ends listed and loadable, or gone.

        Another store re-saves the oldest checkpoint (same id and timestamp, new state) just
        before the trimming save's 1st, 2nd, ... write. Whoever wins, the checkpoint is listed
        exactly when it loads, and when it loads it is the re-saved one. A failure names the
        write: the trim deleted the index entry without a condition after the re-save rewrote
        it, leaving the re-saved record loadable but never listed (nor trimmed, nor purged).
        """
        for at in itertools.count(1):
            namespace = unique_id("ns")
            store: ObjectCheckpointStorage = await open_store(namespace=namespace)
            workflow = unique_id("wf")
            oldest = make_checkpoint(workflow, at=0, state={"version": 1})
            await store.save(oldest)
            again = make_checkpoint(workflow, checkpoint_id=oldest.checkpoint_id, at=0, state={"version": 2})

            async def resave(again: WorkflowCheckpoint = again, store: ObjectCheckpointStorage = store) -> None:
                await store.save(again)

            driver = _Interrupting(store.driver, at=at, hook=resave)
            newest = make_checkpoint(workflow, at=1)
            await _beside(store, driver, keep_last=1).save(newest)
            fresh: ObjectCheckpointStorage = await open_store(namespace=namespace)
            ids = await fresh.list_checkpoint_ids(workflow_name=workflow)
            try:
                loaded: WorkflowCheckpoint | None = await fresh.load(oldest.checkpoint_id)
            except WorkflowCheckpointException:
                loaded = None
            listed = oldest.checkpoint_id in ids
            assert newest.checkpoint_id in ids, f"re-saved before write {at}: the newest is not listed: {ids}"
            assert listed == (loaded is not None), (
                f"re-saved before write {at}: the checkpoint is {'listed' if listed else 'not listed'} "
                f"but {'loads' if loaded is not None else 'does not load'}"
            )
            assert loaded is None or loaded.state == {"version": 2}, f"re-saved before write {at}: {loaded}"
            if not driver.fired:
                return
