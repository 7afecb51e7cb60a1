"""The retention sweeper: rules by idle time, age and keep-last-N over every kind, and the marks it keeps.

No record a store writes carries a time (messages, snapshots, files and todo lists hold none;
the drivers give versions, not modification times). A sweep therefore keeps a *mark* per item
it sees — the item's version and when a sweep first saw it at that version — as one small
object ``<root>retention/<item>`` beside the item (``<item>`` is ``history/<log key>`` for a
history, the object key for the others). An item is idle for as long as its version has not
changed since its mark; its age counts from the first sweep that saw it. Checkpoints carry
their own timestamp, which is used instead.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from .drivers import ObjectDriver

__all__ = ["MARKS", "Mark", "mark_key", "read_mark"]

#: The folder under a tenant's root (or the store's) holding the sweeps' marks.
MARKS = "retention/"


@dataclass(frozen=True, slots=True)
class Mark:
    """What sweeps observed of one item: its version, since when (epoch seconds), and when first seen."""

    version: str
    since: float
    first: float

    def encode(self) -> bytes:
        """The stored form (JSON)."""
        return json.dumps({"version": self.version, "since": self.since, "first": self.first}).encode()

    @classmethod
    def decode(cls, data: bytes) -> Mark | None:
        """The mark ``data`` holds, or ``None`` when it is not one (a damaged mark is treated as absent)."""
        try:
            raw = json.loads(data)
            return cls(str(raw["version"]), float(raw["since"]), float(raw["first"]))
        except (ValueError, KeyError, TypeError):
            return None


def mark_key(root: str, item: str) -> str:
    """The key of the mark of ``item`` (a key relative to ``root``, the store's or a tenant's)."""
    return root + MARKS + item


async def read_mark(objects: ObjectDriver, root: str, item: str) -> Mark | None:
    """The mark of ``item`` under ``root``, or ``None`` (no sweep saw it)."""
    stored = await objects.get(mark_key(root, item))
    return None if stored is None else Mark.decode(stored.data)
