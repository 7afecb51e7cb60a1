"""One injective mapping from identifiers to backend keys.

Every identifier that draws an isolation boundary (namespace, source id, session id) becomes
one key segment through the framework's own ``_storage_key_segment``: lowercase-safe ids stay
readable, anything else is base32-encoded under a ``~`` prefix, and very long ids become a
SHA-256 digest. Segments never contain ``/``, never differ only in case, and never collide
across the two namespaces, so joining them with ``/`` stays injective on every backend,
including case-insensitive file systems and Redis Cluster hash tags.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

from ._framework import storage_key_segment

__all__ = ["KeySpace", "key_segment"]

_PREFIX = "~"
_MAX_SEGMENT = 180  # the framework's bound for encoded segments


def key_segment(value: str) -> str:
    """Return the storage segment of one opaque identifier: no ``/``, at most 180 characters.

    The framework bounds only its encoded branch; a long literal-safe id is bounded here the
    same way, by its SHA-256 digest under the same marker, so one id always maps to one segment.
    Any string is an id (NUL, control characters, ``..``, operators and 10 kB included); its
    segment never needs escaping on any backend.

    Raises:
        TypeError: ``value`` is not a string (a query shape such as ``{"$ne": None}`` is
            refused, never interpreted).
        ValueError: ``value`` is not valid Unicode (a lone surrogate has no UTF-8 form).
    """
    if not isinstance(value, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"identifiers are strings, got {type(value).__name__}")
    return _segment(value)


@lru_cache(maxsize=4096)  # derivation costs ~5 µs an id; agents reuse a few ids on every call
def _segment(value: str) -> str:
    segment = storage_key_segment(value, encoded_prefix=_PREFIX)
    if len(segment) <= _MAX_SEGMENT:
        return segment
    return f"{_PREFIX}sha256-{hashlib.sha256(value.encode('utf-8')).hexdigest()}"


@dataclass(frozen=True, slots=True)
class KeySpace:
    """Derives every key one store uses from its ``namespace``.

    Args:
        namespace: Tenant or application prefix; stores with different namespaces never share
            a key. The empty string is a namespace of its own.

    """

    namespace: str = ""

    @property
    def root(self) -> str:
        """The segment every key of this namespace starts with."""
        return key_segment(self.namespace)

    def history(self, source_id: str, session_id: str | None) -> str:
        """Key of one history log: ``<namespace>/<source_id>/<session_id>``.

        A ``None`` session id is the default session and shares the key of ``""``, as in the
        framework's file provider, where both map to its default file.
        """
        return f"{self.root}/{key_segment(source_id)}/{key_segment(session_id or '')}"

    def history_prefix(self, source_id: str) -> str:
        """Prefix shared by every history key of ``source_id`` (ends with ``/``)."""
        return f"{self.root}/{key_segment(source_id)}/"
