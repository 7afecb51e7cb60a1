"""The sealed-store marker: the root object saying a store is sealed, and the errors an open raises over it.

A sealed store keeps ``sealing/sealed.json`` at its root (written before its first data key,
or by the first sealed open of a store sealed without one). Every ``open_stores`` checks it
once, before the first operation of any store it hands out (:mod:`agent_stores.core.opencheck`):
an open without a key refuses a sealed store (:class:`SealedStoreError`), and a sealed open
refuses a store holding plaintext unless told to seal it from then on
(:class:`PlaintextStoreError`). This module needs no cryptography: plain opens import it only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Final

from .drivers import LogDriver, ObjectDriver
from .errors import CorruptRecordError, StoreConflictError, StoreError
from .keys import split_tenant
from .lifecycle import take_query_option
from .urls import parse_bool, parse_bytes, parse_count, parse_seconds

__all__ = [
    "ADOPT_PLAINTEXT",
    "KMS_KEY_ENV",
    "LOG_OBJECTS",
    "OPENED_BYTES",
    "SEALED_MARKER",
    "SEALING_SETTINGS",
    "VALUE_MARKER",
    "PlaintextStoreError",
    "SealMarker",
    "SealedStoreError",
    "SealingKeyError",
    "probe_store",
    "read_marker",
    "refuse_if_sealed",
    "take_sealing_options",
    "write_marker",
]

#: The object, at a store's root, that marks it as sealed.
SEALED_MARKER: Final = "sealing/sealed.json"
#: The first bytes of every sealed value (format 1); no UTF-8 text starts with them.
VALUE_MARKER: Final = b"\x89AS1"
#: The folder, in each scope, where an object store keeps its history logs (``ObjectLogDriver``'s).
LOG_OBJECTS: Final = "history/"
#: The option, in code and in a sealed store's URL, sizing what its log driver remembers opened (bytes).
OPENED_BYTES: Final = "opened_bytes"
#: The environment variable naming the AWS KMS key that seals every store opened.
KMS_KEY_ENV: Final = "AGENT_STORES_KMS_KEY_ID"
#: The option, in code and in a URL, that seals a store holding plaintext from now on.
ADOPT_PLAINTEXT: Final = "adopt_plaintext"
#: The settings of a sealed store (``Encryption``'s fields) a URL or ``open_stores`` may give
#: besides its key, each with its strict reader: the one ``Encryption`` applies to its fields.
SEALING_SETTINGS: Final[Mapping[str, Callable[[Any], Any]]] = {
    OPENED_BYTES: partial(parse_bytes, option=OPENED_BYTES),
    "plaintext_reads": partial(parse_bool, option="plaintext_reads"),
    "max_scopes": partial(parse_count, option="max_scopes"),
    "key_refresh": partial(parse_seconds, option="key_refresh", zero=True),  # 0: read the keys before each use
}

_FORMAT = "agent-stores-sealed/1"
_RESERVED = "sealing/"
_PROBED_OBJECTS = 64  # keys listed to find one value of a kind the stores write


class SealingKeyError(StoreError):
    """A key needed to seal or open data is not available: the key provider lacks it, or it is the wrong one."""


class SealedStoreError(SealingKeyError):
    """The store is sealed and was opened without a key: nothing is read or written.

    Attributes:
        key_id: The key-encryption key the store's data keys were wrapped with (as the marker records it).
        provider: The kind of key provider that wrapped them (``Keyring``, ``KMSKeyProvider``...).
    """

    def __init__(self, message: str, *, key_id: str, provider: str) -> None:
        super().__init__(message)
        self.key_id = key_id
        self.provider = provider


class PlaintextStoreError(StoreError):
    """A sealed open found plaintext in a store not marked as sealed: nothing is read or written.

    Open it with ``Encryption(provider, adopt_plaintext=True)`` (or the URL option
    ``adopt_plaintext=true``) to seal what is written from then on and keep reading the
    plaintext, or copy it into a sealed store with ``agent-stores migrate``.
    """


@dataclass(frozen=True)
class SealMarker:
    """What a sealed store's marker records: the key-encryption key and the kind of provider wrapping its data keys."""

    key_id: str
    provider: str

    def to_bytes(self) -> bytes:
        """The marker object's value."""
        return json.dumps({"format": _FORMAT, "key_id": self.key_id, "provider": self.provider}).encode("utf-8")

    @classmethod
    def parse(cls, data: bytes) -> SealMarker:
        """Read a marker :meth:`to_bytes` wrote.

        Raises:
            CorruptRecordError: ``data`` is not a marker.
        """
        try:
            raw: Any = json.loads(data)
            if raw.get("format") != _FORMAT:
                raise ValueError("format")
            return cls(str(raw["key_id"]), str(raw["provider"]))
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise CorruptRecordError(f"the sealed-store marker {SEALED_MARKER!r} is malformed") from err


def take_sealing_options(url: str, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """Take ``kms_key_id``, ``adopt_plaintext`` and the :data:`SEALING_SETTINGS` out of the options and URL query.

    Returns the URL without them, and ``{"kms_key_id": str | None, "adopt_plaintext": bool}``
    with each setting read by its reader, ``None`` when neither the URL nor the options give
    it. An option given in code wins over the URL's.

    Raises:
        ValueError: A value its reader refuses (``adopt_plaintext=maybe``, ``max_scopes=0``,
            ``key_refresh=inf``...), naming the option, or an option given twice in the URL.
    """
    url, kms_key_id = take_query_option(url, "kms_key_id")
    readers: dict[str, Callable[[Any], Any]] = {
        ADOPT_PLAINTEXT: partial(parse_bool, option=ADOPT_PLAINTEXT),
        **SEALING_SETTINGS,
    }
    named: dict[str, Any] = {"kms_key_id": options.pop("kms_key_id", None) or kms_key_id}
    for name, read in readers.items():
        url, text = take_query_option(url, name)
        value = options.pop(name, None) if name in options else text
        named[name] = None if value is None else read(value)
    named[ADOPT_PLAINTEXT] = bool(named[ADOPT_PLAINTEXT])
    return url, named


async def read_marker(objects: ObjectDriver) -> SealMarker | None:
    """The store's marker, ``None`` when it is not marked as sealed (one read).

    Raises:
        CorruptRecordError: The marker is malformed.
    """
    stored = await objects.get(SEALED_MARKER)
    return None if stored is None else SealMarker.parse(stored.data)


async def write_marker(objects: ObjectDriver, marker: SealMarker, *, replace: bool = False) -> None:
    """Mark the store as sealed; an existing marker is kept unless ``replace``."""
    try:
        await objects.put(SEALED_MARKER, marker.to_bytes(), if_absent=not replace)
    except StoreConflictError:
        return  # another open marked it first


def how_to_open(marker: SealMarker) -> str:
    """How to open a store sealed as ``marker`` says, for error messages (``Open it with ...``)."""
    if marker.provider == "KMSKeyProvider":
        return (
            f"Open it with its KMS key: the URL option ?kms_key_id={marker.key_id}, "
            f"{KMS_KEY_ENV}={marker.key_id}, or open_stores(url, kms_key_id=...)"
        )
    if marker.provider == "Keyring":
        return (
            "Open it with the keyring holding that key: the URL option ?keyring=FILE, "
            "AGENT_STORES_KEYRING=FILE, or open_stores(url, encryption=Keyring.load(FILE))"
        )
    return f"Open it with its {marker.provider}: open_stores(url, encryption=...)"


async def refuse_if_sealed(objects: ObjectDriver, where: str) -> None:
    """What an open without a key checks: the store at ``where`` is not marked as sealed.

    Raises:
        SealedStoreError: It is (the message names the key it needs and how to give it).
    """
    marker = await read_marker(objects)
    if marker is not None:
        raise SealedStoreError(
            f"{where} is sealed (key-encryption key {marker.key_id!r}, {marker.provider}) and was opened "
            f"without a key; nothing was read or written. {how_to_open(marker)}",
            key_id=marker.key_id,
            provider=marker.provider,
        )


async def probe_store(objects: ObjectDriver, logs: LogDriver) -> tuple[str, bool] | None:
    """One stored value of an unmarked store, to tell a sealed one from a plaintext one: ``(where, sealed)``.

    The newest record of the first history log, else the first file, session, todo list or
    checkpoint among the first keys (a scope's data keys count as sealed); ``None`` for an
    empty store. A few round trips, run once per unmarked store.
    """
    for log in await logs.list_logs("", limit=1):
        records = await logs.read(log.key, last=1)
        if records:
            return f"log {log.key!r}", records[0][:4] == VALUE_MARKER
    listing = await objects.list("", delimiter=None, limit=_PROBED_OBJECTS)
    for key in listing.keys:
        rest = split_tenant(key)[1]
        if rest.startswith(_RESERVED):
            return f"object {key!r}", True  # a data keys object: sealed before markers were written
        if rest.startswith(LOG_OBJECTS) or key.endswith("/"):
            continue  # an object store's log segments (read through the log driver); a directory marker
        stored = await objects.get(key)
        if stored is not None:
            return f"object {key!r}", stored.data[:4] == VALUE_MARKER
    return None
