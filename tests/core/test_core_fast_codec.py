"""The fast codec is exact: the framework's bytes and the framework's decoded messages, always.

Differential property tests over every Content type the framework defines, with and without
annotations, additional properties, raw representations, non-finite floats and any unicode;
plus a pin on the framework's shapes so an upgrade that changes them fails here, loudly.
"""

from __future__ import annotations

import gc
import inspect
import math
import typing
from importlib.metadata import version
from typing import Any, cast

import pytest
from agent_framework import Content, Message
from agent_framework import _types as framework_types  # pyright: ignore[reportPrivateUsage]
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from agent_stores.core import codec, fastcodec
from agent_stores.core._framework import json_dumps, json_loads

CONTENT_TYPES: tuple[str, ...] = typing.get_args(framework_types.ContentType)

# Recorded from agent-framework-core 1.23: the shapes the fast path reproduces.
EXPECTED_CONTENT_TYPES = (
    "text", "text_reasoning", "data", "uri", "error", "function_call", "function_result", "usage",
    "hosted_file", "hosted_vector_store", "code_interpreter_tool_call", "code_interpreter_tool_result",
    "image_generation_tool_call", "image_generation_tool_result", "mcp_server_tool_call",
    "mcp_server_tool_result", "search_tool_call", "search_tool_result", "shell_tool_call",
    "shell_tool_result", "shell_command_output", "computer_tool_call", "computer_tool_result",
    "function_approval_request", "function_approval_response", "oauth_consent_request",
)  # fmt: skip
EXPECTED_CONTENT_PARAMS = (
    "type", "text", "protected_data", "uri", "media_type", "message", "error_code", "error_details",
    "usage_details", "call_id", "name", "arguments", "exception", "informational_only", "result", "items",
    "file_id", "vector_store_id", "inputs", "outputs", "image_id", "commands", "timeout_ms",
    "max_output_length", "status", "actions", "screenshot", "pending_safety_checks",
    "acknowledged_safety_checks", "stdout", "stderr", "exit_code", "timed_out", "tool_name", "server_name",
    "output", "hosted", "id", "function_call", "user_input_request", "approved", "consent_link",
    "merge_mode", "annotations", "additional_properties", "raw_representation",
)  # fmt: skip
EXPECTED_MESSAGE_PARAMS = (
    "role", "contents", "author_name", "message_id", "additional_properties", "raw_representation",
)  # fmt: skip


def _params(func: Any) -> tuple[str, ...]:
    return tuple(inspect.signature(func).parameters)[1:]


def test_framework_shapes_are_the_ones_the_fast_codec_reproduces() -> None:
    installed = version("agent-framework-core")
    assert installed.startswith(fastcodec.FRAMEWORK_VERSIONS), (
        f"agent-framework-core {installed} is outside {fastcodec.FRAMEWORK_VERSIONS}: re-derive the fast codec"
    )
    assert CONTENT_TYPES == EXPECTED_CONTENT_TYPES
    assert _params(Content.__init__) == EXPECTED_CONTENT_PARAMS
    assert _params(Message.__init__) == EXPECTED_MESSAGE_PARAMS
    assert fastcodec.is_enabled()
    # The fast path's own templates agree with what the framework builds today.
    plain = Message("user", ["x"], author_name="a", message_id="m")
    assert fastcodec.fast_to_dict(plain) == plain.to_dict()
    assert list(fastcodec.fast_to_dict(plain) or {}) == list(plain.to_dict())


texts = st.text()
json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**53), 2**53), st.floats(allow_nan=True, allow_infinity=True), texts
)
json_values = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts, inner, max_size=3)),
    max_leaves=6,
)
props = st.one_of(st.just({}), st.dictionaries(st.text(min_size=1), json_values, max_size=3))
annotations = st.one_of(
    st.none(),
    st.lists(
        st.fixed_dictionaries({"type": st.just("citation")}, optional={"title": texts, "url": texts, "file_id": texts}),
        max_size=2,
    ),
)
raw = st.one_of(st.none(), json_values)
json_tuples = st.lists(json_leaf, max_size=3).map(tuple)

_STR_FIELDS = ("text", "uri", "media_type", "message", "error_code", "error_details", "call_id", "name",
               "file_id", "vector_store_id", "image_id", "status", "stdout", "stderr", "tool_name",
               "server_name", "id", "consent_link", "protected_data")  # fmt: skip


@st.composite
def any_content(draw: st.DrawFn, depth: int = 0) -> Content:
    content_type = draw(st.sampled_from(CONTENT_TYPES))
    if content_type == "text" and draw(st.booleans()):
        return Content("text", text=draw(texts))  # the plain shape
    fields: dict[str, Any] = {}
    for name in draw(st.lists(st.sampled_from(_STR_FIELDS), max_size=4, unique=True)):
        fields[name] = draw(texts)
    if draw(st.booleans()):
        fields["arguments"] = draw(st.one_of(texts, st.dictionaries(texts, json_values, max_size=3), json_tuples))
    if draw(st.booleans()):
        fields["result"] = draw(st.one_of(json_values, json_tuples))
    if draw(st.booleans()):
        fields["usage_details"] = {"input_token_count": draw(st.integers(0, 10**6))}
    if content_type == "function_call":
        fields["hosted"] = draw(st.booleans())
    if content_type in ("function_call", "computer_tool_call", "text"):
        fields["informational_only"] = draw(st.booleans())
    if content_type == "function_approval_response":
        fields["approved"] = draw(st.booleans())
    if content_type in ("function_approval_request", "function_approval_response"):
        fields["function_call"] = Content("function_call", call_id=draw(texts), name=draw(texts), arguments="{}")
    if draw(st.integers(0, 9)) == 0:
        fields["exception"] = draw(texts)  # serialised as the framework's redaction marker
    if draw(st.integers(0, 9)) == 0:
        fields["merge_mode"] = draw(st.sampled_from(["append", "replace"]))
    if draw(st.booleans()):
        fields["items"] = (
            [draw(any_content(depth + 1)) for _ in range(draw(st.integers(0, 2)))]
            if depth < 2 and draw(st.booleans())
            else [Content("text", text=draw(texts))]
        )
    try:
        return Content(
            content_type,  # pyright: ignore[reportArgumentType]
            annotations=draw(annotations),  # pyright: ignore[reportArgumentType]
            additional_properties=draw(props),
            raw_representation=draw(raw),
            **fields,
        )
    except (TypeError, ValueError):
        return Content("text", text=draw(texts))


@st.composite
def tool_round_trip(draw: st.DrawFn) -> list[Content]:
    """What agents store most after text: a function call (mapping or JSON arguments) and its result."""
    call_id = draw(texts)
    arguments = draw(st.one_of(st.none(), texts, st.dictionaries(texts, json_values, max_size=4)))
    result = draw(st.one_of(texts, json_values, st.lists(st.builds(Content.from_text, texts), max_size=2)))
    return [
        Content.from_function_call(
            call_id, draw(texts), arguments=arguments, id=draw(st.one_of(st.none(), texts)),
            informational_only=draw(st.booleans()), status=draw(st.one_of(st.none(), texts)),
        ),
        Content.from_function_result(call_id, result=result, id=draw(st.one_of(st.none(), texts))),
        Content("text_reasoning", text=draw(texts), protected_data=draw(st.one_of(st.none(), texts))),
        Content("usage", usage_details={"input_token_count": draw(st.integers(0, 10**6)), "output_token_count": 3}),
    ]  # fmt: skip


@st.composite
def any_message(draw: st.DrawFn) -> Message:
    shape = draw(st.sampled_from(["plain", "tools", "any"]))
    plain = shape == "plain"
    if plain:
        contents = [Content("text", text=t) for t in draw(st.lists(texts, max_size=4))]
    elif shape == "tools":
        contents = draw(tool_round_trip())
    else:
        contents = draw(st.lists(any_content(), max_size=4))
    return Message(
        draw(st.one_of(st.sampled_from(["user", "assistant", "system", "tool"]), texts)),
        contents,
        author_name=draw(st.one_of(st.none(), texts)),
        message_id=draw(st.one_of(st.none(), texts)),
        additional_properties=None if plain else draw(props),
        raw_representation=None if plain else draw(raw),
    )


def _same(a: Any, b: Any) -> bool:
    # Equality of decoded JSON where NaN equals NaN.
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)  # pyright: ignore[reportUnknownArgumentType,reportUnknownVariableType]
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))  # pyright: ignore[reportUnknownArgumentType,reportUnknownVariableType]
    return type(a) is type(b) and a == b


SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(any_message())
def test_encoding_is_the_framework_bytes(message: Message) -> None:
    framework_bytes = json_dumps(message.to_dict())
    assert codec.encode_message(message) == framework_bytes
    digest, record = codec.encode_record(message)
    assert record == framework_bytes
    assert digest == codec.message_digest(message)


@SETTINGS
@given(any_message())
def test_decoding_is_the_framework_message(message: Message) -> None:
    record = json_dumps(message.to_dict())
    ours = codec.decode_message(record)
    theirs = Message.from_dict(json_loads(record))
    assert type(ours) is type(theirs)
    assert _same(ours.to_dict(), theirs.to_dict())
    assert list(ours.__dict__) == list(theirs.__dict__)
    for mine, framework in zip(ours.contents, theirs.contents, strict=True):
        assert type(mine) is type(framework)
        assert list(mine.__dict__) == list(framework.__dict__)
    assert codec.encode_message(ours) == codec.encode_message(theirs)
    # The batch decoder a load uses takes the same paths, record by record.
    (batched,) = codec.decode_messages([record])
    assert list(batched.__dict__) == list(theirs.__dict__)
    assert codec.encode_message(batched) == codec.encode_message(theirs)


@SETTINGS
@given(st.lists(texts, max_size=4), st.one_of(st.none(), texts), st.one_of(st.none(), texts), texts)
def test_plain_text_messages_take_the_fast_path(
    parts: list[str], author_name: str | None, message_id: str | None, role: str
) -> None:
    message = Message(role, [Content("text", text=p) for p in parts], author_name=author_name, message_id=message_id)
    payload = fastcodec.fast_to_dict(message)
    assert payload is not None
    assert list(payload) == list(message.to_dict())
    assert payload == message.to_dict()
    decoded = fastcodec.fast_decode(json_loads(json_dumps(payload)))
    assert decoded is not None
    assert decoded.__dict__.keys() == Message.from_dict(payload).__dict__.keys()
    assert [c.__dict__ for c in decoded.contents] == [c.__dict__ for c in Message.from_dict(payload).contents]


@SETTINGS
@given(tool_round_trip(), st.one_of(st.none(), texts), st.booleans())
def test_tool_calls_and_results_take_the_fast_path(contents: list[Content], message_id: str | None, raw: bool) -> None:
    message = Message("assistant", contents, message_id=message_id, raw_representation=object() if raw else None)
    payload = fastcodec.fast_to_dict(message)
    assert payload is not None
    assert _same(payload, message.to_dict())
    assert json_dumps(payload) == json_dumps(message.to_dict())
    record = json_loads(json_dumps(payload))
    decoded = fastcodec.fast_decode(record)
    assert decoded is not None
    theirs = Message.from_dict(json_loads(json_dumps(payload)))
    assert _same(decoded.to_dict(), theirs.to_dict())
    assert [list(c.__dict__) for c in decoded.contents] == [list(c.__dict__) for c in theirs.contents]


@SETTINGS
@given(
    any_message(), st.dictionaries(st.sampled_from(["merge_mode", "hosted", "data", "outputs", "bogus"]), json_values)
)
def test_records_with_unusual_fields_decode_as_the_framework_does(message: Message, extra: dict[str, Any]) -> None:
    record = json_loads(json_dumps(message.to_dict()))
    for content in record["contents"]:
        content.update(extra)
    try:
        theirs: Message | None = Message.from_dict(json_loads(json_dumps(record)))
    except Exception:
        theirs = None
    ours = fastcodec.fast_decode(json_loads(json_dumps(record)))
    if ours is None:
        return  # the framework's path decides (and raises what it raises)
    assert theirs is not None
    assert _same(ours.to_dict(), theirs.to_dict())
    assert [list(c.__dict__) for c in ours.contents] == [list(c.__dict__) for c in theirs.contents]


def test_anything_else_takes_the_framework_path() -> None:
    failed = Message("tool", [Content.from_function_result("c", result="x", exception="boom")])
    with_object = Message("assistant", [Content.from_function_call("c", "f", arguments={"when": object()})])
    with_props = Message("user", ["x"], additional_properties={"k": "v"})
    merging = Message("assistant", [Content("text", text="x", merge_mode="append")])
    for message in (failed, with_object, with_props):
        assert fastcodec.fast_to_dict(message) is None
    for message in (with_props, merging):
        assert fastcodec.fast_decode(message.to_dict()) is None


def test_a_saved_message_is_not_given_an_attribute_dict() -> None:
    """Encoding reads a framework-built message as it is: no ``__dict__`` attached for its lifetime."""
    message = Message("user", ["what is the weather in Oslo?"], author_name="ada", message_id="m1")
    before = [type(part) for part in gc.get_referents(message)]
    assert len(before) == 7  # its six values, held in the object, and its type: no attribute dict
    record = codec.encode_message(message)
    assert [type(part) for part in gc.get_referents(message)] == before
    assert record == json_dumps(
        Message("user", ["what is the weather in Oslo?"], author_name="ada", message_id="m1").to_dict()
    )


def test_a_message_with_attributes_of_its_own_is_written_as_the_framework_writes_it() -> None:
    """An attribute the framework does not define is in ``to_dict()``: the fast path must not drop it."""
    message = Message("user", ["x"])
    message.note = "kept"  # pyright: ignore[reportAttributeAccessIssue]
    assert fastcodec.fast_to_dict(message) is None
    assert json_loads(codec.encode_message(message))["note"] == "kept"
    removed = Message("user", ["x"])
    del removed.author_name
    assert fastcodec.fast_to_dict(removed) is None
    materialised = Message("user", ["x"], message_id="m2")
    assert materialised.__dict__ and fastcodec.fast_to_dict(materialised) == materialised.to_dict()


def _mutable_parts(value: Any, found: dict[int, Any] | None = None) -> dict[int, Any]:
    """Every mutable object reachable from ``value`` (messages, contents, lists, dicts), by id."""
    found = {} if found is None else found
    if isinstance(value, Message | Content):
        found[id(value)] = value
        for attribute in value.__dict__.values():
            _mutable_parts(attribute, found)
    elif isinstance(value, list | dict):
        found[id(value)] = value
        items = value.values() if isinstance(value, dict) else value
        for item in typing.cast(Any, items):
            _mutable_parts(item, found)
    elif isinstance(value, tuple):
        for item in typing.cast(tuple[Any, ...], value):
            _mutable_parts(item, found)
    return found


def _is_framework_message(ours: Message, theirs: Message) -> None:
    assert list(ours.__dict__) == list(theirs.__dict__)
    assert _same(ours.to_dict(), theirs.to_dict())
    for mine, framework in zip(ours.contents, theirs.contents, strict=True):
        assert type(mine) is type(framework)
        assert list(mine.__dict__) == list(framework.__dict__)
    assert codec.encode_message(ours) == codec.encode_message(theirs)


@SETTINGS
@given(any_message())
def test_a_record_decoded_again_is_the_framework_message_and_shares_nothing_mutable(message: Message) -> None:
    record = json_dumps(message.to_dict())
    theirs = Message.from_dict(json_loads(record))
    cache = codec.DecodeCache()
    (first,) = codec.decode_messages([record], cache=cache)
    (again,) = codec.decode_messages([bytes(bytearray(record))], cache=cache)  # equal bytes, another object
    _is_framework_message(first, theirs)
    _is_framework_message(again, theirs)
    shared = _mutable_parts(first).keys() & _mutable_parts(again).keys()
    assert not shared, f"two decodings share {[type(_mutable_parts(first)[i]).__name__ for i in shared]}"
    # What a caller does to one decoded message never reaches the next decoding.
    for content in first.contents:
        content.additional_properties["changed"] = True
        content.text = "changed"
    first.contents.append(Content("text", text="appended"))
    (third,) = codec.decode_messages([record], cache=cache)
    _is_framework_message(third, theirs)


def test_a_record_decoded_again_is_rebuilt_without_parsing() -> None:
    cache = codec.DecodeCache()
    record = codec.encode_message(Message("user", ["what is the weather in Oslo?"]))
    codec.decode_messages([record], cache=cache)
    assert record in cache.entries
    with_arguments = codec.encode_message(
        Message("assistant", [Content.from_function_call("c1", "forecast", arguments={"city": "Oslo"})])
    )
    codec.decode_messages([with_arguments], cache=cache)
    assert with_arguments in cache.entries


@pytest.mark.parametrize("cache", [None, codec.DecodeCache(0)], ids=["no cache", "a cache of 0 bytes"])
def test_without_a_cache_every_record_is_parsed(monkeypatch: Any, cache: codec.DecodeCache | None) -> None:
    parsed: list[int] = []
    real_decode = codec.fast_decode

    def counting_decode(payload: dict[str, Any]) -> Message | None:
        parsed.append(1)
        return real_decode(payload)

    monkeypatch.setattr(codec, "fast_decode", counting_decode)
    record = codec.encode_message(Message("user", ["what is the weather in Oslo?"]))
    for _ in range(3):
        assert [m.text for m in codec.decode_messages([record], cache=cache)] == ["what is the weather in Oslo?"]
    assert len(parsed) == 3
    assert cache is None or len(cache.entries) == 0


def test_caches_are_separate_objects() -> None:
    """What one owner's cache keeps is not another's: no process-wide state."""
    ours, theirs = codec.DecodeCache(), codec.DecodeCache()
    record = codec.encode_message(Message("user", ["kept by one cache only"]))
    codec.decode_messages([record], cache=ours)
    assert record in ours.entries and record not in theirs.entries


def test_a_remembered_record_is_one_object_for_the_garbage_collector() -> None:
    """Thousands of remembered messages must not make every full collection walk thousands of objects each."""
    cache = codec.DecodeCache()
    records = [
        codec.encode_message(Message("user", ["what is the weather in Oslo?"])),
        codec.encode_message(
            Message(
                "assistant", [Content.from_function_call("c1", "forecast", arguments={"city": "Oslo", "days": [1, 2]})]
            )
        ),
    ]
    codec.decode_messages(records, cache=cache)
    kept = [cache.entries.peek(r) for r in records]
    assert len(cache.entries) == len(records)
    gc.collect()
    inside = [part for entry in kept for part in gc.get_referents(entry)]
    assert inside, "an entry holds what rebuilds its message"
    assert [type(part).__name__ for part in inside if gc.is_tracked(part)] == []
    # and after one young collection no part of an entry is tracked at all: the collector skips them
    fresh = [codec.encode_message(Message("user", [f"asked at step {n}"])) for n in range(3)] + [
        codec.encode_message(
            Message(
                "assistant", [Content.from_function_call(f"c{n}", "forecast", arguments={"city": "Oslo", "days": n})]
            )
        )
        for n in range(3)
    ]
    codec.decode_messages(fresh, cache=cache)
    gc.collect(0)
    assert [gc.is_tracked(cache.entries.peek(r)) for r in fresh] == [False] * len(fresh)
    # and what they rebuild is still the framework's message
    assert [m.to_dict() for m in codec.decode_messages(records, cache=cache)] == [
        Message.from_dict(json_loads(r)).to_dict() for r in records
    ]


def test_recent_records_are_bounded_and_safe_across_threads() -> None:
    import concurrent.futures

    entry_cost = codec._ENTRY_COST  # pyright: ignore[reportPrivateUsage]
    cache = codec.DecodeCache(64 * entry_cost + 64 * 20)
    records = [codec.encode_message(Message("user", [f"question {n}"])) for n in range(500)]
    expected = [f"question {n}" for n in range(500)]

    def decode_all(offset: int) -> list[str]:
        rotated = records[offset:] + records[:offset]
        texts = [m.text for m in codec.decode_messages(rotated, cache=cache)]
        return texts[-offset:] + texts[:-offset] if offset else texts

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(pool.map(decode_all, [0, 7, 130, 499] * 10))
    assert all(result == expected for result in results)
    # a few records past the budget at most, from threads racing on the same eviction
    assert len(cache.entries) <= 64 + 8


def _windows(count: int, label: str) -> list[list[bytes]]:
    records = [codec.encode_message(Message("user", [f"{label} {n}"])) for n in range(count * 40)]
    return [records[i : i + 40] for i in range(0, len(records), 40)]


def _small_margin(monkeypatch: Any) -> list[int]:
    """Throttle admission after 256 more misses than hits (over 1,024 lookups); return the copies made."""
    monkeypatch.setattr(codec, "_THRASH_MARGIN", 256)
    monkeypatch.setattr(codec, "_LOOKUP_WINDOW", 1024)
    copies: list[int] = []
    real_prototype = codec.prototype

    def counting_prototype(message: Message) -> Any:
        copies.append(1)
        return real_prototype(message)

    monkeypatch.setattr(codec, "prototype", counting_prototype)
    return copies


def test_records_read_once_are_mostly_not_kept(monkeypatch: Any) -> None:
    """An export reads each record once: once the cache is full, keeping each costs a copy never used."""
    cache = codec.DecodeCache(max_bytes=256 << 10)  # full after about 600 of the 10,000 records
    copies = _small_margin(monkeypatch)
    for number, window in enumerate(_windows(250, "exported")):
        texts = [m.text for m in codec.decode_messages(window, cache=cache)]
        assert texts == [f"exported {n}" for n in range(number * 40, number * 40 + 40)]
    assert len(copies) < 10_000 // 4, f"{len(copies)} of 10,000 records read once were copied to be kept"


def test_a_working_set_that_fits_is_rebuilt_again_after_records_read_once(monkeypatch: Any) -> None:
    """After a stream of misses, a window loaded before every model call is soon rebuilt without parsing."""
    cache = codec.DecodeCache()
    _small_margin(monkeypatch)
    for window in _windows(250, "exported"):
        codec.decode_messages(window, cache=cache)
    (window,) = _windows(1, "agent")
    parsed: list[int] = []
    real_decode = codec.fast_decode

    def counting_decode(payload: dict[str, Any]) -> Message | None:
        parsed.append(1)
        return real_decode(payload)

    monkeypatch.setattr(codec, "fast_decode", counting_decode)
    loads = 0
    while loads < 60:
        loads += 1
        parsed.clear()
        assert [m.text for m in codec.decode_messages(window, cache=cache)] == [f"agent {n}" for n in range(40)]
        if not parsed:
            break
    assert not parsed, "the window was still parsed after 60 loads"
    assert loads > 1, "the first load of the window should have been parsed"
    # Once most lookups hit again, every new record is kept at once.
    for _ in range(200):
        codec.decode_messages(window, cache=cache)
    new = codec.encode_message(Message("user", ["a new turn"]))
    codec.decode_messages([*window, new], cache=cache)
    assert new in cache.entries


def test_while_the_cache_has_room_every_missed_record_is_kept(monkeypatch: Any) -> None:
    """Many agents' windows, each read again a step later: with room for them, none is left out."""
    cache = codec.DecodeCache(max_bytes=64 << 20)
    copies = _small_margin(monkeypatch)
    windows = _windows(250, "agents")
    for window in windows:  # 10,000 misses in a row: far more misses than hits
        codec.decode_messages(window, cache=cache)
    assert len(copies) == 10_000
    assert all(record in cache.entries for window in windows for record in window)
    assert cache.entries.cost <= 64 << 20


def test_a_full_cache_keeps_sampling_misses(monkeypatch: Any) -> None:
    """Past its budget, admission is throttled again: a stream of new records mostly passes by."""
    cache = codec.DecodeCache(max_bytes=256 << 10)
    copies = _small_margin(monkeypatch)
    for window in _windows(250, "fill"):
        codec.decode_messages(window, cache=cache)
    filled = len(copies)
    copies.clear()
    for window in _windows(250, "more"):
        codec.decode_messages(window, cache=cache)
    assert filled < 10_000 // 4
    assert len(copies) <= 10_000 // 16 + 1


@pytest.fixture
def framework_of_another_shape(monkeypatch: pytest.MonkeyPatch) -> Any:
    """A framework whose ``Message.to_dict`` writes its keys in another order, as a new release might."""
    real = Message.to_dict

    def reordered(self: Message, **kwargs: Any) -> dict[str, Any]:
        return dict(reversed(list(real(self, **kwargs).items())))

    monkeypatch.setattr(Message, "to_dict", reordered)
    yield
    monkeypatch.undo()
    assert fastcodec.check_framework(), "the fast path did not come back with the framework's own shapes"


@pytest.mark.usefixtures("framework_of_another_shape")
def test_a_framework_of_another_shape_gets_the_framework_s_own_path() -> None:
    """The fast path checks the installed framework and steps aside: records stay the framework's, byte for byte."""
    assert not fastcodec.check_framework()
    message = Message("user", ["what is the weather in Oslo?"], message_id="m1")
    assert fastcodec.fast_to_dict(message) is None
    record = codec.encode_message(message)
    assert record == json_dumps(message.to_dict())  # the framework's own record, in its (new) key order
    assert fastcodec.fast_decode(json_loads(record)) is None
    (decoded,) = codec.decode_messages([record], cache=codec.DecodeCache())
    assert decoded.to_dict() == Message.from_dict(json_loads(record)).to_dict()


def _cache_records(kind: str, count: int) -> list[bytes]:
    def message(i: int) -> Message:
        if kind == "chat":
            return Message("user", [f"what is the weather in Oslo today, number {i}?"])
        if kind == "tool":
            return Message("assistant", [Content.from_function_call(f"c{i}", "write", arguments={"text": "x" * 2000})])
        if kind == "result":
            return Message("tool", [Content.from_function_result(f"c{i}", result={"temperature": 3.5, "n": i})])
        return Message("user", [f"p{j}" for j in range(1000)] + [str(i)])  # many tiny parts, under 64 KiB

    return [codec.encode_message(message(i)) for i in range(count)]


@pytest.mark.parametrize(("kind", "count"), [("chat", 3000), ("tool", 600), ("result", 2000), ("many parts", 12)])
def test_the_decode_cache_stays_within_its_budget(kind: str, count: int) -> None:
    """What a full cache really holds (tracemalloc) is at most its budget, whatever the messages' shape."""
    import tracemalloc

    budget = 2 << 20
    records = _cache_records(kind, count)
    cache = codec.DecodeCache(budget)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for start in range(0, len(records), 40):
            codec.decode_messages(records[start : start + 40], cache=cache)
        gc.collect()
        held = sum(stat.size_diff for stat in tracemalloc.take_snapshot().compare_to(before, "filename"))
    finally:
        tracemalloc.stop()
    assert len(cache.entries) > 1, "the test should fill the cache"
    assert cache.entries.cost <= budget
    assert held <= budget, f"{kind}: the cache holds {held:,} bytes for a budget of {budget:,}"


# -- messages shared across loads of one log --------------------------------------------------


def _records_of(messages: list[Message]) -> list[bytes]:
    return [codec.encode_message(m) for m in messages]


def test_a_log_s_unchanged_messages_are_returned_again_and_nowhere_else() -> None:
    cache = codec.DecodeCache()
    records = _records_of(
        [
            Message("user", ["yes"]),
            Message("user", ["yes"]),
            Message("assistant", [Content.from_function_call("c1", "forecast", arguments={"city": "Oslo"})]),
        ]
    )
    first = codec.decode_messages(records, cache=cache, log="a")
    again = codec.decode_messages([bytes(bytearray(r)) for r in records], cache=cache, log="a")
    assert [m is n for m, n in zip(first, again, strict=True)] == [True, True, True]
    assert first[0] is not first[1], "equal records in one load are two objects"
    other = codec.decode_messages(records, cache=cache, log="b")
    assert not {id(m) for m in other} & {id(m) for m in first}, "two logs share a message"
    unshared = codec.decode_messages(records, cache=cache)
    assert not {id(m) for m in unshared} & {id(m) for m in first}, "a load without a log got a shared message"
    assert [m.to_dict() for m in again] == [Message.from_dict(json_loads(r)).to_dict() for r in records]


def _changes(message: Message) -> list[tuple[str, Any]]:
    """Every way of changing ``message`` one step at a time: (what, a function that changes a fresh copy)."""
    changes: list[tuple[str, Any]] = [
        ("role", lambda m: setattr(m, "role", "system")),
        ("author_name", lambda m: setattr(m, "author_name", "someone")),
        ("message_id", lambda m: setattr(m, "message_id", "changed")),
        ("message property", lambda m: m.additional_properties.update(_excluded=True)),
        ("raw_representation", lambda m: setattr(m, "raw_representation", {"raw": 1})),
        ("an attribute of its own", lambda m: setattr(m, "extra", 1)),
        ("content added", lambda m: m.contents.append(Content.from_text("more"))),
        ("contents replaced", lambda m: setattr(m, "contents", [Content.from_text("other")])),
        ("contents cleared", lambda m: m.contents.clear()),
    ]
    for index, content in enumerate(message.contents):
        for key, value in content.__dict__.items():
            if key == "type":
                other = "error" if value != "error" else "usage"
                changes.append((f"#{index}.type", lambda m, i=index, t=other: setattr(m.contents[i], "type", t)))
            elif isinstance(value, dict) and key != "additional_properties":
                changes.append(
                    (f"#{index}.{key} in place", lambda m, i=index, k=key: getattr(m.contents[i], k).update(z=1))
                )
            elif isinstance(value, list) and value:
                changes.append((f"#{index}.{key} in place", lambda m, i=index, k=key: getattr(m.contents[i], k).pop()))
            elif isinstance(value, Content):
                changes.append(
                    (
                        f"#{index}.{key} nested",
                        lambda m, i=index, k=key: setattr(getattr(m.contents[i], k), "name", "x"),
                    )
                )
            else:
                new: Any = "changed" if value != "changed" else "other"
                changes.append((f"#{index}.{key}", lambda m, i=index, k=key, v=new: setattr(m.contents[i], k, v)))
        changes.append(
            (f"#{index} property", lambda m, i=index: m.contents[i].additional_properties.update(_group={"id": 1}))
        )
        changes.append((f"#{index} attribute of its own", lambda m, i=index: setattr(m.contents[i], "extra", 1)))
    return changes


def _shared_messages() -> list[Message]:
    from agent_stores.testing.history import sample_contents

    return [
        Message("user", ["plain text"], author_name="ada", message_id="m1"),
        *(Message("assistant", [c], message_id=f"m-{i}") for i, c in enumerate(sample_contents())),
    ]


def test_a_changed_message_is_never_returned_again() -> None:
    """Any change a caller makes to a shared message (every attribute, in place or replaced) is seen."""
    cache = codec.DecodeCache()
    checked = 0
    for position, message in enumerate(_shared_messages()):
        record = codec.encode_message(message)
        expected = Message.from_dict(json_loads(record)).to_dict()
        (kept,) = codec.decode_messages([record], cache=cache, log=position)
        if cache.entries.peek((position, record, 0)) is None:
            continue  # decoded by the framework's path every time: nothing shared
        for what, change in _changes(kept):
            (loaded,) = codec.decode_messages([record], cache=cache, log=position)
            assert loaded.to_dict() == expected
            change(loaded)
            (after,) = codec.decode_messages([record], cache=cache, log=position)
            assert after is not loaded, f"{message.contents[0].type}: a message whose {what} changed was returned again"
            assert after.to_dict() == expected
            checked += 1
    assert checked > 300, "the test should change most attributes of most content types"


def test_checking_a_shared_message_gives_it_no_attribute_dict() -> None:
    """Checking a message is unchanged reads its attributes without making it an attribute dict (one more object)."""
    cache = codec.DecodeCache()
    records = _records_of(_shared_messages())
    first = codec.decode_messages(records, cache=cache, log="a")
    sizes = [len(gc.get_referents(m)) for m in first]
    again = codec.decode_messages(records, cache=cache, log="a")
    assert sum(m is n for m, n in zip(first, again, strict=True)) > len(records) // 2
    assert [len(gc.get_referents(m)) for m in again] == sizes


@pytest.mark.parametrize(
    ("kind", "count", "budget"), [("chat", 3000, 2 << 20), ("tool", 600, 2 << 20), ("many parts", 40, 12 << 20)]
)
def test_shared_messages_stay_within_the_cache_budget(kind: str, count: int, budget: int) -> None:
    """What a full cache of shared messages really holds (tracemalloc) is at most its budget."""
    import tracemalloc

    records = _cache_records(kind, count)
    cache = codec.DecodeCache(budget)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot()
        for start in range(0, len(records), 40):
            codec.decode_messages(records[start : start + 40], cache=cache, log=("provider", start % 400))
        gc.collect()
        held = sum(stat.size_diff for stat in tracemalloc.take_snapshot().compare_to(before, "filename"))
    finally:
        tracemalloc.stop()
    assert len(cache.entries) > 1, "the test should fill the cache"
    assert cache.entries.cost <= budget
    assert held <= budget, f"{kind}: the cache holds {held:,} bytes for a budget of {budget:,}"


# -- what the check of a shared message notices -------------------------------------------------


def _state(value: Any) -> Any:
    """What a message holds, attribute by attribute (names and order of attributes included), compared with ``==``."""
    if type(value) is Message:
        names = [name for name in fastcodec._MESSAGE_KEYS if hasattr(value, name)]  # pyright: ignore[reportPrivateUsage]
        extra = len(gc.get_referents(value)) - 1 - len(names)  # values held besides the six (no attribute dict made)
        if extra < 0:  # the message has its attribute dict: read through it
            return ("message", [(k, _state(v)) for k, v in vars(value).items()])
        return ("message", [(name, _state(getattr(value, name))) for name in names], extra)
    if type(value) is Content:
        return ("content", [(k, _state(v)) for k, v in vars(value).items()])
    if isinstance(value, dict):
        return (type(value), {k: _state(v) for k, v in cast(dict[Any, Any], value).items()})
    if isinstance(value, list | tuple):
        return (type(value), [_state(v) for v in cast(list[Any], value)])
    return value


def _containers(value: Any) -> list[Any]:
    """Every dict and list a message reaches (its own, its contents', nested ones), the contents list included."""
    found: list[Any] = []
    if type(value) is Message:
        for name in ("contents", "additional_properties", "raw_representation"):
            found += _containers(getattr(value, name, None))
    elif type(value) is Content:
        for held in vars(value).values():
            found += _containers(held)
    elif isinstance(value, dict | list):
        found.append(value)
        for held in cast(Any, value.values() if isinstance(value, dict) else value):
            found += _containers(held)
    return found


def _contents_of(message: Message) -> list[Content]:
    """Every Content a message reaches, nested ones included."""
    found: list[Content] = []
    pending: list[Any] = list(message.contents)
    while pending:
        item = pending.pop()
        if type(item) is Content:
            found.append(item)
            pending += [v for v in vars(item).values() if type(v) is Content]
            pending += [c for v in vars(item).values() if type(v) is list for c in cast(list[Any], v)]
    return found


_new_values = st.one_of(json_values, texts, st.just(True), st.just(1), st.just(1.0), st.just(0), st.just(False))


def _mutate(data: st.DataObject, message: Message) -> str:
    """Change ``message`` the way a caller might (one step), drawn by hypothesis; return what was done."""
    kind = data.draw(st.sampled_from(["set", "delete", "add", "delete and add", "in place"]))
    if kind == "in place":
        container = data.draw(st.sampled_from(_containers(message)))
        value = data.draw(_new_values)
        if isinstance(container, dict):
            holder = cast(dict[Any, Any], container)
            op = data.draw(st.sampled_from(["set", "pop", "clear"] if holder else ["set"]))
            if op == "set":
                key = data.draw(st.one_of(texts, st.sampled_from(list(holder) or ["k"]), st.integers(0, 2)))
                holder[key] = value
            elif op == "pop":
                holder.pop(data.draw(st.sampled_from(list(holder))))
            else:
                holder.clear()
        else:
            items = cast(list[Any], container)
            op = data.draw(st.sampled_from(["append", "pop", "set", "clear", "reverse"] if items else ["append"]))
            if op == "append":
                items.append(data.draw(st.one_of(_new_values, st.builds(Content.from_text, texts))))
            elif op == "pop":
                items.pop(data.draw(st.integers(0, len(items) - 1)))
            elif op == "set":
                items[data.draw(st.integers(0, len(items) - 1))] = value
            elif op == "clear":
                items.clear()
            else:
                items.reverse()
        return f"{op} in place"
    targets: list[Any] = [message, *_contents_of(message)]
    target = data.draw(st.sampled_from(targets))
    names = list(fastcodec._MESSAGE_KEYS) if target is message else list(vars(target))  # pyright: ignore[reportPrivateUsage]
    name = data.draw(st.sampled_from(names))
    if kind == "set":
        setattr(target, name, data.draw(_new_values))
    elif kind == "add":
        target.extra = data.draw(_new_values)
    else:
        delattr(target, name)
        if kind == "delete and add":  # as many attributes as before, one of them foreign
            target.extra = None
    return f"{kind} {name}"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_message(), st.data())
def test_a_shared_message_served_again_always_equals_its_record(message: Message, data: st.DataObject) -> None:
    """Whatever a caller does to a shared message, the next load returns one equal to its record in every attribute."""
    record = codec.encode_message(message)
    fresh = Message.from_dict(json_loads(record))
    cache = codec.DecodeCache()
    (loaded,) = codec.decode_messages([record], cache=cache, log="log")
    (again,) = codec.decode_messages([record], cache=cache, log="log")
    if again is not loaded:
        event("not shared")
        return  # decoded by the framework's path every time: nothing shared
    done = _mutate(data, loaded)
    changed = _state(loaded) != _state(fresh)
    event("changed" if changed else "left equal")
    (after,) = codec.decode_messages([record], cache=cache, log="log")
    assert not (changed and after is loaded), f"a message changed by {done!r} was returned again"
    assert _state(after) == _state(fresh), f"after {done!r}, a load returned a message unlike its record"
    assert after.to_dict() == fresh.to_dict()


class _Unequal:
    """A value whose comparison raises, as some libraries' arrays do."""

    def __eq__(self, other: object) -> bool:
        raise ValueError("the truth value of this comparison is ambiguous")

    __hash__ = None  # type: ignore[assignment]


def _call_message() -> Message:
    return Message(
        "assistant",
        [Content.from_function_call("c1", "forecast", arguments={"city": "Oslo", "days": [1, None]})],
        message_id="m-call",
    )


def _arguments(m: Message) -> dict[Any, Any]:
    return cast(dict[Any, Any], m.contents[0].arguments)


def _swap_attribute(target: Any, name: str) -> None:
    delattr(target, name)
    target.extra = None  # as many attributes as before, one of them foreign


_CHECKED: dict[str, tuple[Any, bool]] = {
    # what a caller does: (the change, whether the message is still served)
    "arguments replaced by an equal dict": (lambda m: setattr(m.contents[0], "arguments", dict(_arguments(m))), True),
    "arguments reordered": (lambda m: setattr(m.contents[0], "arguments", dict(reversed(_arguments(m).items()))), True),
    "an argument 1 became True (equal)": (lambda m: _arguments(m)["days"].__setitem__(0, True), True),
    "call id replaced by an equal string": (lambda m: setattr(m.contents[0], "call_id", "".join(["c", "1"])), True),
    "message dict made (vars)": (vars, True),
    "a null argument became NaN": (lambda m: _arguments(m)["days"].__setitem__(1, math.nan), False),
    "a key became an integer": (lambda m: _arguments(m).__setitem__(1, _arguments(m).pop("city")), False),
    "an argument that cannot be compared": (lambda m: _arguments(m).__setitem__("city", _Unequal()), False),
    "a property that cannot be compared": (lambda m: m.contents[0].additional_properties.update(x=_Unequal()), False),
    "a content attribute deleted and another added": (lambda m: _swap_attribute(m.contents[0], "hosted"), False),
    "raw_representation deleted and another added": (lambda m: _swap_attribute(m, "raw_representation"), False),
}


@pytest.mark.parametrize("what", list(_CHECKED))
def test_what_the_check_of_a_shared_message_compares(what: str) -> None:
    """Values are compared as the framework compares contents (``==``); a comparison that raises means changed."""
    change, served = _CHECKED[what]
    record = codec.encode_message(_call_message())
    cache = codec.DecodeCache()
    (loaded,) = codec.decode_messages([record], cache=cache, log="log")
    change(loaded)
    (after,) = codec.decode_messages([record], cache=cache, log="log")
    assert (after is loaded) is served, f"{what}: {'rebuilt' if served else 'served again'}"
    assert after.to_dict() == Message.from_dict(json_loads(record)).to_dict()


def test_a_plain_text_message_that_has_its_attribute_dict_is_still_shared() -> None:
    record = codec.encode_message(Message("user", ["hello"], message_id="m-1"))
    cache = codec.DecodeCache()
    (loaded,) = codec.decode_messages([record], cache=cache, log="log")
    vars(loaded)
    vars(loaded.contents[0])
    (after,) = codec.decode_messages([record], cache=cache, log="log")
    assert after is loaded
    loaded.contents[0].__dict__["text"] = "changed"
    (rebuilt,) = codec.decode_messages([record], cache=cache, log="log")
    assert rebuilt is not loaded
    assert rebuilt.text == "hello"
