"""The object log's stored format: segment, checkpoint and tail objects, their names, and versions."""

from __future__ import annotations

import hashlib
import os
import re
from functools import lru_cache
from typing import NamedTuple

import msgspec

from ..drivers import LogVersion

__all__ = [
    "CHECKPOINT",
    "FLOOR",
    "LOG_OBJECT",
    "PAST_LOG",
    "SEGMENT",
    "SEQ_DIGITS",
    "SEQ_TOP",
    "SNAPSHOT_OBJECT",
    "TAIL",
    "TOKEN_BYTES",
    "Checkpoint",
    "Head",
    "LogNames",
    "Segment",
    "Tail",
    "decode_checkpoint",
    "decode_segment",
    "decode_tail",
    "encode",
    "key_tag",
    "new_token",
    "parse_version",
    "seq_of",
    "try_decode",
    "version",
]

SEQ_DIGITS = 20
SEQ_TOP = 10**SEQ_DIGITS - 1
SEGMENT = "s"
CHECKPOINT = "c"
FLOOR = "f"
TAIL = "t"
#: The leaf name of a segment or checkpoint: what marks a folder as a log.
LOG_OBJECT = re.compile(rf"[{SEGMENT}{CHECKPOINT}]\d{{{SEQ_DIGITS}}}")
#: The leaf name of a checkpoint or tail.
SNAPSHOT_OBJECT = re.compile(rf"[{CHECKPOINT}{TAIL}]\d{{{SEQ_DIGITS}}}")
#: Sorts after every object name of a log folder, so a listing can skip the rest of that log.
PAST_LOG = "/\x7f"
TOKEN_BYTES = 8


class Segment(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """One append (or a reset) of one log."""

    seq: int
    base: int  # sequence number of the first segment of this life of the log
    start: int  # records of this life before this segment
    session_id: str
    expires_at: float | None
    digests: list[str]
    payloads: list[bytes]
    # No segment below ``floor`` held records when this one was written (0: not known).
    floor: int = 0
    # Unique to the write, so a writer recognises its own segment after a lost answer.
    token: bytes = b""

    @property
    def end(self) -> int:
        """Records of this life up to and including this segment."""
        return self.start + len(self.digests)

    @property
    def is_reset(self) -> bool:
        """A segment that only ends the life before it (a delete, or an expiry purged)."""
        return self.base == self.seq and not self.digests

    @property
    def clean_below(self) -> int:
        """What this segment proves erased: no records below the returned sequence number."""
        if self.base <= 1 or self.floor >= self.base:
            return self.base
        return max(self.floor, 1)


class Checkpoint(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """Every record of one life of a log, up to and including segment ``seq``."""

    seq: int
    base: int
    digests: list[str]
    payloads: list[bytes]


class Tail(msgspec.Struct, array_like=True, forbid_unknown_fields=True):
    """The newest records of one life of a log, from record ``start`` up to and including segment ``seq``."""

    seq: int
    base: int
    start: int  # records of this life before the first one held here
    digests: list[str]
    payloads: list[bytes]

    @property
    def end(self) -> int:
        """Records of this life up to and including segment ``seq``."""
        return self.start + len(self.digests)


encode = msgspec.msgpack.Encoder().encode
decode_segment = msgspec.msgpack.Decoder(Segment).decode
decode_checkpoint = msgspec.msgpack.Decoder(Checkpoint).decode
decode_tail = msgspec.msgpack.Decoder(Tail).decode


def try_decode(data: bytes) -> Segment | None:
    """The segment in ``data``, or ``None`` for a blank (erased) or torn one."""
    if not data:
        return None
    try:
        return decode_segment(data)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


def new_token() -> bytes:
    """A random token making a write recognisable as its writer's own."""
    return os.urandom(TOKEN_BYTES)


def seq_of(name: str) -> int:
    """The sequence number an object name carries."""
    return SEQ_TOP - int(name[-SEQ_DIGITS:])


class LogNames:
    """The object names of the logs under ``prefix``: ``<prefix><key>/<kind><inverted seq>``.

    Sequence numbers are written inverted and zero-padded, so an ascending listing returns the
    newest object of a kind first.
    """

    __slots__ = ("prefix",)

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    def folder(self, key: str) -> str:
        """The folder holding every object of the log ``key``."""
        return f"{self.prefix}{key}/"

    def of(self, key: str, kind: str, seq: int) -> str:
        """The name of the object of ``kind`` at sequence number ``seq`` of the log ``key``."""
        return f"{self.prefix}{key}/{kind}{SEQ_TOP - seq:0{SEQ_DIGITS}d}"


@lru_cache(maxsize=4096)  # twice per append (the version checked, the new one made), for the few logs in use
def key_tag(key: str) -> str:
    """A short digest of ``key`` carried in its versions, so another log's version always conflicts."""
    return hashlib.blake2b(key.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def version(key: str, segment: Segment, length: int, clean_below: int) -> str:
    """The version naming ``segment``: its sequence number and what an append after it needs."""
    expires = "" if segment.expires_at is None else repr(segment.expires_at)
    return f"{segment.seq}:{segment.base}:{length}:{expires}:{key_tag(key)}:{clean_below}"


def parse_version(value: LogVersion) -> tuple[int, int, int, float | None, str, int]:
    """``(seq, base, length, expires_at, key tag, clean_below)`` of a version :func:`version` made.

    Raises:
        ValueError: ``value`` is not such a version.
    """
    try:
        parts = str(value).split(":")
        if len(parts) == 5:
            parts.append("0")  # a version of an earlier release: erasure not known
        seq, base, length, expiry, tag, clean_below = parts
        return int(seq), int(base), int(length), float(expiry) if expiry else None, tag, int(clean_below)
    except ValueError as err:
        raise ValueError(f"not a version of this log driver: {value!r}") from err


class Head(NamedTuple):
    """The newest segment of a log and what follows from it."""

    key: str
    segment: Segment
    live: bool

    @property
    def length(self) -> int:
        """Records of the log (0 when it is not live)."""
        return self.segment.end if self.live else 0

    @property
    def version(self) -> LogVersion:
        """The log's version (``None`` when it is not live)."""
        if not self.live:
            return None
        return version(self.key, self.segment, self.length, self.segment.clean_below)
