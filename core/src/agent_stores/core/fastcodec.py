"""An exact fast path for the records of plain text messages.

Most stored messages are a role, optional ``author_name`` and ``message_id``, and text
contents with nothing else set. For exactly those, this module builds the dict the
framework's ``Message.to_dict()`` builds, and rebuilds the ``Message`` that
``Message.from_dict`` rebuilds, without the framework's generic field-by-field walk. Anything
else returns ``None`` and the caller takes the framework's own path. The shapes it relies on
are recorded from the framework at import time and pinned by
``tests/core/test_core_fast_codec.py``.
"""

from __future__ import annotations

from typing import Any, cast

from agent_framework import Content, Message

__all__ = ["FRAMEWORK_VERSIONS", "fast_decode", "fast_to_dict"]

#: The ``agent-framework-core`` versions whose shapes the fast path reproduces.
FRAMEWORK_VERSIONS = ("1.23.",)

# Attribute dicts of a fresh text Content and a fresh Message, as the framework builds them.
_CONTENT_TEMPLATE: dict[str, Any] = dict(Content("text", text="").__dict__)
_MESSAGE_KEYS = tuple(Message("user", []).__dict__)
_CONTENT_KEYS = tuple(_CONTENT_TEMPLATE)
# Attributes that must hold None for a text content to be plain.
_UNSET = tuple(
    k
    for k in _CONTENT_KEYS
    if k not in ("type", "text", "additional_properties", "informational_only") and _CONTENT_TEMPLATE[k] is None
)
_PLAIN = (
    _MESSAGE_KEYS == ("role", "contents", "author_name", "message_id", "additional_properties", "raw_representation")
    and _CONTENT_TEMPLATE.get("additional_properties") == {}
    and _CONTENT_TEMPLATE.get("informational_only") is False
    and len(_UNSET) == len(_CONTENT_KEYS) - 4
)
_RECORD_KEYS = frozenset(("type", "role", "contents", "author_name", "message_id", "additional_properties"))
_TEXT_KEYS = frozenset(("type", "text", "additional_properties"))


def fast_to_dict(message: Message) -> dict[str, Any] | None:
    """Return ``message.to_dict()`` for a plain text message, or ``None`` for any other."""
    if not _PLAIN or type(message) is not Message:
        return None
    attrs = message.__dict__
    if (
        tuple(attrs) != _MESSAGE_KEYS
        or attrs["additional_properties"] != {}
        or attrs["raw_representation"] is not None
        or type(attrs["role"]) is not str
    ):
        return None
    author_name = attrs["author_name"]
    message_id = attrs["message_id"]
    if (author_name is not None and type(author_name) is not str) or (
        message_id is not None and type(message_id) is not str
    ):
        return None
    contents: list[dict[str, Any]] = []
    for content in cast(list[Any], attrs["contents"]):
        if type(content) is not Content:
            return None
        c = content.__dict__
        text = c.get("text")
        if (
            c.get("type") != "text"
            or type(text) is not str
            or tuple(c) != _CONTENT_KEYS
            or c["additional_properties"] != {}
            or c["informational_only"] is not False
            or any(c[k] is not None for k in _UNSET)
        ):
            return None
        contents.append({"type": "text", "text": text, "additional_properties": {}})
    result: dict[str, Any] = {"type": "message", "role": attrs["role"], "contents": contents}
    if author_name is not None:
        result["author_name"] = author_name
    if message_id is not None:
        result["message_id"] = message_id
    result["additional_properties"] = {}
    return result


def fast_decode(payload: dict[str, Any]) -> Message | None:
    """Return ``Message.from_dict(payload)`` for a plain text record, or ``None`` for any other."""
    if not _PLAIN or not _RECORD_KEYS.issuperset(payload) or payload.get("type", "message") != "message":
        return None
    role = payload.get("role")
    author_name = payload.get("author_name")
    message_id = payload.get("message_id")
    raw_contents = payload.get("contents")
    if (
        type(role) is not str
        or (author_name is not None and type(author_name) is not str)
        or (message_id is not None and type(message_id) is not str)
        or payload.get("additional_properties", {}) != {}
    ):
        return None
    contents: list[Content] = []
    if raw_contents is not None:
        if type(raw_contents) is not list:
            return None
        for item in cast(list[Any], raw_contents):
            if type(item) is not dict:
                return None
            entry = cast(dict[str, Any], item)
            text = entry.get("text")
            if (
                entry.get("type") != "text"
                or type(text) is not str
                or not _TEXT_KEYS.issuperset(entry)
                or entry.get("additional_properties", {}) != {}
            ):
                return None
            content = object.__new__(Content)
            attrs = dict(_CONTENT_TEMPLATE)
            attrs["text"] = text
            attrs["additional_properties"] = {}
            content.__dict__.update(attrs)
            contents.append(content)
    message = object.__new__(Message)
    message.__dict__.update(
        role=role,
        contents=contents,
        author_name=author_name,
        message_id=message_id,
        additional_properties={},
        raw_representation=None,
    )
    return message
