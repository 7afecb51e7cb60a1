"""The key layout: every key any store writes, and its inverse, in one place.

Every identifier that draws an isolation boundary (tenant, namespace, source id, session id,
checkpoint id, workflow name) becomes one key segment through the framework's own
``_storage_key_segment`` (:func:`key_segment`). ``docs/core.md`` draws the whole layout; in
short, under a store's root (a database, an S3 URL's prefix, a folder):

=============  ==============================================================
kind           keys (``<root>`` is ``""`` or ``tenants/<tenant>/``)
=============  ==============================================================
history        log ``<root><namespace>/<source>/<session>`` (object stores keep
               it in the folder ``<root>history/<namespace>/<source>/<session>/``)
files          ``<root>files/<path>``
sessions       ``<root>sessions/<session>.json``
todos          ``<root>todos/<namespace>/<session>/<source>.json``
checkpoints    ``<root>checkpoints/<namespace>/...``
=============  ==============================================================

Everything of one tenant lies under ``tenants/<tenant>/``; listing that level lists the tenants.
The history namespace ``tenants`` is reserved (its log keys would nest with a tenant's).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

from ._framework import storage_key_segment

__all__ = [
    "TENANTS",
    "KeySpace",
    "LogKey",
    "decode_segment",
    "key_segment",
    "parse_log_key",
    "split_tenant",
    "tenant_root",
]

#: The first segment of every key of every tenant.
TENANTS = "tenants"

_PREFIX = "~"
_HASHED = "~sha256-"
_MAX_SEGMENT = 180  # the framework's bound for encoded segments


def key_segment(value: str) -> str:
    """Return the storage segment of one opaque identifier: no ``/``, at most 180 characters.

    Lowercase-safe ids stay readable; anything else is base32-encoded under a ``~`` prefix, and
    an id whose segment would exceed 180 characters becomes its SHA-256 digest under
    ``~sha256-``. Segments never contain ``/`` and never differ only in case, so joining them
    with ``/`` is injective on every backend, case-insensitive file systems and Redis Cluster
    hash tags included. Any string is an id (NUL, control characters, ``..``, operators and
    10 kB included).

    Raises:
        TypeError: ``value`` is not a string (a query shape such as ``{"$ne": None}`` is
            refused, never interpreted).
        ValueError: ``value`` is not valid Unicode (a lone surrogate has no UTF-8 form).
    """
    if not isinstance(value, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"identifiers are strings, got {type(value).__name__}")
    return _segment(value)


@lru_cache(maxsize=32768)  # derivation is not free; agents reuse a few ids, listings decode many
def _segment(value: str) -> str:
    segment = storage_key_segment(value, encoded_prefix=_PREFIX)
    if len(segment) <= _MAX_SEGMENT:
        return segment
    return f"{_HASHED}{hashlib.sha256(value.encode('utf-8')).hexdigest()}"


def decode_segment(segment: str, *, encoded_prefix: str = _PREFIX) -> str | None:
    """Return the identifier whose :func:`key_segment` is ``segment``, or ``None``.

    ``None`` for a digest of a long id (not reversible) and for text no identifier maps to.
    ``encoded_prefix`` reads the segments of another component of the framework's own
    derivation (``FileHistoryProvider`` names its files with ``~session-``).
    """
    if not segment or segment.startswith(f"{encoded_prefix}sha256-") or segment.startswith(_HASHED):
        return None
    if not segment.startswith("~"):
        return segment if storage_key_segment(segment, encoded_prefix=encoded_prefix) == segment else None
    if not segment.startswith(encoded_prefix):
        return None
    encoded = segment[len(encoded_prefix) :].upper()
    try:
        value = base64.b32decode(encoded + "=" * (-len(encoded) % 8)).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return value if storage_key_segment(value, encoded_prefix=encoded_prefix) == segment else None


def tenant_root(tenant: str) -> str:
    """Return the key prefix every key of ``tenant`` starts with: ``tenants/<tenant segment>/``.

    Raises:
        ValueError: ``tenant`` is not a non-empty string.
    """
    if not isinstance(tenant, str) or not tenant:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"a tenant is a non-empty string, got {tenant!r}")
    return f"{TENANTS}/{key_segment(tenant)}/"


def split_tenant(key: str) -> tuple[str | None, str]:
    """Split ``key`` into its tenant segment (``None`` outside every tenant) and the key under the tenant's root."""
    if key.startswith(TENANTS + "/"):
        segment, slash, rest = key[len(TENANTS) + 1 :].partition("/")
        if slash and segment:
            return segment, rest
    return None, key


@dataclass(frozen=True, slots=True)
class KeySpace:
    """Derives every key of one namespace, outside every tenant or inside one.

    Args:
        namespace: Application prefix inside the root; namespaces never share a key. The empty
            string is a namespace of its own.
        tenant: The tenant whose root every key lies under, or ``None``.

    Raises:
        ValueError: ``tenant`` is given and empty.
    """

    namespace: str = ""
    tenant: str | None = None

    def __post_init__(self) -> None:
        if self.tenant is not None:
            tenant_root(self.tenant)

    @property
    def root(self) -> str:
        """``""``, or ``tenants/<tenant>/``: the prefix of every key of this space."""
        return "" if self.tenant is None else tenant_root(self.tenant)

    @property
    def namespace_segment(self) -> str:
        """The namespace's key segment."""
        return key_segment(self.namespace)

    def under(self, prefix: str) -> str:
        """Return ``prefix`` (a store's ``files/``, ``sessions/``...) under this space's root.

        Raises:
            ValueError: ``prefix`` is neither empty nor ends with ``/``.
        """
        if prefix and not prefix.endswith("/"):
            raise ValueError(f"prefix must be empty or end with '/', got {prefix!r}")
        return self.root + prefix

    def history(self, source_id: str, session_id: str | None) -> str:
        """Key of one history log, relative to the root: ``<namespace>/<source_id>/<session_id>``.

        A ``None`` session id is the default session and shares the key of ``""``, as in the
        framework's file provider, where both map to its default file.
        """
        return f"{self.namespace_segment}/{key_segment(source_id)}/{key_segment(session_id or '')}"

    def history_prefix(self, source_id: str) -> str:
        """Prefix shared by every history key of ``source_id`` (ends with ``/``)."""
        return f"{self.namespace_segment}/{key_segment(source_id)}/"

    def check_history_namespace(self) -> None:
        """Refuse the reserved history namespace outside tenants.

        Raises:
            ValueError: The namespace is ``tenants`` and no tenant is set.
        """
        if self.tenant is None and self.namespace == TENANTS:
            raise ValueError(
                f"the history namespace {TENANTS!r} is reserved for tenant views; use stores.tenant(...) "
                "or another namespace"
            )


class LogKey(NamedTuple):
    """A history log key taken apart: segments, and the ids they decode to where they can."""

    tenant_segment: str | None
    namespace_segment: str
    source_segment: str
    session_segment: str

    @property
    def tenant(self) -> str | None:
        """The tenant id, when there is one and its segment is reversible."""
        return None if self.tenant_segment is None else decode_segment(self.tenant_segment)

    @property
    def namespace(self) -> str | None:
        """The namespace, or ``None`` when its segment is a digest."""
        return decode_segment(self.namespace_segment)

    @property
    def source_id(self) -> str | None:
        """The source id, or ``None`` when its segment is a digest."""
        return decode_segment(self.source_segment)


def parse_log_key(key: str) -> LogKey | None:
    """Take a log key (as the unscoped log driver lists it) apart, or ``None`` if no store made it."""
    tenant, rest = split_tenant(key)
    parts = rest.split("/")
    if len(parts) != 3 or not all(parts):
        return None
    if tenant is None and parts[0] == TENANTS:
        return None
    return LogKey(tenant, parts[0], parts[1], parts[2])
