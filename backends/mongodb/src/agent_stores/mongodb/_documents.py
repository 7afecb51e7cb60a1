"""What the MongoDB log and object drivers share: keys as string values, key ranges and the document limit."""

from __future__ import annotations

from typing import Final

import bson

from agent_stores.core.drivers import prefix_bounds

from ._database import Document

__all__ = ["MAX_DOCUMENT_BYTES", "check_key", "key_range", "too_large"]

#: MongoDB's BSON document limit (16 MiB): a batch or an object larger than this is refused before the write.
MAX_DOCUMENT_BYTES: Final = 16 * 1024 * 1024
# Below this estimate a document cannot reach the limit; above it the exact BSON size is computed.
_SAFE_ESTIMATE: Final = MAX_DOCUMENT_BYTES - 64 * 1024


def too_large(doc: Document, estimate: int) -> bool:
    """Whether ``doc`` exceeds :data:`MAX_DOCUMENT_BYTES` (encoded only when ``estimate`` of its size comes close)."""
    return estimate > _SAFE_ESTIMATE and len(bson.encode(doc)) > MAX_DOCUMENT_BYTES


def check_key(key: str) -> str:
    """Return ``key`` if it is a ``str`` (keys only ever reach a query as string values).

    Raises:
        TypeError: ``key`` is not a string.
    """
    if not isinstance(key, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(f"keys are strings, got {type(key).__name__}")
    return key


def key_range(prefix: str, *, after: str | None = None, start: str | None = None) -> Document:
    """The ``_id`` condition for keys under ``prefix``, strictly after ``after``, from ``start`` on."""
    low, high = prefix_bounds(prefix)
    condition: Document = {"$gte": low if start is None else max(low, start)}
    if after is not None and after >= condition["$gte"]:
        condition = {"$gt": after}
    if high is not None:
        condition["$lt"] = high
    return condition
