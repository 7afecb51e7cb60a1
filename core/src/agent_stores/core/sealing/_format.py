"""The sealed value format: a marker, the data key's id, a record position, a nonce and AES-256-GCM output.

A sealed value is ``MARKER | kind | id length | data key id | [position] | nonce | ciphertext``.
The marker's first byte (``0x89``) never starts UTF-8 text, and every value the stores write in
plaintext (JSON records, snapshots, text files) is UTF-8, so a plaintext value written before
sealing was switched on is told apart by its first byte. The associated data is the header and
the key the value is stored under, so a value copied to another key, tenant, kind or position
fails authentication.
"""

from __future__ import annotations

import base64
import binascii
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM, AESSIV
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from ..drivers import LogRecord
from ..errors import CorruptRecordError
from ..sealmark import VALUE_MARKER

__all__ = [
    "DIGEST_MARKER",
    "MARKER",
    "DataKey",
    "is_sealed",
    "is_sealed_digest",
    "sealed_key_id",
]

#: The first bytes of every sealed value (format 1).
MARKER = VALUE_MARKER
#: The first character of every sealed digest (plain digests start with a letter).
DIGEST_MARKER = "~"

_OBJECT = 0x4F  # "O": an object driver's value
_LOG = 0x4C  # "L": a log record, with its position
_NONCE = 12
_POSITION = struct.Struct(">Q")
_DERIVED = 32 + 64  # an AES-256-GCM key and an AES-SIV (2 x 256-bit) key
_INFO = b"agent-stores sealing v1"


def is_sealed(data: bytes) -> bool:
    """Whether ``data`` is a sealed value (else a plaintext value written before sealing)."""
    return data[:4] == MARKER


def is_sealed_digest(digest: str) -> bool:
    """Whether a stored de-duplication digest is sealed (``~<data key id>.<AES-SIV>``).

    The plain digests of compaction records (``~compaction``, ``~compaction-seal``) start with
    the marker too but hold no ``.``: a log written before sealing keeps them in plaintext.
    """
    return digest[:1] == DIGEST_MARKER and "." in digest


def sealed_key_id(data: bytes, *, where: str) -> str:
    """The id of the data key a sealed value needs.

    Raises:
        CorruptRecordError: ``data`` is not a well-formed sealed value.
    """
    return _split(data, where=where)[1]


def digest_key_id(digest: str, *, where: str) -> str:
    """The id of the data key a sealed digest needs.

    Raises:
        CorruptRecordError: ``digest`` is not a well-formed sealed digest.
    """
    kid, dot, _ = digest[1:].partition(".")
    if not dot or not kid:
        raise CorruptRecordError(f"{where} has a malformed sealed digest")
    return kid


def split_header(data: bytes, *, where: str) -> tuple[int, str, int | None, int]:
    """(kind, key id, position, offset of the nonce) of a sealed value.

    Raises:
        CorruptRecordError: ``data`` is not a well-formed sealed value.
    """
    return _split(data, where=where)


def _split(data: bytes, *, where: str) -> tuple[int, str, int | None, int]:
    """(kind, key id, position, offset of the nonce) of a sealed value."""
    try:
        kind, length = data[4], data[5]
        kid = data[6 : 6 + length].decode("ascii")
        offset = 6 + length
        position = None
        if kind == _LOG:
            (position,) = _POSITION.unpack_from(data, offset)
            offset += _POSITION.size
        elif kind != _OBJECT:
            raise ValueError(kind)
    except (IndexError, UnicodeDecodeError, struct.error, ValueError) as err:
        raise CorruptRecordError(f"{where} has a malformed sealing header") from err
    if len(kid) != length or len(data) < offset + _NONCE + 16:
        raise CorruptRecordError(f"{where} is truncated")
    return kind, kid, position, offset


def _associated(header: bytes, key: str) -> bytes:
    return header + key_suffix(key)


def key_suffix(key: str) -> bytes:
    """What follows a value's header in its associated data: a separator and the key it is stored under."""
    return b"\x00" + key.encode("utf-8", "surrogatepass")


_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FAILS = "{where} fails authentication: it was altered, or copied from another key, tenant or position"


@dataclass(frozen=True, slots=True)
class DataKey:
    """One unwrapped data key: its id and the ciphers derived from it (HKDF-SHA256)."""

    kid: str
    aead: AESGCM
    siv: AESSIV
    #: The id as bytes, and the start of every log record's header (marker, kind, id): made once, not per record.
    kid_bytes: bytes = field(init=False, repr=False, compare=False)
    log_prefix: bytes = field(init=False, repr=False, compare=False)
    #: The start of every digest this key seals (marker, id, dot).
    digest_start: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        kid = self.kid.encode("ascii")
        object.__setattr__(self, "kid_bytes", kid)
        object.__setattr__(self, "log_prefix", MARKER + bytes((_LOG, len(kid))) + kid)
        object.__setattr__(self, "digest_start", f"{DIGEST_MARKER}{self.kid}.")

    @classmethod
    def derive(cls, kid: str, material: bytes) -> DataKey:
        """The ciphers of the 32 bytes ``material`` under the id ``kid``.

        Raises:
            ValueError: ``material`` is not 32 bytes, or ``kid`` is not 1-64 ASCII characters.
        """
        if len(material) != 32:
            raise ValueError("a data key is 32 bytes")
        if not 0 < len(kid) <= 64 or not kid.isascii() or "." in kid:
            raise ValueError(f"a data key id is 1-64 ASCII characters without '.', got {kid!r}")
        derived = HKDF(algorithm=hashes.SHA256(), length=_DERIVED, salt=None, info=_INFO).derive(material)
        return cls(kid, AESGCM(derived[:32]), AESSIV(derived[32:]))

    def seal(self, key: str, data: bytes, *, position: int | None = None) -> bytes:
        """Seal ``data`` stored under ``key`` (and at ``position`` of a log)."""
        if position is not None:
            header = self.log_prefix + _POSITION.pack(position)
        else:
            header = MARKER + bytes((_OBJECT, len(self.kid_bytes))) + self.kid_bytes
        nonce = os.urandom(_NONCE)
        return header + nonce + self.aead.encrypt(nonce, data, _associated(header, key))

    def seal_records(self, key: str, records: Sequence[LogRecord], start: int) -> list[LogRecord]:
        """The records of the log ``key`` as stored from position ``start`` on: payloads and digests sealed.

        Each payload as :meth:`seal` at its position and each digest as :meth:`seal_digest`,
        with what the records share (header start, associated data, nonces drawn in one call)
        made once.
        """
        prefix, suffix, encrypt, pack = self.log_prefix, key_suffix(key), self.aead.encrypt, _POSITION.pack
        siv, associated, digest_start = self.siv.encrypt, [self.kid_bytes, suffix[1:]], self.digest_start
        b2a, urlsafe = binascii.b2a_base64, _URLSAFE
        nonces = os.urandom(_NONCE * len(records))
        sealed: list[LogRecord] = []
        append = sealed.append
        at = 0
        for digest, payload in records:
            header = prefix + pack(start)
            nonce = nonces[at : at + _NONCE]
            encoded = b2a(siv(digest.encode(), associated), newline=False).translate(urlsafe).rstrip(b"=")
            sealed_payload = header + nonce + encrypt(nonce, payload, header + suffix)
            append(LogRecord(digest_start + encoded.decode(), sealed_payload))
            start += 1
            at += _NONCE
        return sealed

    def open_record(self, suffix: bytes, data: bytes, *, where: str) -> tuple[bytes, int]:
        """:meth:`open` of a log record known to start with :attr:`log_prefix` (the header this key writes).

        ``suffix`` is :func:`key_suffix` of the log's key, made once per read.

        Raises:
            CorruptRecordError: As :meth:`open`.
        """
        offset = len(self.log_prefix) + _POSITION.size
        if len(data) < offset + _NONCE + 16:
            raise CorruptRecordError(f"{where} is truncated")
        try:
            plain = self.aead.decrypt(data[offset : offset + _NONCE], data[offset + _NONCE :], data[:offset] + suffix)
        except InvalidTag as err:
            raise CorruptRecordError(_FAILS.format(where=where)) from err
        return plain, _POSITION.unpack_from(data, offset - _POSITION.size)[0]

    def open(self, key: str, data: bytes, *, where: str) -> tuple[bytes, int | None]:
        """Return the plaintext of a sealed value stored under ``key`` and its position (``None`` for an object).

        Raises:
            CorruptRecordError: The value is malformed, truncated, altered, sealed with another
                key, or sealed for another key, kind or position.
        """
        return self.open_split(key, data, _split(data, where=where), where=where)

    def open_split(
        self, key: str, data: bytes, split: tuple[int, str, int | None, int], *, where: str
    ) -> tuple[bytes, int | None]:
        """:meth:`open` for a value whose header :func:`split_header` already read."""
        _, kid, position, offset = split
        if kid != self.kid:
            raise CorruptRecordError(f"{where} is sealed with data key {kid!r}, not {self.kid!r}")
        header, nonce, sealed = data[:offset], data[offset : offset + _NONCE], data[offset + _NONCE :]
        try:
            return self.aead.decrypt(nonce, sealed, _associated(header, key)), position
        except InvalidTag as err:
            raise CorruptRecordError(_FAILS.format(where=where)) from err

    def seal_digest(self, key: str, digest: str) -> str:
        """A de-duplication digest as stored: deterministic (AES-SIV) under this key, bound to the log ``key``."""
        sealed = self.siv.encrypt(digest.encode("utf-8"), [self.kid_bytes, key.encode("utf-8", "surrogatepass")])
        return f"{DIGEST_MARKER}{self.kid}.{base64.urlsafe_b64encode(sealed).rstrip(b'=').decode('ascii')}"

    def open_digest(self, key: str, digest: str, *, where: str) -> str:
        """The plain digest of a sealed one.

        Raises:
            CorruptRecordError: The digest is malformed, altered or sealed for another log.
        """
        kid, _, encoded = digest[1:].partition(".")
        if kid != self.kid:
            raise CorruptRecordError(f"{where} has a digest sealed with data key {kid!r}, not {self.kid!r}")
        try:
            sealed = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4))
            return self.siv.decrypt(sealed, [kid.encode("ascii"), key.encode("utf-8", "surrogatepass")]).decode("utf-8")
        except (InvalidTag, ValueError) as err:
            raise CorruptRecordError(f"{where} has a digest that fails authentication") from err
