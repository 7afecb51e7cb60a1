"""Compacted views kept per log, so a load folds only the records stored since the last one.

Folding a compacted log applies every compaction record again, and compaction records restate
the annotations of every message they touch, so a long compacted session costs far more to load
than its messages. A :class:`FoldCache` keeps, per log, the records it folded and the view they
made (each message's annotations and id; messages a compaction added or rewrote whole). When the
next read starts with the same records, the view is rebuilt from that (stored messages through
the decode cache) and only the newer records are folded onto it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple, cast

import msgspec
from agent_framework import Message

from .cache import BoundedCache
from .codec import DecodeCache, decode_messages
from .compaction import fold_onto

__all__ = ["FoldCache"]

_ENCODER = msgspec.json.Encoder()
_DECODER = msgspec.json.Decoder()

# A view element's key, as the compaction module makes them: ("m", record index) or ("s", index, j).
_Key = tuple[Any, ...]


class _Folded(NamedTuple):
    payloads: Sequence[bytes | str]
    keys: list[_Key]
    replaced: frozenset[_Key]
    frozen: bytes  # per view element: [properties, message id] of a stored message, else its whole dict

    @property
    def cost(self) -> int:
        return sum(len(p) for p in self.payloads) + 2 * len(self.frozen) + 64 * len(self.keys)


def _freeze(payloads: Sequence[bytes | str], keys: list[_Key], view: list[Message], replaced: set[_Key]) -> _Folded:
    parts: list[Any] = [
        [m.additional_properties, m.message_id] if k[0] == "m" and k not in replaced else m.to_dict()
        for k, m in zip(keys, view, strict=True)
    ]
    return _Folded(payloads, list(keys), frozenset(replaced), _ENCODER.encode(parts))


def _thaw(folded: _Folded, where: str, cache: DecodeCache | None) -> list[Message]:
    parts: list[Any] = _DECODER.decode(folded.frozen)
    records: list[bytes | str] = [
        folded.payloads[cast(int, k[1])] for k in folded.keys if k[0] == "m" and k not in folded.replaced
    ]
    stored = iter(decode_messages(records, where=where, cache=cache))
    view: list[Message] = []
    for key, part in zip(folded.keys, parts, strict=True):
        if key[0] == "m" and key not in folded.replaced:
            message = next(stored)
            message.additional_properties = cast(dict[str, Any], part[0])
            message.message_id = part[1]
        else:
            message = Message.from_dict(cast(dict[str, Any], part))
        view.append(message)
    return view


class FoldCache:
    """The folded views of recently loaded compacted logs, bounded by what they hold.

    Each entry keeps the records it folded (to recognise them at the start of the next read)
    and the view's annotations; it is charged their size against ``max_bytes`` (``0`` keeps
    nothing), and forgotten once no load used it for ``max_idle`` seconds. Every load returns
    new ``Message`` objects, which callers may change freely.
    """

    __slots__ = ("_entries",)

    def __init__(self, max_bytes: int, *, max_idle: float | None = None) -> None:
        self._entries: BoundedCache[str, _Folded] = BoundedCache(
            max_cost=max_bytes, cost=lambda _k, v: v.cost, max_idle=max_idle
        )

    def view(
        self, key: str, payloads: Sequence[bytes | str], *, where: str, cache: DecodeCache | None
    ) -> list[Message]:
        """Return the view of the log ``key`` whose records are ``payloads`` (all of them, oldest first).

        Raises:
            CorruptRecordError: A record cannot be decoded.
        """
        known = self._entries.get(key)
        keys: list[_Key] = []
        view: list[Message] = []
        replaced: set[_Key] = set()
        start = 0
        if known is not None and len(known.payloads) <= len(payloads) and _same_start(known.payloads, payloads):
            keys, view, replaced, start = (
                list(known.keys),
                _thaw(known, where, cache),
                set(known.replaced),
                len(known.payloads),
            )
        fold_onto(payloads, start, keys, view, replaced, where=where, cache=cache)
        if start < len(payloads) or known is None:
            self._entries.put(key, _freeze(list(payloads), keys, view, replaced))
        return view

    def forget(self, key: str) -> None:
        """Drop what is kept of the log ``key``."""
        self._entries.pop(key)


def _same_start(known: Sequence[bytes | str], payloads: Sequence[bytes | str]) -> bool:
    # A log deleted and written again may hold as many records: compare them, not only the count.
    return all(a == b for a, b in zip(known, payloads, strict=False))
