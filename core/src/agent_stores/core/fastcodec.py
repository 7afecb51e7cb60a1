"""An exact fast path for stored message records.

For a ``Message`` whose contents hold only JSON values (strings, numbers, booleans, ``None``,
lists, tuples and dicts of them) and nested ``Content`` - text, function calls and results,
reasoning, usage, data and URIs, hosted files, and every other content type the framework
defines - this module builds the dict the framework's ``Message.to_dict()`` builds, and
rebuilds from a record the ``Message`` that ``Message.from_dict`` rebuilds, without the
framework's generic field-by-field walk. Anything else (a value of another type, an
exception diagnostic, message-level additional properties, a record needing the
framework's special cases such as nested tool outputs or ``merge_mode``) returns ``None``
and the caller takes the framework's own path. The shapes it relies on (attribute order,
serialised field order) are read from the framework at import time and checked against probe
messages encoded both ways (:func:`check_framework`): a framework that builds or writes them
otherwise gets its own path everywhere.
"""

from __future__ import annotations

import gc
import inspect
import operator
from collections.abc import Callable
from typing import Any, cast

import msgspec
from agent_framework import Content, Message

__all__ = ["FRAMEWORK_VERSIONS", "check_framework", "fast_decode", "fast_to_dict", "is_enabled"]

#: The ``agent-framework-core`` versions whose shapes the fast path was derived from and is tested on.
#: Another version still gets the fast path when :func:`check_framework` finds its shapes unchanged.
FRAMEWORK_VERSIONS = ("1.23.",)


class _NotFast(Exception):
    """Raised inside the fast path when a value needs the framework's own path."""


# Attribute dicts of a fresh text Content and a fresh Message, as the framework builds them.
_CONTENT_TEMPLATE: dict[str, Any] = dict(Content("text", text="").__dict__)
_MESSAGE_KEYS = tuple(Message("user", []).__dict__)
_CONTENT_KEYS = tuple(_CONTENT_TEMPLATE)
# Keyword arguments ``Content.__init__`` takes besides the four ``from_dict`` pops.
_CONTENT_PARAMS = frozenset(tuple(inspect.signature(Content.__init__).parameters)[2:]) - {
    "annotations",
    "additional_properties",
    "raw_representation",
}


def _serialised_field_order() -> tuple[str, ...]:
    # The order in which Content.to_dict writes its fields: a probe with every field set.
    probe: dict[str, Any] = dict.fromkeys(_CONTENT_PARAMS, "x")
    probe.update(hosted=True, informational_only=True, merge_mode="append", additional_properties={"k": 1})
    keys = tuple(Content("function_call", **probe).to_dict())
    return keys[1:] if keys[:1] == ("type",) else ()


_FIELD_ORDER = _serialised_field_order()
_FIELDS_OF: Callable[[dict[str, Any]], tuple[Any, ...]] = operator.itemgetter(*_FIELD_ORDER)  # pyright: ignore[reportUnknownVariableType]
# A plain text content has every serialised field None but text, informational_only and additional_properties.
_NONE_IN_PLAIN_TEXT = len(_FIELD_ORDER) - 3
_INFORMATIONAL_TYPES = frozenset(("function_call", "computer_tool_call"))
_LAYOUT_MATCHES = (
    _MESSAGE_KEYS == ("role", "contents", "author_name", "message_id", "additional_properties", "raw_representation")
    and _CONTENT_KEYS[:6]
    == ("type", "annotations", "additional_properties", "raw_representation", "merge_mode", "text")
    and _CONTENT_TEMPLATE.get("additional_properties") == {}
    and _CONTENT_TEMPLATE.get("informational_only") is False
    and all(
        v is None
        for k, v in _CONTENT_TEMPLATE.items()
        if k not in ("type", "text", "additional_properties", "informational_only")
    )
    and frozenset(_FIELD_ORDER) == _CONTENT_PARAMS | {"additional_properties"}
    and frozenset(_CONTENT_KEYS)
    == _CONTENT_PARAMS | {"type", "annotations", "additional_properties", "raw_representation"}
)
_RECORD_KEYS = frozenset(("type", "role", "contents", "author_name", "message_id", "additional_properties"))
# Record keys the framework's Content.from_dict rebuilds in ways this path does not reproduce.
_DECODE_FALLBACK_KEYS = frozenset(("merge_mode", "inputs", "outputs", "output", "screenshot"))
_SCALARS = (str, int, float, bool)
_NO_PROPERTIES: dict[str, Any] = {}
_new = object.__new__
# Record keys the framework passes to ``Content.__init__`` unchanged (besides annotations and
# raw_representation, which ``from_dict`` pops and passes on as they are).
_PASSTHROUGH = (
    (_CONTENT_PARAMS | {"annotations", "raw_representation"})
    - _DECODE_FALLBACK_KEYS
    - {
        "text",
        "informational_only",
        "hosted",
        "function_call",
        "items",
        "approved",
    }
)


# -- encoding --------------------------------------------------------------------------------


def _value(value: Any) -> Any:
    """The framework's ``_serialize_value`` for JSON values and nested Content; else ``_NotFast``."""
    kind: type[Any] = type(value)  # pyright: ignore[reportUnknownVariableType]
    if value is None or kind in _SCALARS:
        return value
    if kind is Content:
        return _content(value)
    if kind is list or kind is tuple:
        return [_value(v) for v in cast(list[Any], value)]
    if kind is dict:
        return {k: _value(v) for k, v in cast(dict[Any, Any], value).items()}
    raise _NotFast


def _content(content: Content) -> dict[str, Any]:
    """``content.to_dict()`` for a content holding only JSON values; else ``_NotFast``."""
    attrs = content.__dict__
    content_type = attrs.get("type")
    if tuple(attrs) != _CONTENT_KEYS or type(content_type) is not str:
        raise _NotFast
    values = _FIELDS_OF(attrs)
    if (
        content_type == "text"
        and values.count(None) == _NONE_IN_PLAIN_TEXT
        and type(attrs["text"]) is str
        and attrs["informational_only"] is False
        and attrs["additional_properties"] == {}
        and attrs["annotations"] is None
    ):
        # The commonest content of all: text and nothing else (no other field left to write).
        return {"type": "text", "text": attrs["text"], "additional_properties": {}}
    present = {k: v for k, v in zip(_FIELD_ORDER, values, strict=True) if v is not None}
    if "exception" in present:
        raise _NotFast  # the framework writes its redaction marker
    if "informational_only" in present and (
        content_type not in _INFORMATIONAL_TYPES or not present["informational_only"]
    ):
        del present["informational_only"]
    for key, value in present.items():
        if type(value) not in _SCALARS:
            present[key] = _value(value)
    result: dict[str, Any] = {"type": content_type, **present}
    annotations = attrs["annotations"]
    if annotations is not None:
        if type(annotations) is not list or any(type(a) is not dict for a in cast(list[Any], annotations)):
            raise _NotFast
        result["annotations"] = [dict(a) for a in cast(list[dict[str, Any]], annotations)]
    return result


_MESSAGE_VALUES: Callable[[Message], tuple[Any, ...]] = operator.attrgetter(*_MESSAGE_KEYS)  # pyright: ignore[reportUnknownVariableType]
_MESSAGE_ITEMS: Callable[[dict[str, Any]], tuple[Any, ...]] = operator.itemgetter(*_MESSAGE_KEYS)  # pyright: ignore[reportUnknownVariableType]


def _message_values(message: Message) -> tuple[Any, ...] | None:
    """The values of the message's six attributes, or ``None`` when it holds others besides.

    A ``Message`` built by ``Message.__init__`` keeps its attributes in the object itself, with
    no dict: reading ``__dict__`` would build one and attach it for the message's lifetime (one
    more object for the collector per saved message). The collector's own view of the object
    (its referents: each attribute value held, then its type) tells whether it holds exactly the
    six, without building anything; a message that already has its dict is read through it.
    """
    held = gc.get_referents(message)
    if len(held) == len(_MESSAGE_KEYS) + 1 and held[-1] is Message:
        try:
            values = _MESSAGE_VALUES(message)
        except AttributeError:
            return None
        return values if all(map(operator.is_, values, held)) else None
    attrs = message.__dict__
    return _MESSAGE_ITEMS(attrs) if tuple(attrs) == _MESSAGE_KEYS else None


def fast_to_dict(message: Message) -> dict[str, Any] | None:
    """Return ``message.to_dict()``, or ``None`` when the message needs the framework's path."""
    if not _enabled or type(message) is not Message:
        return None
    values = _message_values(message)
    if values is None:
        return None
    role, contents, author_name, message_id, properties, _ = values
    if properties != {} or type(role) is not str:
        return None
    if (author_name is not None and type(author_name) is not str) or (
        message_id is not None and type(message_id) is not str
    ):
        return None
    if type(contents) is not list or any(type(c) is not Content for c in cast(list[Any], contents)):
        return None
    try:
        encoded = [_content(c) for c in cast(list[Content], contents)]
    except _NotFast:
        return None
    result: dict[str, Any] = {"type": "message", "role": role, "contents": encoded}
    if author_name is not None:
        result["author_name"] = author_name
    if message_id is not None:
        result["message_id"] = message_id
    result["additional_properties"] = {}
    return result


# -- decoding --------------------------------------------------------------------------------


def _new_content(content_type: str, properties: dict[str, Any]) -> tuple[Content, dict[str, Any]]:
    """A Content with the framework's attributes in the framework's order; returns it and its ``__dict__``."""
    content = _new(Content)
    attrs = content.__dict__
    attrs.update(_CONTENT_TEMPLATE)
    attrs["type"] = content_type
    attrs["additional_properties"] = properties
    return content, attrs


def _decode_content(entry: Any) -> Content:
    """``Content.from_dict(entry)`` for a record this path reproduces; else ``_NotFast``."""
    if type(entry) is not dict:
        raise _NotFast
    record = cast(dict[str, Any], entry)
    content_type = record.get("type")
    properties: Any = record.get("additional_properties")
    text = record.get("text")
    if content_type == "text" and len(record) == 3 and type(text) is str and properties == {}:
        # The commonest record of all: exactly {"type": "text", "text": ..., "additional_properties": {}}.
        content, attrs = _new_content("text", {})
        attrs["text"] = text
        return content
    if type(content_type) is not str or not content_type:
        raise _NotFast
    if properties is None:
        copied: dict[str, Any] = {}
    elif type(properties) is dict and "server_label" not in properties:
        copied = dict(cast(dict[str, Any], properties))
        for key, value in copied.items():
            if type(value) is dict:
                copied[key] = dict(cast(dict[str, Any], value))
            elif isinstance(value, dict):
                raise _NotFast
    else:
        raise _NotFast
    content, attrs = _new_content(content_type, copied)
    attrs["text"] = None
    informational: Any = False
    for key, value in record.items():
        if key in _PASSTHROUGH:
            attrs[key] = value
        elif key in ("type", "additional_properties"):
            continue
        elif key not in _CONTENT_KEYS or key in _DECODE_FALLBACK_KEYS:
            raise _NotFast
        elif key == "informational_only":
            informational = value
        elif key == "hosted":
            if (content_type == "function_call" and type(value) is not bool) or (
                content_type != "function_call" and value is not None
            ):
                raise _NotFast
            attrs[key] = value
        elif key == "function_call" and value and type(value) is dict:
            attrs[key] = _decode_content(value)
        elif key == "items" and value and type(value) is list:
            attrs[key] = [_decode_content(v) if type(v) is dict else v for v in cast(list[Any], value)]
        else:
            attrs[key] = value
    if content_type == "text":
        attrs["text"] = attrs["text"] or ""
    elif content_type == "function_call" and attrs["hosted"] is None:
        attrs["hosted"] = False
    elif content_type == "function_approval_response" and type(attrs["approved"]) is not bool:
        attrs["approved"] = False
    attrs["informational_only"] = informational or content_type == "mcp_server_tool_call"
    return content


def fast_decode(payload: dict[str, Any]) -> Message | None:
    """Return ``Message.from_dict(payload)``, or ``None`` when the record needs the framework's path."""
    get = payload.get
    if not _enabled or not _RECORD_KEYS.issuperset(payload) or get("type", "message") != "message":
        return None
    role = get("role")
    author_name = get("author_name")
    message_id = get("message_id")
    raw_contents = get("contents")
    if (
        type(role) is not str
        or (author_name is not None and type(author_name) is not str)
        or (message_id is not None and type(message_id) is not str)
        or get("additional_properties", _NO_PROPERTIES) != _NO_PROPERTIES
    ):
        return None
    contents: list[Content] = []
    if raw_contents is not None:
        if type(raw_contents) is not list:
            return None
        try:
            for entry in cast(list[Any], raw_contents):
                item = cast(dict[str, Any], entry) if type(entry) is dict else _NO_PROPERTIES
                text = item.get("text")
                if (
                    type(text) is str
                    and len(item) == 3
                    and item.get("type") == "text"
                    and item.get("additional_properties") == _NO_PROPERTIES
                ):
                    # The commonest record of all: {"type": "text", "text": ..., "additional_properties": {}}.
                    content = _new(Content)
                    attrs = content.__dict__
                    attrs.update(_CONTENT_TEMPLATE)
                    attrs["text"] = text
                    attrs["additional_properties"] = {}
                    contents.append(content)
                else:
                    contents.append(_decode_content(entry))
        except _NotFast:
            return None
    return _message(role, contents, author_name, message_id)


def _message(role: str, contents: list[Content], author_name: str | None, message_id: str | None) -> Message:
    """A Message with the framework's attributes in the framework's order (no properties, no raw representation)."""
    # Attribute stores, not its __dict__: as Message.__init__ does, the values stay in the
    # object and no dict is made (faster, and one object fewer for the garbage collector).
    message = _new(Message)
    message.role = role  # pyright: ignore[reportAttributeAccessIssue]
    message.contents = contents
    message.author_name = author_name
    message.message_id = message_id
    message.additional_properties = {}
    message.raw_representation = None
    return message


# -- repeated records --------------------------------------------------------------------------


# A remembered message is kept in a form the garbage collector does not walk at all: one flat
# tuple of strings, numbers, booleans, None and bytes, which Python stops tracking at the first
# collection it survives. (A tuple holding a dict stays tracked, however plain the dict, and
# each level of nested tuples takes one more collection, so thousands of remembered messages
# would otherwise be walked by every full collection.) The tuple holds the role, author name
# and message id, then one segment per Content: a plain text Content (its text and nothing
# else) is its text, a string; any other Content is ``2 * k`` and the names and values of its
# ``k`` immutable attributes that are not None in the template (the template restores the rest,
# in the framework's order), then ``2 * m`` and the names and values of its ``m`` dicts and
# lists as msgspec JSON, decoded anew for every rebuild (they were decoded from a record by
# msgspec, which admits no NaN or infinity, so the round trip is exact). A Content inside a
# Content (a result's items, an approval's call) is a nested tuple: whether it was a list,
# then one segment per Content.
_IMMUTABLE = frozenset((str, int, float, bool, type(None)))
_NONE_IN_TEMPLATE = frozenset(k for k, v in _CONTENT_TEMPLATE.items() if v is None)
_JSON_ENCODE = msgspec.json.Encoder().encode
_JSON_DECODE = msgspec.json.Decoder().decode
_EMPTY_DICT_JSON = b"{}"

#: What rebuilds a decoded message: role, author name, message id, then one segment per Content.
Prototype = tuple[Any, ...]


def _freeze_content(content: Content, into: list[Any]) -> None:
    items = content.__dict__
    if not _enabled or tuple(items) != _CONTENT_KEYS:
        raise _NotFast  # not a Content as fast_decode builds them: not remembered
    text = items["text"]
    if (
        type(text) is str
        and items["type"] == "text"
        and items["informational_only"] is False
        and items["annotations"] is None
        and items["raw_representation"] is None
        and type(items["additional_properties"]) is dict
        and not items["additional_properties"]
        and _FIELDS_OF(items).count(None) == _NONE_IN_PLAIN_TEXT
    ):
        into.append(text)  # text and nothing else
        return
    kept: list[Any] = []
    mutable: list[Any] = []
    for key, value in items.items():
        kind: type[Any] = type(value)  # pyright: ignore[reportUnknownVariableType]
        if kind in _IMMUTABLE:
            if value is not None or key not in _NONE_IN_TEMPLATE:
                kept += (key, value)
        elif kind is dict and not value:
            mutable += (key, _EMPTY_DICT_JSON)
        else:
            mutable += (key, _freeze_value(value))
    into.append(len(kept))
    into += kept
    into.append(len(mutable))
    into += mutable


def _freeze_value(value: Any) -> bytes | tuple[Any, ...]:
    # JSON for a list or dict of JSON values; for a Content or a list of them (a call inside an
    # approval, a result's items) a tuple: whether it was a list, then one segment per Content.
    if type(value) is Content:
        nested: list[Any] = [False]
        _freeze_content(value, nested)
        return tuple(nested)
    if type(value) is list and value and all(type(item) is Content for item in cast(list[Any], value)):
        nested = [True]
        for item in cast(list[Content], value):
            _freeze_content(item, nested)
        return tuple(nested)
    try:
        return _JSON_ENCODE(value)
    except (TypeError, ValueError, OverflowError):
        raise _NotFast from None  # a value of another type, or a Content among other values


def _thaw_contents(segments: tuple[Any, ...], index: int) -> list[Content]:
    # The Contents whose segments start at ``index`` and run to the end of ``segments``.
    contents: list[Content] = []
    end = len(segments)
    while index < end:
        content = _new(Content)
        attrs = content.__dict__
        attrs.update(_CONTENT_TEMPLATE)
        segment = segments[index]
        if type(segment) is str:
            attrs["text"] = segment
            attrs["additional_properties"] = {}
            index += 1
        else:
            index += 1
            stop = index + segment
            attrs.update(zip(segments[index:stop:2], segments[index + 1 : stop : 2], strict=True))
            stop += segments[stop] + 1
            for at in range(index + segment + 1, stop, 2):
                frozen = segments[at + 1]
                if frozen is _EMPTY_DICT_JSON:
                    attrs[segments[at]] = {}
                elif type(frozen) is bytes:
                    attrs[segments[at]] = _JSON_DECODE(frozen)
                else:
                    nested = _thaw_contents(frozen, 1)
                    attrs[segments[at]] = nested if frozen[0] else nested[0]
            index = stop
        contents.append(content)
    return contents


def prototype(message: Message) -> Prototype | None:
    """Return what rebuilds ``message`` (which :func:`fast_decode` built), or ``None``.

    The prototype holds no list, dict or ``Content`` of the message, so a message
    :func:`from_prototype` builds shares nothing mutable with ``message`` or with any other
    message built from the same prototype; and, once a collection has seen it, nothing the
    garbage collector tracks. A value other than JSON's and ``Content``, or a ``Content`` with
    other attributes than :func:`fast_decode` builds, gives ``None``: such a message is
    decoded every time.
    """
    parts: list[Any] = [message.role, message.author_name, message.message_id]
    try:
        for content in message.contents:
            _freeze_content(content, parts)
    except _NotFast:
        return None
    return tuple(parts)


def from_prototype(parts: Prototype) -> Message:
    """Build a new ``Message`` equal to the one :func:`prototype` was taken from."""
    if len(parts) == 4 and type(parts[3]) is str:  # the commonest message: one plain text
        content = _new(Content)
        attrs = content.__dict__
        attrs.update(_CONTENT_TEMPLATE)
        attrs["text"] = parts[3]
        attrs["additional_properties"] = {}
        return _message(parts[0], [content], parts[1], parts[2])
    return _message(parts[0], _thaw_contents(parts, 3), parts[1], parts[2])


# Plain text Contents are checked against this copy of the template, its text slot set to the
# checked Content's own text first (one dict comparison in C, no copy). Only that slot is ever
# written, and always with the text of the Content being checked: when threads race on it, a
# comparison sees another text and fails (a rebuild), never the reverse.
_TEXT_CHECK: dict[str, Any] = dict(_CONTENT_TEMPLATE)
_MESSAGE_REFERENTS = len(_MESSAGE_KEYS) + 1  # the six values a message holds, then its type
_referents = gc.get_referents


def unchanged(message: Message, parts: Prototype) -> bool:
    """Whether ``message`` still equals the message :func:`from_prototype` builds from ``parts``.

    Equal means: the same six attributes, each ``==`` to the rebuilt message's, and contents
    that are ``Content`` objects with the same attributes, each ``==`` to the rebuilt one's
    (lists and dicts compared as values, nested contents alike) - the equality the framework's
    ``Content.__eq__`` and ``Message.to_dict()`` comparisons use. An attribute added, removed
    or set to another value, a property set, a content added, replaced or removed, a list or
    dict changed in place all make it ``False``, and so does a value whose comparison raises.
    Builds nothing that outlives the call, and never gives an unchanged message an attribute dict.
    """
    if type(message) is not Message:
        return False
    try:
        role, contents, author_name, message_id, properties, raw = _MESSAGE_VALUES(message)
        # All six are there; exactly six values held in the object means nothing else is. A
        # message that has its attribute dict is read through it (as _message_values does).
        if len(_referents(message)) != _MESSAGE_REFERENTS and tuple(message.__dict__) != _MESSAGE_KEYS:
            return False
        if (
            type(properties) is not dict
            or properties
            or raw is not None
            or type(contents) is not list
            or role != parts[0]
            or author_name != parts[1]
            or message_id != parts[2]
        ):
            return False
        held_contents: list[Any] = contents  # pyright: ignore[reportUnknownVariableType] (a list, checked above)
        if len(parts) == 4 and len(held_contents) == 1:  # the commonest message: one content...
            content = held_contents[0]
            text = parts[3]
            if type(text) is str and type(content) is Content:  # ... and a plain text one
                attrs = content.__dict__
                held = attrs.get("text")
                if held != text:
                    return False
                _TEXT_CHECK["text"] = held
                return attrs == _TEXT_CHECK
        return _same_contents(held_contents, parts, 3)
    except Exception:  # a deleted attribute, or a caller's value whose comparison fails: not equal
        return False


def _same_contents(contents: list[Any], segments: tuple[Any, ...], index: int) -> bool:
    """Whether ``contents`` are exactly the Contents whose segments run from ``index`` to the end of ``segments``."""
    end = len(segments)
    for content in contents:
        if index >= end or type(content) is not Content:
            return False
        attrs = content.__dict__
        segment = segments[index]
        index += 1
        if type(segment) is str:  # a plain text Content
            held = attrs.get("text")
            if held != segment:
                return False
            _TEXT_CHECK["text"] = held
            if attrs != _TEXT_CHECK:
                return False
            continue
        # Any other Content: the template with its immutable attributes as kept, and the
        # Content's own lists, dicts and nested Contents after checking each against its
        # frozen form (JSON, or segments); then one comparison of the whole attribute dict.
        stop = index + segment
        expected = _CONTENT_TEMPLATE.copy()
        expected.update(zip(segments[index:stop:2], segments[index + 1 : stop : 2], strict=True))
        index = stop + segments[stop] + 1
        for at in range(stop + 1, index, 2):
            name = segments[at]
            frozen = segments[at + 1]
            held = attrs.get(name, _ABSENT)
            if frozen is _EMPTY_DICT_JSON:
                if type(held) is not dict or held:
                    return False
            elif type(frozen) is bytes:
                if not _same_json(held, frozen):
                    return False
            elif frozen[0]:  # a list of Contents
                if type(held) is not list:
                    return False
                items: list[Any] = held  # pyright: ignore[reportUnknownVariableType]
                if not _same_contents(items, frozen, 1):
                    return False
            elif not _same_contents([held], frozen, 1):  # one Content
                return False
            expected[name] = held
        if attrs != expected:
            return False
    return index == end


_ABSENT = object()


def _same_json(value: Any, frozen: bytes) -> bool:
    """Whether ``value`` still equals the list or dict of JSON values ``frozen`` holds."""
    return bool(value == _JSON_DECODE(frozen))


def prototype_parts(parts: Prototype) -> tuple[int, int]:
    """How many plain text Contents and how many other Contents (nested ones not counted) a prototype rebuilds."""
    texts = others = 0
    index = 3
    end = len(parts)
    while index < end:
        segment = parts[index]
        if type(segment) is str:
            texts += 1
            index += 1
        else:
            others += 1
            index += segment + parts[index + segment + 1] + 2
    return texts, others


# -- is the installed framework the one this path reproduces? -------------------------------------

# Whether the fast path is used; set at import by check_framework().
_enabled = True


def _probe_messages() -> list[Message]:
    """Messages of the shapes the fast path builds itself, for :func:`check_framework`."""
    return [
        Message("user", ["plain text"], author_name="ada", message_id="m1"),
        Message(
            "assistant",
            [
                Content.from_text("with a call", annotations=[{"type": "citation", "url": "https://example.org"}]),
                Content.from_function_call("c1", "forecast", arguments={"city": "Oslo", "days": [1, 2]}),
            ],
        ),
        Message("tool", [Content.from_function_result("c1", result={"temperature": 3.5, "sunny": False})]),
        Message(
            "assistant",
            [
                Content.from_text_reasoning(text="thinking"),
                Content.from_uri("https://a.b/c.png", media_type="image/png"),
            ],
        ),
    ]


def check_framework() -> bool:
    """Use the fast path only if the installed framework builds and writes messages exactly as it does.

    Checks the attribute and field layout of ``Message`` and ``Content`` (read from the framework
    at import), then encodes and decodes probe messages both ways and compares: every dict in
    the same key order, every rebuilt message equal. On any difference, or any error, the
    framework's own path is taken everywhere (slower, never different). Returns whether the
    fast path is on. Run at import; call again after changing the framework in the process.
    """
    global _enabled
    _enabled = bool(_LAYOUT_MATCHES)
    if _enabled:
        try:
            for message in _probe_messages():
                theirs = message.to_dict()
                ours = fast_to_dict(message)
                if ours is None or ours != theirs or list(ours) != list(theirs):
                    _enabled = False
                    break
                rebuilt = fast_decode(theirs)
                expected = Message.from_dict(theirs).to_dict()
                if rebuilt is None or rebuilt.to_dict() != expected or list(rebuilt.to_dict()) != list(expected):
                    _enabled = False
                    break
        except Exception:  # a framework of another shape: whatever breaks means "not the same"
            _enabled = False
    return _enabled


def is_enabled() -> bool:
    """Whether the fast path is in use (see :func:`check_framework`)."""
    return _enabled


check_framework()
