"""The message codec: one record per message, identical to a ``FileHistoryProvider`` JSONL line.

A record is the JSON of ``Message.to_dict()`` produced by the framework's own encoder, so
history moves between our stores and the framework's file store byte for byte. Beside each
record a store keeps a short identity digest, which is all de-duplication ever reads.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import sys
import time
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, cast

import msgspec
from agent_framework import Message

from ._framework import filter_new_messages, get_message_identity, json_dumps, json_loads
from .cache import BoundedCache
from .errors import CorruptRecordError
from .fastcodec import Prototype, fast_decode, fast_to_dict, from_prototype, prototype, prototype_parts, unchanged
from .urls import parse_bytes, parse_seconds

__all__ = [
    "CODEC_VERSION",
    "DEFAULT_CACHE_BYTES",
    "DEFAULT_CACHE_IDLE",
    "DecodeCache",
    "cache_budget",
    "count_already_stored",
    "decode_message",
    "decode_messages",
    "encode_message",
    "encode_record",
    "memory_limit",
    "message_digest",
    "validate_cache_bytes",
    "validate_cache_idle",
]

#: Version of the record format written by :func:`encode_message`; backends store it in their schema.
CODEC_VERSION = 1

_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder()
_SORTED_ENCODER = msgspec.json.Encoder(order="sorted")

# First character of a digest: what filter_new_messages needs to know without the message.
_ID_TAG = "i"  # identity is the message id
_USER_TAG = "u"  # identity is the content of a user message without id
_OTHER_TAG = "c"  # identity is the content of any other message without id


def encode_message(message: Message) -> bytes:
    """Encode ``message`` as the JSON of ``Message.to_dict()`` (UTF-8, one line).

    Raises:
        ValueError: The message holds values nested too deeply to serialise.
    """
    try:
        return _encode_payload(_to_dict(message))
    except RecursionError as err:
        raise _too_deep() from err


def _to_dict(message: Message) -> dict[str, Any]:
    # The framework's Message.to_dict(), built directly for plain text messages.
    payload = fast_to_dict(message)
    return message.to_dict() if payload is None else payload


def encode_record(message: Message) -> tuple[str, bytes]:
    """Return ``(message_digest(message), encode_message(message))`` from one ``to_dict()`` call.

    Serialising a message is the costly part of a save; both results come from the same dict.

    Raises:
        ValueError: The message holds values nested too deeply to serialise.
    """
    try:
        payload = _to_dict(message)
        return _digest(message, payload), _encode_payload(payload)
    except RecursionError as err:
        raise _too_deep() from err


def _too_deep() -> ValueError:
    return ValueError(f"a message nested too deeply to store (past Python's {sys.getrecursionlimit()} levels)")


def _encode_payload(payload: dict[str, Any]) -> bytes:
    # The bytes are the framework file provider's: msgspec's JSON, except that a payload holding
    # a NaN or infinity is written by the framework's legacy encoder. msgspec writes those as
    # null, so output without null cannot have held one and skips the framework's recursive scan.
    encoded = _ENCODER.encode(payload)
    return encoded if b"null" not in encoded else json_dumps(payload)


def decode_message(record: bytes | str, *, where: str = "history record") -> Message:
    """Decode one record written by :func:`encode_message`.

    Raises:
        CorruptRecordError: ``record`` is not valid JSON or not a ``Message`` payload;
            ``where`` names the record in the message.

    """
    try:
        payload: Any = json_loads(record)
    except RecursionError as err:
        raise CorruptRecordError(f"{where} is nested too deeply to decode") from err
    except (TypeError, ValueError) as err:  # invalid UTF-8 included (a ValueError)
        raise CorruptRecordError(f"{where} is not valid JSON") from err
    if not isinstance(payload, dict):
        raise CorruptRecordError(f"{where} is not a JSON object")
    fast = _fast_decode(cast(dict[str, Any], payload))
    if fast is not None:
        return fast
    try:
        return Message.from_dict(cast(dict[str, Any], payload))
    except RecursionError as err:
        raise CorruptRecordError(f"{where} is nested too deeply to decode") from err
    except (TypeError, ValueError, KeyError, AttributeError) as err:  # a part of the wrong type or shape
        raise CorruptRecordError(f"{where} is not a valid Message payload") from err


def _payload(record: bytes | str) -> Any:
    """The record's JSON, or ``None`` when the framework's own path must decide (NaN, corrupt, too deep)."""
    try:
        return _DECODER.decode(record)
    except (msgspec.DecodeError, TypeError, ValueError, RecursionError):  # invalid UTF-8 is a ValueError
        return None


def _fast_decode(payload: dict[str, Any]) -> Message | None:
    """:func:`fast_decode`, or ``None`` for a payload of a shape it does not expect (the framework's path decides)."""
    try:
        return fast_decode(payload)
    except (TypeError, ValueError, KeyError, AttributeError, RecursionError):
        return None


def decode_messages(
    records: Iterable[bytes | str],
    *,
    where: str = "history record",
    cache: DecodeCache | None = None,
    log: Hashable | None = None,
) -> list[Message]:
    """Decode records written by :func:`encode_message`, in order; :func:`decode_message` on each.

    Without ``log``, every call returns new ``Message`` objects, which callers may change
    freely. With a ``cache``, a record seen recently (an agent loads much the same window
    before every model call) is rebuilt from what its last decoding kept, without parsing it
    again.

    With a ``cache`` and ``log`` (what identifies the log the records were read from, e.g. a
    provider and a session key), a message returned by an earlier call for the same ``log``
    is returned again, the same object, when it still equals its record (every attribute, as
    ``==`` compares them, nested lists, dicts and contents alike): nothing is built for it, so a
    steady conversation leaves the garbage collector almost nothing new per load. A message
    that was changed since (an attribute set to another value, added or removed, a content or
    a property added, altered or removed, in place or not) is never returned again: its record
    is rebuilt and the new message is the one kept. Identical records in one call give
    distinct objects, and nothing is shared between two ``log`` values.

    Raises:
        CorruptRecordError: A record is not valid JSON or not a ``Message`` payload; the
            message names it by ``where`` and its position.
    """
    if cache is None or not cache.entries.enabled:
        return [_decode_one(record, f"{where} #{position}") for position, record in enumerate(records)]
    if log is not None:
        return cache.share(records, where, log)
    return cache.decode(records, where)


def _decode_one(record: bytes | str, where: str) -> Message:
    payload = _payload(record)
    message = _fast_decode(cast(dict[str, Any], payload)) if type(payload) is dict else None
    return decode_message(record, where=where) if message is None else message


# The default budget: this share of the memory the process may use, within these bounds.
_BUDGET_SHARE = 32
_BUDGET_FLOOR = 16 << 20
_BUDGET_CEILING = 256 << 20


def memory_limit(cgroup_limits: Iterable[str | None], physical: int | None) -> int | None:
    """The bytes this process may use, from the readings of where a system states it; ``None``: unknown.

    ``cgroup_limits`` are the texts of the memory limits of the cgroups the process is in and
    their ancestors (cgroup v2 ``memory.max``, ``"max"`` for none; v1 ``memory.limit_in_bytes``,
    a value past physical memory for none), ``None`` where unreadable; ``physical`` is the
    machine's memory in bytes. The smallest limit stated wins; text that is not a whole
    positive number states none.
    """
    limits = [physical] if physical is not None and physical > 0 else []
    for text in cgroup_limits:
        value = text.strip() if text is not None else ""
        if value.isascii() and value.isdigit() and int(value) > 0:
            limits.append(int(value))
    return min(limits) if limits else None


def cache_budget(limit: int | None) -> int:
    """The default decode cache budget for a process that may use ``limit`` bytes (``None``: unknown).

    One 32nd of the limit, at least 16 MiB and at most 256 MiB; 16 MiB when the limit is unknown.
    """
    if limit is None:
        return _BUDGET_FLOOR
    return min(_BUDGET_CEILING, max(_BUDGET_FLOOR, limit // _BUDGET_SHARE))


def _read_text(path: str, size: int = 64) -> str | None:
    try:
        with open(path, encoding="ascii") as file:
            return file.read(size)
    except (OSError, UnicodeDecodeError):
        return None


def _process_memory_limit() -> int | None:
    # The limits of the cgroup this process is in and of its ancestors (/proc/self/cgroup:
    # "0::/path" for v2, "N:...memory...:/path" for v1; a container sees its own as the root),
    # and physical memory from sysconf.
    readings: list[str | None] = []
    for line in (_read_text("/proc/self/cgroup", 4096) or "").splitlines():
        _, controllers, path = [*line.split(":", 2), "", ""][:3]
        if controllers and "memory" not in controllers.split(","):
            continue
        root, name = (
            ("/sys/fs/cgroup", "memory.max") if not controllers else ("/sys/fs/cgroup/memory", "memory.limit_in_bytes")
        )
        parts = [part for part in path.split("/") if part]
        readings.extend(_read_text("/".join([root, *parts[:depth], name])) for depth in range(len(parts) + 1))
    try:
        physical: int | None = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not on this platform
        physical = None
    return memory_limit(readings, physical)


#: Bytes a :class:`DecodeCache` holds by default: :func:`cache_budget` of the memory this process
#: may use (its cgroup's limit, else the machine's memory), read once at import.
DEFAULT_CACHE_BYTES = cache_budget(_process_memory_limit())
#: Seconds a :class:`DecodeCache` keeps an entry no load has used, by default.
DEFAULT_CACHE_IDLE = 300.0

# What an entry costs besides its record, measured with tracemalloc over chat, tool and many-part
# messages (docs/performance.md): about 200 bytes, up to 300 more for each content part other
# than plain text (a plain text part is its text, a few bytes besides), and up to the record's
# length again for the text and the JSON values a part keeps frozen (function arguments, results).
_ENTRY_COST = 256
_PART_COST = 320
_TEXT_PART_COST = 16
# Records longer than this are never kept.
_RECORD_LIMIT = 64 << 10
# Admission: while the cache has room (below _ROOM of its budget), every missed record is kept:
# nothing is evicted for it. Once full, while recent lookups missed more often than they hit, by
# more than _THRASH_MARGIN, only one missed record in _THRASH_SAMPLE is kept (docs/performance.md
# explains why: keeping costs more than decoding, and pays only when the record is read again
# before it is evicted). Lookups are counted over a window halved past _LOOKUP_WINDOW.
_ROOM = 15 / 16
_THRASH_SAMPLE = 16
_THRASH_MARGIN = 8192
_LOOKUP_WINDOW = 32768


# A hit marks its entry used again once its stamp is older than this share of max_idle.
_RENEW_SHARE = 8


# A shared message (see DecodeCache.share) is kept alive besides what rebuilds it: measured
# with tracemalloc, about 2 kB for a plain text message, most of it each Content's attribute
# dict (46 attributes); and its key holds the record once more.
_LIVE_MESSAGE_COST = 256
_LIVE_PART_COST = 1792


def _entry_cost(key: Hashable, value: Any) -> int:
    if type(key) is tuple:  # (log, record, occurrence) -> (message, prototype): a shared message
        record: bytes | str = cast(tuple[Any, ...], key)[1]
        parts: Prototype = cast(tuple[Any, ...], value)[1]
        texts, others = prototype_parts(parts)
        live = _LIVE_MESSAGE_COST + _LIVE_PART_COST * (texts + others)
        return 3 * len(record) + _ENTRY_COST + _PART_COST * others + _TEXT_PART_COST * texts + live
    texts, others = prototype_parts(value)
    return 2 * len(cast(bytes | str, key)) + _ENTRY_COST + _PART_COST * others + _TEXT_PART_COST * texts


def validate_cache_bytes(cache_bytes: int | str | None) -> int:
    """Return a decode cache size from code or a URL (``"0"``, ``"16777216"``); ``None`` is the default.

    Raises:
        ValueError: Not a whole non-negative number of bytes (:func:`~agent_stores.core.urls.parse_bytes`).
    """
    return DEFAULT_CACHE_BYTES if cache_bytes is None else parse_bytes(cache_bytes, option="cache_bytes")


def validate_cache_idle(cache_idle: float | str | None) -> float:
    """Return the seconds a decode cache keeps an unused entry, from code or a URL (``"60"``); ``None`` is the default.

    Raises:
        ValueError: Not a positive, finite number of seconds (:func:`~agent_stores.core.urls.parse_seconds`).
    """
    return DEFAULT_CACHE_IDLE if cache_idle is None else parse_seconds(cache_idle, option="cache_idle")


class DecodeCache:
    """Recently decoded records, and what rebuilds their messages without parsing them again.

    A rebuilt message shares nothing mutable with any other. Through :meth:`share` it also
    keeps the messages it returned for a log, and returns them again while they equal their
    records. Each entry is charged what it holds (measured: twice its record's length, plus
    256 bytes per entry, 320 per content part other than plain text and 16 per plain text part;
    a kept message besides about 2 kB per content part) against ``max_bytes``, so the cache's
    real size stays within it; records over 64 KiB are never kept, and the oldest entries go first.
    Every other missed record is kept while the cache has room; once it is full and recent lookups
    miss far more often than they hit, one in 16 is (keeping then evicts what may be read again).
    ``max_bytes=0`` keeps nothing. An entry no load has used for ``max_idle`` seconds (up to an
    eighth less) is forgotten by the next load (nothing runs in the background), so the
    budget is memory for the sessions in use: a process whose sessions went quiet gives it back.
    Owned by whoever made it (a history provider, or a backend for every provider it hands out);
    safe within one event loop, and from several threads a lost race costs at most a decode.

    Args:
        max_bytes: What the entries may cost in all (default :data:`DEFAULT_CACHE_BYTES`).
        max_idle: Seconds an unused entry is kept (default 300; ``None``: until evicted).
        clock: Seconds that never run backwards, for ``max_idle`` (default :func:`time.monotonic`).

    Raises:
        ValueError: ``max_bytes`` is negative or not an integer, or ``max_idle`` not a positive, finite number.
    """

    __slots__ = ("_hits", "_misses", "_sampled", "entries")

    def __init__(
        self,
        max_bytes: int = DEFAULT_CACHE_BYTES,
        *,
        max_idle: float | None = DEFAULT_CACHE_IDLE,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        #: Records -> prototypes, and (log, record, occurrence) -> (shared message, prototype).
        self.entries: BoundedCache[Hashable, Any] = BoundedCache(
            max_cost=max_bytes, cost=_entry_cost, max_idle=max_idle, clock=clock
        )
        self._hits = 0
        self._misses = 0
        self._sampled = 0

    @property
    def max_bytes(self) -> int:
        """The budget the entries share."""
        return self.entries.max_cost or 0

    @property
    def max_idle(self) -> float | None:
        """Seconds an entry no load uses is kept (``None``: until evicted)."""
        return self.entries.max_idle

    def _stale(self) -> tuple[float, float]:
        # Forget the idle entries; return the time now, and the time before which a hit marks its
        # entry used again (an eighth of the idle time ago: a hit reads one stamp, and moves its
        # entry at most that often), so an entry goes between 7/8 and all of max_idle after its last use.
        entries = self.entries
        idle = entries.max_idle
        if idle is None:
            return 0.0, -math.inf
        now = entries.expire()
        return now, now - idle / _RENEW_SHARE

    def decode(self, records: Iterable[bytes | str], where: str) -> list[Message]:
        """:func:`decode_messages` through this cache."""
        messages: list[Message] = []
        append = messages.append
        recall = self.entries.peek
        now, stale = self._stale()
        renew = self.entries.renew
        stamp = self.entries.stamps.get
        sample = self._sample()
        hits = 0
        for position, record in enumerate(records):
            kind = type(record)
            if kind is bytes or kind is str:
                parts = recall(record)
                if parts is not None:
                    hits += 1
                    if stamp(record, stale) < stale:
                        renew(record, now)
                    append(from_prototype(parts))
                    continue
            message, parts = self._decode_new(record, where, position, sample)
            if parts is not None:
                self.entries.put(record, parts)
            append(message)
        self._count(hits)
        return messages

    def share(self, records: Iterable[bytes | str], where: str, log: Hashable) -> list[Message]:
        """:func:`decode_messages` through this cache, returning the messages of ``log`` it kept when unchanged."""
        messages: list[Message] = []
        append = messages.append
        recall = self.entries.peek
        put = self.entries.put
        now, stale = self._stale()
        renew = self.entries.renew
        stamp = self.entries.stamps.get
        sample = self._sample()
        hits = 0
        seen: dict[bytes | str, int] = {}  # occurrences so far of each record in this load
        for position, record in enumerate(records):
            kind = type(record)
            if kind is not bytes and kind is not str:
                append(self._decode_new(record, where, position, sample)[0])  # never kept: nothing to key it by
                continue
            occurrence = seen.get(record, 0)
            seen[record] = occurrence + 1
            key = (log, record, occurrence)
            kept: tuple[Message, Prototype] | None = recall(key)
            if kept is not None:
                hits += 1
                message, parts = kept
                if not unchanged(message, parts):  # changed by a caller: never served again
                    message = from_prototype(parts)
                    put(key, (message, parts))
                elif stamp(key, stale) < stale:
                    renew(key, now)
                append(message)
                continue
            parts = recall(record)
            if parts is not None:
                hits += 1
                if stamp(record, stale) < stale:
                    renew(record, now)
                message = from_prototype(parts)
            else:
                message, parts = self._decode_new(record, where, position, sample)
                if parts is None:
                    append(message)
                    continue
            put(key, (message, parts))
            append(message)
        self._count(hits)
        return messages

    def _sample(self) -> int:
        # Every missed record is kept while the cache has room; once it is full, while recent
        # lookups missed far more often than they hit, one missed record in _THRASH_SAMPLE.
        if self._misses <= self._hits + _THRASH_MARGIN:
            return 1
        entries = self.entries
        return 1 if entries.cost < (entries.max_cost or 0) * _ROOM else _THRASH_SAMPLE

    def _decode_new(
        self, record: bytes | str, where: str, position: int, sample: int
    ) -> tuple[Message, Prototype | None]:
        """Decode a record this cache holds nothing for: its message, and what rebuilds it when it is to be kept."""
        payload = _payload(record)
        message = _fast_decode(cast(dict[str, Any], payload)) if type(payload) is dict else None
        if message is None:
            return decode_message(record, where=f"{where} #{position}"), None
        kind = type(record)
        if (kind is not bytes and kind is not str) or len(record) > _RECORD_LIMIT:
            return message, None
        self._misses += 1
        self._sampled += 1
        if self._sampled % sample:
            return message, None
        return message, prototype(message)

    def _count(self, hits: int) -> None:
        # Misses are counted as they happen (_decode_new); lookups over a window halved past _LOOKUP_WINDOW.
        self._hits += hits
        if self._hits + self._misses > _LOOKUP_WINDOW:
            self._hits >>= 1
            self._misses >>= 1

    def clear(self) -> None:
        """Forget every entry."""
        self.entries.clear()

    def __repr__(self) -> str:
        return f"DecodeCache({len(self.entries)} records, {self.entries.cost} of {self.max_bytes} bytes)"


def message_digest(message: Message) -> str:
    """Return a 23-character digest of the message's identity as the framework defines it.

    Two messages have equal digests exactly when the framework's ``get_message_identity``
    calls them equal (up to a 128-bit hash collision): the message id when there is one, else
    the role and the serialised contents. The first character records the identity's kind and
    whether it is a user message without id, the one fact about a stored message that
    ``filter_new_messages`` looks at besides identity. ``tests/test_core_rules.py`` checks the
    equivalence against ``get_message_identity`` itself.
    """
    return _digest(message, None)


def _digest(message: Message, payload: dict[str, Any] | None) -> str:
    message_id = getattr(message, "message_id", None)
    if message_id is None:
        message_id = getattr(message, "id", None)
    if message_id is not None:
        tag, identity = _ID_TAG, b"id\0" + str(message_id).encode("utf-8")
    else:
        role = str(message.role)
        tag = _USER_TAG if role == "user" else _OTHER_TAG
        identity = b"content\0" + role.encode("utf-8") + b"\0" + _contents_identity(message, payload)
    hashed = hashlib.blake2b(identity, digest_size=16).digest()
    return tag + base64.urlsafe_b64encode(hashed).rstrip(b"=").decode("ascii")


def _contents_identity(message: Message, payload: dict[str, Any] | None) -> bytes:
    # The framework compares json.dumps([c.to_dict() ...], sort_keys=True); msgspec's sorted
    # JSON of the same dicts is equal exactly when that is, except that it writes NaN and None
    # alike (null), so any null defers to the framework's own identity.
    contents = payload.get("contents", []) if payload is not None else [c.to_dict() for c in message.contents]
    try:
        encoded = _SORTED_ENCODER.encode(contents)
    except (TypeError, ValueError):
        encoded = b"null"
    if b"null" in encoded:
        return json.dumps(get_message_identity(message), ensure_ascii=False).encode("utf-8")
    return encoded


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
    if not set(stored_tail).intersection(incoming):
        # Every branch of filter_new_messages that keeps back a message compares one stored
        # identity equal to one incoming identity; with none in common it keeps all.
        return 0
    existing = [_DigestMessage(d) for d in stored_tail]
    fresh = filter_new_messages(cast(Any, existing), cast(Any, [_DigestMessage(d) for d in incoming]))
    return len(incoming) - len(fresh)
