"""The message codec: one record per message, identical to a ``FileHistoryProvider`` JSONL line.

A record is the JSON of ``Message.to_dict()`` produced by the framework's own encoder, so
history moves between our stores and the framework's file store byte for byte. Beside each
record a store keeps a short identity digest, which is all de-duplication ever reads.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

from agent_framework import Message

from ._framework import filter_new_messages, get_message_identity, json_dumps, json_loads
from .errors import CorruptRecordError

__all__ = ["CODEC_VERSION", "count_already_stored", "decode_message", "encode_message", "message_digest"]

#: Version of the record format written by :func:`encode_message`; backends store it in their schema.
CODEC_VERSION = 1

# First character of a digest: what filter_new_messages needs to know without the message.
_ID_TAG = "i"  # identity is the message id
_USER_TAG = "u"  # identity is the content of a user message without id
_OTHER_TAG = "c"  # identity is the content of any other message without id


def encode_message(message: Message) -> bytes:
    """Encode ``message`` as the JSON of ``Message.to_dict()`` (UTF-8, one line)."""
    return json_dumps(message.to_dict())


def decode_message(record: bytes | str, *, where: str = "history record") -> Message:
    """Decode one record written by :func:`encode_message`.

    Raises:
        CorruptRecordError: ``record`` is not valid JSON or not a ``Message`` payload;
            ``where`` names the record in the message.

    """
    try:
        payload: Any = json_loads(record)
    except (TypeError, ValueError) as err:
        raise CorruptRecordError(f"{where} is not valid JSON") from err
    if not isinstance(payload, Mapping):
        raise CorruptRecordError(f"{where} is not a JSON object")
    try:
        return Message.from_dict(dict(cast(Mapping[str, Any], payload)))
    except (TypeError, ValueError, KeyError) as err:
        raise CorruptRecordError(f"{where} is not a valid Message payload") from err


def message_digest(message: Message) -> str:
    """Return a 23-character digest of the framework's ``get_message_identity(message)``.

    Two messages have equal digests exactly when the framework considers them the same
    message (up to a 128-bit hash collision). The first character records the identity's
    kind and whether it is a user message without id: the one fact about a stored message
    that ``filter_new_messages`` looks at besides identity.
    """
    identity = get_message_identity(message)
    tag = _ID_TAG if identity[0] == "id" else _USER_TAG if str(message.role) == "user" else _OTHER_TAG
    hashed = hashlib.blake2b(json.dumps(identity, ensure_ascii=False).encode("utf-8"), digest_size=16).digest()
    return tag + base64.urlsafe_b64encode(hashed).rstrip(b"=").decode("ascii")


class _DigestContent:
    """Stands in for a message's contents: its identity is the stored digest."""

    __slots__ = ("_digest",)

    def __init__(self, digest: str) -> None:
        self._digest = digest

    def to_dict(self) -> dict[str, str]:
        return {"digest": self._digest}


class _DigestMessage:
    """Carries exactly what ``filter_new_messages`` reads of a message, rebuilt from its digest."""

    __slots__ = ("contents", "id", "message_id", "role")

    def __init__(self, digest: str) -> None:
        self.id = None
        if digest.startswith(_ID_TAG):
            self.message_id: str | None = digest
            self.role = "assistant"
            self.contents: list[_DigestContent] = []
        else:
            self.message_id = None
            self.role = "user" if digest.startswith(_USER_TAG) else "assistant"
            self.contents = [_DigestContent(digest)]


def count_already_stored(stored_tail: Sequence[str], incoming: Sequence[str]) -> int:
    """Return how many leading digests of ``incoming`` are already stored.

    ``stored_tail`` holds the digests of the last ``min(len(stored), len(incoming))`` stored
    messages, oldest first. The decision is the framework's ``filter_new_messages``, called
    on digest stand-ins: it never looks further back than ``len(incoming)`` messages, so this
    gives the same stored result as calling it on the whole history.
    """
    existing = [_DigestMessage(d) for d in stored_tail]
    fresh = filter_new_messages(cast(Any, existing), cast(Any, [_DigestMessage(d) for d in incoming]))
    return len(incoming) - len(fresh)
