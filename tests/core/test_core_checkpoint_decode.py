"""A stored checkpoint decodes exactly as the framework's own decoding would, on every read path."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agent_framework import WorkflowCheckpoint
from agent_framework._workflows._checkpoint_encoding import (  # the framework's own encoding
    decode_checkpoint_value,
    encode_checkpoint_value,
)
from agent_framework.exceptions import WorkflowCheckpointException

from agent_stores.core.checkpoints import (
    CHECKPOINT_RECORD_FORMAT,
    CorruptCheckpointError,
    ObjectCheckpointStorage,
    decode_record,
    encode_record,
)
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.testing.checkpoints import make_checkpoint


def _nested(depth: int) -> bytes:
    return b'{"a":' * depth + b"1" + b"}" * depth


_PICKLED_SET = json.dumps({"s": encode_checkpoint_value({"a"})}).encode()

#: Record states as raw JSON: what a save writes, and what only a crafted write could (a pickle
#: marker spelled with an escape, NaN, lone surrogates, nesting past the framework's recursion).
STATES: dict[str, bytes] = {
    "plain": b'{"step":1,"notes":["a",{"b":[1,2.5,null,true]}],"text":"caf\xc3\xa9"}',
    "a pickled set": _PICKLED_SET,
    "a pickle marker spelled with an escape": _PICKLED_SET.replace(b'"__pickled__"', b'"\\u005f_pickled__"'),
    "a pickle marker spelled with an upper-case escape": _PICKLED_SET.replace(b'"__pickled__"', b'"__pick\\u006Ced__"'),
    "a pickle marker and its type spelled with escapes": _PICKLED_SET.replace(
        b'"__pickled__"', b'"__pickled_\\u005f"'
    ).replace(b'"__type__"', b'"\\u005f_type__"'),
    "backslash escapes but no unicode escape": b'{"x":"a\\nb\\"c\\\\u0041","y":"\\/"}',
    "unicode escapes of non-ASCII characters only": b'{"x":"\\u2028\\ud83d\\ude00","caf\\u00e9":1}',
    "more brackets than the plain path takes, shallow": b'{"x":[' + b",".join([b'{"a":[1]}'] * 300) + b"]}",
    "a marker-like key without its type": b'{"__pickled__":"x"}',
    "NaN and infinities": b'{"x":NaN,"y":[Infinity,-Infinity]}',
    "a lone surrogate": b'{"x":"\\ud800"}',
    "an integer of 400 digits": b'{"x":' + b"9" * 400 + b"}",
    "a control character escaped": b'{"x":"a\\u0000b"}',
    "nested 300 deep": b'{"x":' + _nested(300) + b"}",
    "nested 700 deep": b'{"x":' + _nested(700) + b"}",
}


def _record(state: bytes) -> bytes:
    body = {
        "workflow_name": "wf",
        "graph_signature_hash": "g",
        "checkpoint_id": "cp",
        "previous_checkpoint_id": None,
        "timestamp": "2026-01-01T00:00:00+00:00",
        "messages": {},
        "state": "@STATE@",
        "pending_request_info_events": {},
        "iteration_count": 0,
        "metadata": {},
        "version": "1.0",
    }
    envelope = {"format": CHECKPOINT_RECORD_FORMAT, "expires_at": None, "checkpoint": body}
    return json.dumps(envelope).encode().replace(b'"@STATE@"', state)


def _framework(data: bytes, allowed: frozenset[str]) -> WorkflowCheckpoint | type[Exception]:
    """What the framework's own decoding makes of the record's checkpoint value (or the error class)."""
    try:
        value: Any = decode_checkpoint_value(json.loads(data)["checkpoint"], allowed_types=allowed)
    except RecursionError:
        return CorruptCheckpointError  # our name for a value nested too deeply to decode
    except WorkflowCheckpointException:
        return WorkflowCheckpointException
    return WorkflowCheckpoint(**value)


@pytest.mark.parametrize("allowed", [frozenset[str](), frozenset({"builtins:set"})], ids=["no types", "set allowed"])
@pytest.mark.parametrize("label", list(STATES))
def test_a_record_decodes_as_the_framework_decodes_it(label: str, allowed: frozenset[str]) -> None:
    data = _record(STATES[label])
    expected = _framework(data, allowed)
    if isinstance(expected, type):
        with pytest.raises(expected):
            decode_record(data, allowed_types=allowed, where="cp")
        return
    checkpoint, expires_at = decode_record(data, allowed_types=allowed, where="cp")
    assert expires_at is None
    assert repr(checkpoint.state) == repr(expected.state)  # repr: NaN is not equal to itself
    assert checkpoint.to_dict().keys() == expected.to_dict().keys()
    assert type(checkpoint.state.get("s")) is type(expected.state.get("s"))  # unpickled, or left a mapping


class Unlisted:
    """A type no allow-list of these tests names unless it is asked for."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Unlisted)

    __hash__ = object.__hash__


_UNLISTED = f"{Unlisted.__module__}:{Unlisted.__qualname__}"


def _deep(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = {"a": [value]}
    return value


#: Checkpoint states a save may be given: plain, pickled, disguised as pickled, deep.
SAVED_STATES: dict[str, dict[str, object]] = {
    "plain": {"step": 1, "notes": ["a", {"b": [1, 2.5, None, True]}], "text": "café"},
    "a set": {"s": {"a"}},
    "a tuple": {"t": (1, 2)},
    "a type outside the allow-list": {"u": [Unlisted()]},
    "a mapping with the pickle marker as a key": {"m": {"__pickled__": "x", "__type__": "builtins:int"}},
    "the pickle marker as a string": {"x": "__pickled__", "y": '{"__pickled__":"x"}'},
    "escapes": {"x": 'a\nb\u0041"', "\u00e9": "\x00"},
    "more brackets than the plain path takes, shallow": {"x": [{"a": [1]} for _ in range(300)]},
    "nested 200 deep": {"x": _deep(200)},
}


@pytest.mark.parametrize("allowed", [frozenset[str](), frozenset({_UNLISTED})], ids=["no types", "its type allowed"])
@pytest.mark.parametrize("label", list(SAVED_STATES))
def test_a_save_refuses_exactly_what_the_framework_check_refuses(label: str, allowed: frozenset[str]) -> None:
    """``encode_record`` refuses a checkpoint exactly when decoding its encoded value under the allow-list fails."""
    checkpoint = make_checkpoint("wf", checkpoint_id="cp", state=SAVED_STATES[label])
    try:
        decode_checkpoint_value(encode_checkpoint_value(checkpoint.to_dict()), allowed_types=allowed)
    except WorkflowCheckpointException:
        with pytest.raises(WorkflowCheckpointException):
            encode_record(checkpoint, allowed_types=allowed)
        return
    data = encode_record(checkpoint, allowed_types=allowed)
    assert decode_record(data, allowed_types=allowed, where="cp")[0].state == checkpoint.state


def test_a_record_a_save_writes_decodes_to_an_equal_independent_checkpoint() -> None:
    original = make_checkpoint("wf", checkpoint_id="cp", state={"list": [1, {"k": "v"}], "set": {1, 2}})
    data = encode_record(original, allowed_types=frozenset({"builtins:set"}))
    first, _ = decode_record(data, allowed_types=frozenset({"builtins:set"}), where="cp")
    second, _ = decode_record(data, allowed_types=frozenset({"builtins:set"}), where="cp")
    assert first.state == original.state == second.state
    first.state["list"][1]["k"] = "changed"
    assert second.state["list"][1]["k"] == "v"


@pytest.mark.asyncio
async def test_a_listing_of_many_batches_keeps_the_order_and_names_a_corrupt_record_in_a_later_batch() -> None:
    storage = ObjectCheckpointStorage(MemoryObjectDriver())
    saved = [await storage.save(make_checkpoint("wf", at=i)) for i in range(700)]
    assert [cp.checkpoint_id for cp in await storage.list_checkpoints(workflow_name="wf")] == saved
    assert await storage.list_checkpoint_ids(workflow_name="wf") == saved
    victim = saved[100]  # newest first, in the third batch of 256 the listing reads
    key = storage.record_key(victim)
    stored = await storage.driver.get(key)
    assert stored is not None
    await storage.driver.put(key, stored.data[:40])
    with pytest.raises(CorruptCheckpointError, match=victim):
        await storage.list_checkpoints(workflow_name="wf")
    assert await storage.list_checkpoint_ids(workflow_name="wf") == saved  # the index still names it


class _BeforeIndexListing(MemoryObjectDriver):
    """The in-process object driver; ``hook`` runs once when a workflow's index is about to be listed."""

    hook: Any = None

    async def list(self, prefix: str, **options: Any) -> Any:
        if "/workflows/" in prefix and self.hook is not None:
            hook, self.hook = self.hook, None
            await hook()
        return await super().list(prefix, **options)


@pytest.mark.asyncio
async def test_a_delete_finished_before_the_index_is_read_is_never_listed() -> None:
    """The markers of stopped moves are listed after the index, never beside it.

    Deleting an unreadable record leaves its index entry and writes a marker first; a listing
    that read the markers before that delete and the index after it would name a deleted id.
    """
    driver = _BeforeIndexListing()
    storage, other = ObjectCheckpointStorage(driver), ObjectCheckpointStorage(driver)
    kept = await storage.save(make_checkpoint("wf", at=1))
    for listing in (storage.list_checkpoint_ids, storage.list_checkpoints):
        gone = await storage.save(make_checkpoint("wf", at=2))
        key = storage.record_key(gone)
        stored = await driver.get(key)
        assert stored is not None
        await driver.put(key, stored.data[:40])  # unreadable: its delete cannot tell which entry is its own

        async def delete_meanwhile(gone: str = gone) -> None:
            await asyncio.sleep(0)  # whatever else the listing has started runs first
            await other.delete(gone)

        driver.hook = delete_meanwhile
        found: list[Any] = await listing(workflow_name="wf")
        assert [c if isinstance(c, str) else c.checkpoint_id for c in found] == [kept]
