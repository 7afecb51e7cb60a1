"""From object keys to relative file-system paths, and the listing rules shared by every filesystem.

A key is a ``/``-separated relative path. A key ending with ``/`` is a directory marker
(how ``ObjectAgentFileStore`` records an empty directory); on a filesystem it is the directory
itself. Keys that could leave the root, or that a filesystem would read differently from an
object store, are refused with ``ValueError`` before anything is touched.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from typing import Final, NamedTuple

from agent_stores.core import Listing

__all__ = ["TEMP_NAME", "Entry", "KeyPath", "is_temp_name", "page", "split_key", "temp_name"]

#: Name of a temporary file a write fills before moving it into place: hidden from listings,
#: and refused as a key segment so no stored object can be mistaken for one.
TEMP_NAME: Final = re.compile(r"\.~agent-stores-[0-9a-f]{32}\.tmp")


def temp_name() -> str:
    """Return a fresh temporary file name (see :data:`TEMP_NAME`)."""
    return f".~agent-stores-{uuid.uuid4().hex}.tmp"


def is_temp_name(name: str) -> bool:
    """Whether ``name`` is one of our temporary files."""
    return TEMP_NAME.fullmatch(name) is not None


class KeyPath(NamedTuple):
    """A validated key: its relative path (no trailing ``/``) and whether it names a directory."""

    rel: str
    directory: bool


def split_key(key: str) -> KeyPath:
    """Validate ``key`` and return its relative path under the root.

    Raises:
        ValueError: ``key`` is empty, absolute, holds NUL or a backslash, has an empty,
            ``.`` or ``..`` segment, or names one of our temporary files.
    """
    if not isinstance(key, str) or not key:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"object key must be a non-empty string, got {key!r}")
    if "\x00" in key:
        raise ValueError(f"object key {key!r} contains NUL")
    if "\\" in key:
        raise ValueError(f"object key {key!r} contains a backslash (a separator on some file systems)")
    if key.startswith("/"):
        raise ValueError(f"object key {key!r} is absolute; keys are relative to the store's root")
    directory = key.endswith("/")
    rel = key[:-1] if directory else key
    for segment in rel.split("/"):
        if segment in ("", ".", ".."):
            raise ValueError(f"object key {key!r} has an empty, '.' or '..' segment")
        if is_temp_name(segment):
            raise ValueError(f"object key {key!r} uses the reserved temporary-file name {segment!r}")
    return KeyPath(rel, directory)


def split_prefix(prefix: str) -> tuple[str, str]:
    """Split a listing prefix into (the directory to scan, the start of the names in it).

    Raises:
        ValueError: The directory part breaks the key rules.
    """
    if "\x00" in prefix or "\\" in prefix or prefix.startswith("/"):
        raise ValueError(f"listing prefix {prefix!r} is not a relative key prefix")
    directory, _, start = prefix.rpartition("/")
    if directory:
        split_key(directory + "/")
    return directory, start


class Entry(NamedTuple):
    """One name found under the root: its key relative path and whether it is a directory."""

    rel: str
    directory: bool


def page(
    entries: Iterable[Entry],
    prefix: str,
    *,
    delimiter: str | None,
    after: str | None,
    limit: int | None,
    markers: bool,
) -> Listing:
    """Turn the entries found under ``prefix``'s directory into one page of an object listing.

    ``entries`` hold, with ``delimiter="/"``, the direct children of the prefix's directory, and
    otherwise every file and directory below it. A directory is its marker key ``rel/`` when
    ``markers``, else only the prefix of the files under it. The result follows
    :meth:`agent_stores.core.ObjectDriver.list` exactly: code-point order, ``after``
    exclusive over keys and prefixes, ``limit`` counting both.
    """
    keys: set[str] = set()
    prefixes: set[str] = set()
    for entry in entries:
        key = entry.rel + "/" if entry.directory else entry.rel
        if not key.startswith(prefix):
            continue
        if entry.directory and not markers and delimiter is None:
            continue
        rest = key[len(prefix) :]
        cut = rest.find(delimiter) if delimiter else -1
        if cut >= 0:
            prefixes.add(prefix + rest[: cut + len(delimiter or "")])
        else:
            keys.add(key)
    if not markers:
        keys = {k for k in keys if not k.endswith("/")}
    merged = sorted(keys | prefixes)
    if after is not None:
        merged = [e for e in merged if e > after]
    if limit is not None:
        merged = merged[:limit]
    return Listing([e for e in merged if e in keys], [e for e in merged if e in prefixes])
