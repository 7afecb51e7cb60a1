"""Compaction kept in the history log: what a framework strategy decided, appended as a record.

A compaction record sits in a session's log beside the message records. It holds what one
run of a framework compaction strategy changed in the session's view: the new
``additional_properties`` of the messages it annotated (``_excluded``, ``_group``,
``_summarized_by_summary_id`` ...), the messages whose content it rewrote, the messages it took
out of the list, and the messages it added (a summary) with where they stand. A load folds the
records over the messages in log order, so the model sees the compacted view while the log keeps
every message verbatim (see ``docs/compaction.md``).

A record names a message by how far back in the log it lies (``[n]``: the record ``n``
positions earlier), and a message an earlier compaction added by ``[n, j]`` (the ``j``-th
message added by the compaction record ``n`` positions earlier), so a window of the newest
records resolves what lies inside it without knowing the log's length.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import msgspec
from agent_framework import (
    EXCLUDED_KEY,
    GROUP_ANNOTATION_KEY,
    CompactionProvider,
    CompactionStrategy,
    Message,
    TokenizerProtocol,
    apply_compaction,
)

from .codec import DecodeCache, decode_messages
from .errors import CorruptRecordError, StoreConflictError

if TYPE_CHECKING:
    from .history import LogHistoryProvider

__all__ = [
    "COMPACTION_DIGEST",
    "SEAL_DIGEST",
    "CompactionRecord",
    "StoreCompactionProvider",
    "compaction_diff",
    "encode_compaction",
    "fold_records",
    "has_compaction_records",
    "is_compaction_record",
    "message_digests_only",
]

#: The identity digest stored beside every compaction record; de-duplication never compares it.
COMPACTION_DIGEST = "~compaction"
#: The identity digest of a retention's seal (see :mod:`agent_stores.core.retain`), never compared either.
SEAL_DIGEST = "~compaction-seal"

_PREFIX = b'{"type":"compaction",'
_PREFIX_STR = _PREFIX.decode()
_FORMAT = 1
_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder()

# Compactions that lose to concurrent saves re-read the log and decide again, this many times.
_COMPACT_ATTEMPTS = 8
_BACKOFF_CAP_S = 0.05

# A view element's key: ("m", record index) for a stored message, ("s", record index, j) for
# the j-th message added by the compaction record at that index.
_Key = tuple[Any, ...]


def is_compaction_record(payload: bytes | str) -> bool:
    """Return whether a stored record is a compaction record (not a message)."""
    return payload.startswith(_PREFIX_STR) if isinstance(payload, str) else payload.startswith(_PREFIX)


def has_compaction_records(payloads: Sequence[bytes | str]) -> bool:
    """Return whether any of the stored records is a compaction record (on every load: kept lean)."""
    try:
        return any(p.startswith(_PREFIX) for p in cast(Sequence[bytes], payloads))
    except TypeError:  # records as str
        return any(is_compaction_record(p) for p in payloads)


def message_digests_only(digests: Sequence[str]) -> list[str]:
    """Return ``digests`` without those of compaction records (what de-duplication compares)."""
    return [d for d in digests if d != COMPACTION_DIGEST and d != SEAL_DIGEST]


class CompactionRecord(NamedTuple):
    """A stored compaction record as a history export holds it: its bytes, verbatim.

    Its references are relative to its own place in the log, so a copy of a log that keeps
    every record in order (messages and compaction records) has the same view.
    """

    payload: bytes


@dataclass
class CompactionDiff:
    """What one strategy run changed in a view, as references relative to the new record."""

    props: list[list[Any]] = field(default_factory=list[list[Any]])
    replace: list[list[Any]] = field(default_factory=list[list[Any]])
    drop: list[list[int]] = field(default_factory=list[list[int]])
    insert: list[list[Any]] = field(default_factory=list[list[Any]])

    def decides(self) -> bool:
        """Whether the strategy changed what the model sees (more than group annotations)."""
        if self.replace or self.drop or self.insert:
            return True
        return any(_decided(before, after) for _, after, before, _ in self.props)


def _decided(before: dict[str, Any], after: dict[str, Any]) -> bool:
    # Group annotations and an explicit "not excluded" are bookkeeping the framework redoes on every run.
    for name in {*before, *after} - {GROUP_ANNOTATION_KEY}:
        old, new = before.get(name), after.get(name)
        if old != new and not (name == EXCLUDED_KEY and bool(old) == bool(new)):
            return True
    return False


def encode_compaction(diff: CompactionDiff) -> bytes:
    """Encode ``diff`` as a compaction record."""
    return _ENCODER.encode(
        {
            "type": "compaction",
            "format": _FORMAT,
            "props": [[ref, props, message_id] for ref, props, _, message_id in diff.props],
            "replace": diff.replace,
            "drop": diff.drop,
            "insert": diff.insert,
        }
    )


def _resolve(ref: Any, at: int) -> _Key | None:
    # Hot on loads of compacted sessions: plain type checks, no generic validation.
    if type(ref) is not list:
        raise ValueError(f"bad reference {ref!r}")
    parts = cast(list[Any], ref)
    back = parts[0]
    if type(back) is not int or (len(parts) == 2 and type(parts[1]) is not int) or len(parts) > 2:
        raise ValueError(f"bad reference {ref!r}")
    index = at - back
    if index < 0:
        return None
    return ("m", index) if len(parts) == 1 else ("s", index, parts[1])


def _ref(key: _Key, at: int) -> list[int]:
    return [at - key[1]] if key[0] == "m" else [at - key[1], key[2]]


def fold_records(
    payloads: Sequence[bytes | str], *, where: str, cache: DecodeCache | None = None
) -> tuple[list[_Key], list[Message]]:
    """Return the view of a log: its messages with every compaction record applied, and their keys.

    References to records before the first of ``payloads`` (a window of the newest records)
    are ignored, and so are the messages a compaction added before them.

    Raises:
        CorruptRecordError: A record cannot be decoded.
    """
    keys: list[_Key] = []
    view: list[Message] = []
    fold_onto(payloads, 0, keys, view, set(), where=where, cache=cache)
    return keys, view


def fold_onto(
    payloads: Sequence[bytes | str],
    start: int,
    keys: list[_Key],
    view: list[Message],
    replaced: set[_Key],
    *,
    where: str,
    cache: DecodeCache | None = None,
) -> None:
    """Fold ``payloads[start:]`` onto the view of ``payloads[:start]`` (``keys``, ``view``), in place.

    ``replaced`` collects the keys of stored messages a compaction rewrote (their view is not
    their stored record any more).

    Raises:
        CorruptRecordError: A record cannot be decoded.
    """
    message_at = [i for i in range(start, len(payloads)) if not is_compaction_record(payloads[i])]
    decoded = decode_messages([payloads[i] for i in message_at], where=where, cache=cache)
    by_index = dict(zip(message_at, decoded, strict=True))
    for index in range(start, len(payloads)):
        message = by_index.get(index)
        if message is not None:
            keys.append(("m", index))
            view.append(message)
            continue
        try:
            _apply(payloads[index], index, keys, view, replaced)
        except (msgspec.DecodeError, TypeError, ValueError, KeyError, AttributeError, IndexError) as err:
            raise CorruptRecordError(f"{where} #{index} is not a valid compaction record") from err


def _apply(payload: bytes | str, at: int, keys: list[_Key], view: list[Message], replaced: set[_Key]) -> None:
    record: dict[str, Any] = _DECODER.decode(payload)
    position = {key: i for i, key in enumerate(keys)}
    for ref, props, message_id in record["props"]:
        i = position.get(_resolve(ref, at) or ())
        if i is not None:
            view[i].additional_properties = dict(cast(dict[str, Any], props))
            if message_id is not None:
                view[i].message_id = message_id
    for ref, payload_dict in record["replace"]:
        i = position.get(_resolve(ref, at) or ())
        if i is not None:
            view[i] = Message.from_dict(cast(dict[str, Any], payload_dict))
            replaced.add(keys[i])
    dropped = {_resolve(ref, at) for ref in record["drop"]}
    if dropped:
        kept = [(k, m) for k, m in zip(keys, view, strict=True) if k not in dropped]
        keys[:] = [k for k, _ in kept]
        view[:] = [m for _, m in kept]
    position = {key: i for i, key in enumerate(keys)}
    placed: list[tuple[int, int, Message]] = []
    for j, (anchor, payload_dict) in enumerate(record["insert"]):
        where = len(keys) if anchor is None else position.get(_resolve(anchor, at) or ())
        if where is not None:  # else it stands before a window of the newest records: not loaded
            placed.append((where, j, Message.from_dict(cast(dict[str, Any], payload_dict))))
    for where, j, added in sorted(placed, key=lambda p: (p[0], p[1]), reverse=True):
        keys.insert(where, ("s", at, j))
        view.insert(where, added)


def compaction_diff(
    keys: Sequence[_Key],
    before: Sequence[dict[str, Any]],
    originals: Sequence[Message],
    after: Sequence[Message],
    at: int,
) -> CompactionDiff:
    """Return what turned the view ``originals`` (``before``: their ``to_dict()`` then) into ``after``.

    ``at`` is the log position the record describing it will take.
    """
    diff = CompactionDiff()
    key_of = {id(m): k for k, m in zip(keys, originals, strict=True)}
    present = {id(m) for m in after}
    for key, message, old in zip(keys, originals, before, strict=True):
        if id(message) not in present:
            diff.drop.append(_ref(key, at))
            continue
        new = message.to_dict()
        if new == old:
            continue
        new_props = cast(dict[str, Any], new.get("additional_properties") or {})
        old_props = cast(dict[str, Any], old.get("additional_properties") or {})
        # The framework gives a message without an id one (``msg_<n>``); the id is kept with the annotations.
        same_id = new.get("message_id") == old.get("message_id") or old.get("message_id") is None
        unchanged = {**new, "additional_properties": None, "message_id": None} == {
            **old,
            "additional_properties": None,
            "message_id": None,
        }
        if unchanged and same_id:
            diff.props.append([_ref(key, at), new_props, old_props, new.get("message_id")])
        else:
            diff.replace.append([_ref(key, at), new])
    pending: list[dict[str, Any]] = []
    for message in after:
        key = key_of.get(id(message))
        if key is None:
            pending.append(message.to_dict())
            continue
        diff.insert.extend([_ref(key, at), p] for p in pending)
        pending = []
    diff.insert.extend([None, p] for p in pending)
    return diff


async def compact_session(
    provider: LogHistoryProvider,
    session_id: str | None,
    strategy: CompactionStrategy,
    *,
    tokenizer: TokenizerProtocol | None = None,
) -> bool:
    """Run ``strategy`` on the session's stored view and append what it decided; see ``LogHistoryProvider.compact``."""
    key = provider.keys.history(provider.source_id, session_id)
    for attempt in range(_COMPACT_ATTEMPTS):
        tail = await provider.driver.tail(key, 1)
        if tail.digests == [SEAL_DIGEST]:  # a retention is swapping the log: wait for it
            await asyncio.sleep(random.uniform(0, min(_BACKOFF_CAP_S, 0.001 * 2**attempt)))
            continue
        payloads = await provider.driver.read(key)
        if len(payloads) != tail.length:
            continue  # a save landed between the two reads: read again
        keys, view = fold_records(payloads, where=f"history record in {key!r}", cache=provider.decode_cache)
        if not view:
            return False
        before = [m.to_dict() for m in view]
        working = list(view)
        await apply_compaction(working, strategy=strategy, tokenizer=tokenizer)
        diff = compaction_diff(keys, before, view, working, len(payloads))
        if not diff.decides():
            return False
        try:
            await provider.append_compaction(
                key, session_id or "", encode_compaction(diff), expected_version=tail.version
            )
        except StoreConflictError:
            await asyncio.sleep(random.uniform(0, min(_BACKOFF_CAP_S, 0.001 * 2**attempt)))
            continue
        return True
    raise StoreConflictError(f"gave up compacting {key!r} after {_COMPACT_ATTEMPTS} conflicting saves")


class StoreCompactionProvider(CompactionProvider):
    """The framework's ``CompactionProvider`` whose after-run phase compacts the stored history.

    After each user turn it runs ``after_strategy`` on the session's stored view (the
    messages with every earlier compaction applied) and appends what the strategy decided to
    the log under the version it read: a save that lands meanwhile makes it read the new tail
    and decide again, so it never loses a message or stores a summary of an outdated
    transcript. The next load (``get_messages``) returns the compacted view; the log keeps
    every message. ``before_strategy`` works as in the framework (it compacts the loaded
    context before the model call and stores nothing).

    Args:
        history: The store whose sessions it compacts.
        before_strategy: As ``CompactionProvider``'s.
        after_strategy: The strategy whose decisions are stored after each turn.
        tokenizer: As ``CompactionProvider``'s.
        source_id: Provider id (default ``"compaction"``).
        retain: After storing a decision, drop the messages it excluded from the store
            (:meth:`LogHistoryProvider.retain`: opt-in retention; by default the log keeps them).
    """

    def __init__(
        self,
        history: LogHistoryProvider,
        *,
        before_strategy: CompactionStrategy | None = None,
        after_strategy: CompactionStrategy | None = None,
        tokenizer: TokenizerProtocol | None = None,
        source_id: str = "compaction",
        retain: bool = False,
    ) -> None:
        super().__init__(
            before_strategy=before_strategy,
            after_strategy=after_strategy,
            tokenizer=tokenizer,
            source_id=source_id,
            history_source_id=history.source_id,
        )
        self.history = history
        self.retain = retain

    async def after_run(self, *, agent: Any, session: Any, context: Any, state: dict[str, Any]) -> None:
        """Compact the stored history of the turn's session and store what the strategy decided."""
        if self.after_strategy is None:
            return
        session_id = getattr(context, "session_id", None) or getattr(session, "session_id", None)
        if await self.history.compact(session_id, self.after_strategy, tokenizer=self.tokenizer) and self.retain:
            await self.history.retain(session_id)
