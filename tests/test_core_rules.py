"""Unit tests of the core's rules: codec, digests, de-duplication window, keys, errors, lifecycle."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from agent_framework import Content, FileHistoryProvider, Message
from agent_framework._sessions import filter_new_messages
from agent_framework.exceptions import IntegrationException
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_stores.core import (
    CorruptRecordError,
    KeySpace,
    LogHistoryProvider,
    StoreConflictError,
    StoreError,
    StoreUnavailableError,
    decode_message,
    encode_message,
    key_segment,
    message_digest,
)
from agent_stores.core.codec import count_already_stored
from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver


def _sample() -> Message:
    return Message(
        role="assistant",
        contents=[
            Content.from_text("ünï\r\ncode"),
            Content.from_function_call(call_id="c1", name="f", arguments={"x": 1}),
        ],
        message_id="m-1",
        author_name="bot",
        additional_properties={"k": [1, {"n": None}]},
    )


@pytest.mark.asyncio
async def test_record_is_the_file_history_line(tmp_path: Path) -> None:
    provider = FileHistoryProvider(tmp_path)
    message = _sample()
    await provider.save_messages("s", [message])
    line = (tmp_path / "s.jsonl").read_bytes().rstrip(b"\n")
    assert encode_message(message) == line
    assert decode_message(line).to_dict() == message.to_dict()


@pytest.mark.parametrize("record", [b"{not json", b"[1, 2]", b'"text"', b'{"role": 5, "contents": 7}'])
def test_corrupt_records_raise_corrupt_record_error(record: bytes) -> None:
    with pytest.raises(CorruptRecordError) as caught:
        decode_message(record, where="record 7")
    assert "record 7" in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_error_hierarchy() -> None:
    for error in (StoreUnavailableError, StoreConflictError, CorruptRecordError):
        assert issubclass(error, StoreError)
    assert issubclass(StoreError, IntegrationException)


def test_digest_follows_framework_identity() -> None:
    same_id = [
        Message(role="user", contents=["a"], message_id="x"),
        Message(role="assistant", contents=["b"], message_id="x"),
    ]
    assert message_digest(same_id[0]) == message_digest(same_id[1])
    assert message_digest(Message(role="user", contents=["a"])) != message_digest(
        Message(role="assistant", contents=["a"])
    )
    assert message_digest(Message(role="user", contents=["a"])) == message_digest(Message(role="user", contents=["a"]))
    assert message_digest(Message(role="user", contents=["a"])) != message_digest(Message(role="user", contents=["A"]))


# Messages drawn from a small alphabet so that equal identities (and so overlaps and replays) are common.
_messages = st.builds(
    lambda role, text, ident: Message(role=role, contents=[text], message_id=ident),
    st.sampled_from(["user", "assistant"]),
    st.sampled_from(["a", "b"]),
    st.one_of(st.none(), st.sampled_from(["1", "2", "3"])),
)


@settings(max_examples=400, deadline=None)
@given(existing=st.lists(_messages, max_size=8), incoming=st.lists(_messages, min_size=1, max_size=6))
def test_dedup_window_equals_whole_history(existing: list[Message], incoming: list[Message]) -> None:
    """Reading only the last len(incoming) digests decides exactly as filter_new_messages on everything."""
    expected = len(incoming) - len(filter_new_messages(existing, incoming))
    tail = [message_digest(m) for m in existing[max(0, len(existing) - len(incoming)) :]]
    assert count_already_stored(tail, [message_digest(m) for m in incoming]) == expected


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.text(max_size=12), st.text(max_size=12), st.one_of(st.none(), st.text(max_size=12))),
        min_size=2,
        max_size=6,
        unique=True,
    )
)
def test_history_keys_are_injective(triples: list[tuple[str, str, str | None]]) -> None:
    keys = {KeySpace(ns).history(src or "s", sid) for ns, src, sid in triples}
    distinct = {(ns, src or "s", sid or "") for ns, src, sid in triples}
    assert len(keys) == len(distinct)


@pytest.mark.parametrize("value", ["A", "a", "a/b", "..", "*", "{x}", ":", " a", "é", "~x", "x" * 10_000, ""])
def test_key_segments_are_safe_and_reversible(value: str) -> None:
    segment = key_segment(value)
    assert "/" not in segment and "{" not in segment and segment == segment.strip()
    assert len(segment) <= 200
    decoded = KeySpace.decode(segment)
    assert decoded == value or (decoded is None and len(value) > 100)


def test_key_segments_never_differ_only_in_case() -> None:
    values = ["A", "a", "Ab", "aB", "ab", "AB"]
    assert len({key_segment(v).lower() for v in values}) == len(values)


@pytest.mark.asyncio
async def test_memory_object_listing() -> None:
    driver = MemoryObjectDriver()
    for key in ["p/a", "p/b/c", "p/b/d", "p/e/", "q/x", "p"]:
        await driver.put(key, b"")
    listing = await driver.list("p/")
    assert listing.keys == ["p/a"] and listing.prefixes == ["p/b/", "p/e/"]
    flat = await driver.list("p/", delimiter=None)
    assert flat.keys == ["p/a", "p/b/c", "p/b/d", "p/e/"] and flat.prefixes == []


@pytest.mark.asyncio
async def test_conditional_append_conflicts() -> None:
    driver = MemoryLogDriver()
    history = LogHistoryProvider(driver)
    await history.save_messages("s", [Message(role="user", contents=["a"])])
    with pytest.raises(StoreConflictError):
        await driver.append("k", [], expected_length=3)


class _Closable:
    def __init__(self) -> None:
        self.closed = 0

    async def aclose(self) -> None:
        self.closed += 1


@pytest.mark.asyncio
async def test_borrowed_driver_is_never_closed() -> None:
    driver = _Closable()
    async with LogHistoryProvider(driver) as history:  # type: ignore[arg-type]
        assert history.driver is driver
    assert driver.closed == 0


@pytest.mark.asyncio
async def test_owned_driver_closed_once_and_warns_when_leaked() -> None:
    driver = _Closable()
    history = LogHistoryProvider(driver, owns_driver=True)  # type: ignore[arg-type]
    await history.aclose()
    await history.aclose()
    assert driver.closed == 1
    leaked = LogHistoryProvider(_Closable(), owns_driver=True)  # type: ignore[arg-type]
    with pytest.warns(ResourceWarning):
        del leaked  # CPython finalizes at once when the last reference goes


@pytest.mark.parametrize("bad", [0, -1, True, 1.5, "3"])
def test_max_messages_validated(bad: object) -> None:
    with pytest.raises(ValueError):
        LogHistoryProvider(MemoryLogDriver(), max_messages=bad)  # type: ignore[arg-type]


def test_source_id_validated() -> None:
    with pytest.raises(ValueError):
        LogHistoryProvider(MemoryLogDriver(), source_id="")


def test_record_is_single_line_json() -> None:
    record = encode_message(_sample())
    assert b"\n" not in record and json.loads(record)["message_id"] == "m-1"
