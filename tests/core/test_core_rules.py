"""Unit tests of the core's rules: codec, digests, de-duplication window, keys, errors, lifecycle."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

import pytest
from agent_framework import Content, FileHistoryProvider, Message
from agent_framework._sessions import filter_new_messages, get_message_identity
from agent_framework.exceptions import IntegrationException
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_stores.core import (
    CorruptRecordError,
    DecodeCache,
    KeySpace,
    LogHistoryProvider,
    LogRecord,
    LogTail,
    StoreConflictError,
    StoreError,
    StoreUnavailableError,
    decode_message,
    decode_messages,
    encode_message,
    encode_record,
    key_segment,
    message_digest,
)
from agent_stores.core.codec import count_already_stored
from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver
from agent_stores.testing.history import CORRUPT_RECORDS, sample_contents


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
@pytest.mark.parametrize(
    "extra", [{}, {"score": float("nan")}, {"inf": float("-inf"), "none": None}, {"text": "null"}], ids=repr
)
async def test_record_is_the_file_history_line(tmp_path: Path, extra: dict[str, object]) -> None:
    provider = FileHistoryProvider(tmp_path)
    message = _sample()
    message.additional_properties.update(extra)
    await provider.save_messages("s", [message])
    line = (tmp_path / "s.jsonl").read_bytes().rstrip(b"\n")
    assert encode_message(message) == line
    if not extra:
        assert decode_message(line).to_dict() == message.to_dict()


@pytest.mark.parametrize("record", CORRUPT_RECORDS.values(), ids=CORRUPT_RECORDS.keys())
def test_corrupt_records_raise_corrupt_record_error(record: bytes) -> None:
    with pytest.raises(CorruptRecordError) as caught:
        decode_message(record, where="record 7")
    assert "record 7" in str(caught.value)
    assert isinstance(caught.value, ValueError)


@pytest.mark.parametrize("cache", [None, DecodeCache()], ids=["without a cache", "through a cache"])
@pytest.mark.parametrize("record", CORRUPT_RECORDS.values(), ids=CORRUPT_RECORDS.keys())
def test_a_corrupt_record_in_a_batch_is_named_by_position(record: bytes, cache: DecodeCache | None) -> None:
    good = encode_message(_sample())
    with pytest.raises(CorruptRecordError, match=r"records of 's' #1 "):
        decode_messages([good, record, good], where="records of 's'", cache=cache)
    assert [m.to_dict() for m in decode_messages([good, good], cache=cache)] == [_sample().to_dict()] * 2


def test_a_message_nested_too_deeply_to_store_is_a_value_error() -> None:
    deep: object = 1
    for _ in range(5000):
        deep = {"a": deep}
    message = Message(role="user", contents=[Content.from_text("x", additional_properties={"deep": deep})])
    with pytest.raises(ValueError, match="nested too deeply"):
        encode_record(message)


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


_contents = st.one_of(
    st.sampled_from(sample_contents()),
    st.builds(Content.from_text, st.sampled_from(["a", "b", "A", "", "null", "é"])),
    st.builds(
        lambda name, value: Content.from_function_call(call_id="c", name=name, arguments={"v": value}),
        st.sampled_from(["f", "g"]),
        st.one_of(
            st.none(), st.just(float("nan")), st.integers(-2, 2), st.just(1.0), st.booleans(), st.text(max_size=2)
        ),
    ),
)
_any_messages = st.builds(
    lambda role, contents, ident: Message(role=role, contents=contents, message_id=ident),
    st.sampled_from(["user", "assistant", "tool", "system"]),
    st.lists(_contents, max_size=3),
    st.one_of(st.none(), st.sampled_from(["1", "2"])),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(_any_messages, min_size=2, max_size=4))
def test_digest_equality_is_framework_identity_equality(messages: list[Message]) -> None:
    """Our digest (derived from the encoded dict) calls two messages equal exactly when the framework does."""
    for first in messages:
        for second in messages:
            same = get_message_identity(first) == get_message_identity(second)
            assert (message_digest(first) == message_digest(second)) == same
        assert encode_record(first) == (message_digest(first), encode_message(first))


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
def test_key_segments_are_safe_and_bounded(value: str) -> None:
    segment = key_segment(value)
    assert "/" not in segment and "{" not in segment and segment == segment.strip()
    assert len(segment) <= 180


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
    version = await driver.append("k", [LogRecord("d", b"{}")], expected_version=None, session_id="s")
    with pytest.raises(StoreConflictError):
        await driver.append("k", [LogRecord("e", b"{}")], expected_version=None, session_id="s")
    await driver.delete("k")
    with pytest.raises(StoreConflictError):
        await driver.append("k", [LogRecord("e", b"{}")], expected_version=version, session_id="s")


def _turn(n: int) -> list[Message]:
    return [Message(role="user", contents=[f"q{n}"]), Message(role="assistant", contents=[f"a{n}"])]


class _CountingDriver(MemoryLogDriver):
    def __init__(self, clock: Callable[[], float] | None = None) -> None:
        super().__init__(clock=clock) if clock else super().__init__()
        self.tails = 0

    async def tail(self, key: str, count: int) -> LogTail:
        self.tails += 1
        return await super().tail(key, count)


@pytest.mark.asyncio
async def test_steady_saves_read_no_tail() -> None:
    """The provider remembers the end of the log it wrote: later saves need only the conditional append.

    The first save of a new session reads the (absent) log and the staging log beside it, where a
    stopped retention may have left the session's transcript (``core/retain.py``); no save after it
    reads either.
    """
    driver = _CountingDriver()
    history = LogHistoryProvider(driver)
    await history.save_messages("s", _turn(0))
    assert driver.tails == 2
    for n in range(1, 5):
        await history.save_messages("s", _turn(n))
    assert driver.tails == 2
    assert [m.text for m in await history.get_messages("s")] == [t for n in range(5) for t in (f"q{n}", f"a{n}")]


@pytest.mark.asyncio
async def test_remembered_tail_of_a_rewritten_log_is_not_trusted() -> None:
    """Another writer deletes and rewrites the session to the same length: the stale memory must conflict."""
    driver = _CountingDriver()
    mine, other = LogHistoryProvider(driver), LogHistoryProvider(driver)
    await mine.save_messages("s", _turn(1))
    await other.delete_session("s")
    await other.save_messages("s", _turn(2))
    # Replaying turn 1 is new again for the rewritten log: it must be stored, not skipped.
    await mine.save_messages("s", _turn(1))
    assert [m.text for m in await mine.get_messages("s")] == ["q2", "a2", "q1", "a1"]


@pytest.mark.asyncio
async def test_ttl_expires_and_slides() -> None:
    now = [1000.0]
    driver = MemoryLogDriver(clock=lambda: now[0])
    history = LogHistoryProvider(driver, ttl=timedelta(seconds=10))
    await history.save_messages("s", _turn(1))
    now[0] += 8
    await history.save_messages("s", _turn(2))
    now[0] += 8
    assert await history.count_messages("s") == 4
    now[0] += 3
    assert await history.get_messages("s") == []
    assert await history.list_sessions() == []
    # A new save starts a fresh session rather than resurrecting the expired one.
    await history.save_messages("s", _turn(1))
    assert [m.text for m in await history.get_messages("s")] == ["q1", "a1"]
    now[0] += 11
    assert await history.purge_expired() == 1


@pytest.mark.parametrize("bad", [0, -1, True, "5", timedelta(0)])
def test_ttl_validated(bad: object) -> None:
    with pytest.raises(ValueError):
        LogHistoryProvider(MemoryLogDriver(), ttl=bad)  # type: ignore[arg-type]


@pytest.mark.asyncio
async def test_export_import_and_paged_listing() -> None:
    source = LogHistoryProvider(MemoryLogDriver(), source_id="h")
    ids = [f"s{n:02}" for n in range(7)] + ["X" * 500, ""]
    for session_id in ids:
        await source.save_messages(session_id, _turn(1))
    listed = [s async for s in source.iter_sessions(page_size=3)]
    assert sorted(listed) == sorted(ids)
    target = LogHistoryProvider(MemoryLogDriver(), source_id="h")
    for session_id in listed:
        await target.import_messages(session_id, await source.export_messages(session_id))
    await target.import_messages("s00", _turn(1))  # verbatim: no de-duplication on import
    assert await target.count_messages("s00") == 4
    assert await target.count_messages("X" * 500) == 2


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
