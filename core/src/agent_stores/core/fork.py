"""Forking a session: a new session that starts as a copy of another (history up to a point, snapshot, todos, files)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

from agent_framework import AgentSession

from ._framework import (
    FILE_ACCESS_SESSION_PREFIX,
    FILE_ACCESS_WORKSPACE,
    FILE_MEMORY_SCOPE_PREFIX,
    storage_key_segment,
)
from .compaction import is_compaction_record
from .drivers import LogRecord
from .errors import StoreConflictError
from .files import ObjectAgentFileStore
from .history import LogHistoryProvider

if TYPE_CHECKING:
    from .stores import Stores

__all__ = ["ForkReport", "fork_session"]

_READ_ATTEMPTS = 8
_FILE_PAGE = 500


class ForkReport(NamedTuple):
    """What a fork copied: messages (and compaction records), whether a snapshot, todo states, files."""

    messages: int
    compactions: int
    snapshot: bool
    todos: int
    files: int = 0


async def fork_session(
    stores: Stores,
    src: str,
    dst: str,
    *,
    upto: int | None = None,
    source_id: str = "history",
    namespace: str = "",
    tenant: str | None = None,
) -> ForkReport:
    """Make session ``dst`` a copy of session ``src``, so each continues on its own from there.

    Copies, through the backend's drivers (so it works on every backend): the history of
    ``source_id`` (the first ``upto`` messages when given, with the compactions stored among
    them; compactions stored after the cut are left behind, they decided on messages the fork
    does not hold), the session snapshot (with ``dst`` as its id and no service session id:
    the fork's conversation is the copied history) and the harness todo states of every source
    id, and the files of the session's own folders in the file store: the harness's file
    memory (``FileMemoryProvider`` without a ``scope`` keeps a session's memories in a folder
    named for the session id) and session-scoped file access (``~access-/<session>``); files an
    app keeps by another scope (a user id) are shared by both sessions and not copied. The
    snapshot, todos and files are copied as they are now, whatever ``upto`` is. ``src`` is
    never changed. The history is copied in one atomic append; the copy as a whole is not
    atomic: a writer of ``src`` meanwhile may or may not be included.

    Raises:
        ValueError: ``src`` equals ``dst``, ``src`` holds nothing, ``upto`` is negative or past
            the messages ``src`` holds.
        FileExistsError: ``dst`` already holds history, a snapshot or todos; nothing was copied.
        TypeError: The backend's history is not one of the core's log providers.
    """
    if src == dst:
        raise ValueError("fork a session into another session id, not into itself")
    if upto is not None and (isinstance(upto, bool) or not isinstance(upto, int) or upto < 0):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"upto must be a non-negative int, got {upto!r}")
    history = stores.history_provider(source_id, namespace=namespace, tenant=tenant)
    if not isinstance(history, LogHistoryProvider):
        raise TypeError(f"fork_session copies the core's log histories, not {type(history).__name__}")
    sessions = stores.session_store(tenant=tenant)
    todos = stores.todo_store(tenant=tenant) if stores.offers_drivers else None
    src_key, dst_key = (history.keys.history(history.source_id, s) for s in (src, dst))

    records = await _read_log(history, src_key)
    snapshot = await sessions.get(src)
    todo_objects = await _todo_objects(todos, src)
    files = stores.file_store(tenant=tenant)
    file_objects = await _session_files(files, src)
    if not records and snapshot is None and not todo_objects and not file_objects:
        raise ValueError(f"session {src!r} holds no history, snapshot, todos or files to fork")
    if (
        (await history.driver.tail(dst_key, 0)).length
        or await sessions.get(dst) is not None
        or await _todo_objects(todos, dst)
        or await _session_files(files, dst)
    ):
        raise FileExistsError(f"session {dst!r} already holds history, a snapshot, todos or files")

    kept = _cut(records, upto)
    if kept:
        try:
            await history.driver.append(dst_key, kept, expected_version=None, session_id=dst, ttl=history.ttl)
        except StoreConflictError as err:
            raise FileExistsError(f"session {dst!r} got history while it was being forked") from err
    if snapshot is not None:
        copy = AgentSession.from_dict({**snapshot.to_dict(), "session_id": dst, "service_session_id": None})
        await sessions.set(dst, copy)
    copied_todos = 0
    if todos is not None:
        src_root, dst_root = _todo_root(todos, src), _todo_root(todos, dst)
        for key, data in todo_objects:
            await todos.driver.put(dst_root + key[len(src_root) :], data, if_absent=True)
            copied_todos += 1
    if file_objects:
        assert isinstance(files, ObjectAgentFileStore)
        src_folders, dst_folders = _session_folders(files, src), _session_folders(files, dst)
        for key, data in file_objects:
            folder = next(i for i, f in enumerate(src_folders) if key.startswith(f))
            await files.driver.put(dst_folders[folder] + key[len(src_folders[folder]) :], data, if_absent=True)
    compactions = sum(1 for r in kept if is_compaction_record(r.payload))
    copied_files = sum(1 for key, _ in file_objects if not key.endswith("/"))
    return ForkReport(len(kept) - compactions, compactions, snapshot is not None, copied_todos, copied_files)


async def _read_log(history: LogHistoryProvider, key: str) -> list[LogRecord]:
    """Every record of the log with its digest, read consistently (the version did not move meanwhile)."""
    for _ in range(_READ_ATTEMPTS):
        head = await history.driver.tail(key, 0)
        if not head.length:
            return []
        tail = await history.driver.tail(key, head.length)
        payloads = await history.driver.read(key)
        after = await history.driver.tail(key, 0)
        if tail.version == head.version == after.version and len(payloads) == len(tail.digests) == head.length:
            return [LogRecord(d, p) for d, p in zip(tail.digests, payloads, strict=True)]
    raise StoreConflictError(f"{key!r} kept changing while it was read for a fork")


def _cut(records: list[LogRecord], upto: int | None) -> list[LogRecord]:
    if upto is None:
        return records
    if upto == 0:
        return []
    seen = 0
    for index, record in enumerate(records):
        if not is_compaction_record(record.payload):
            seen += 1
            if seen == upto:
                return records[: index + 1]
    raise ValueError(f"upto={upto} is past the {seen} messages the session holds")


def _session_folders(files: ObjectAgentFileStore, session_id: str) -> list[str]:
    """The key prefixes of the folders the harness keeps one session's files in (the framework's derivation)."""
    memory = storage_key_segment(session_id, encoded_prefix=FILE_MEMORY_SCOPE_PREFIX)
    access = storage_key_segment(session_id, encoded_prefix=FILE_ACCESS_SESSION_PREFIX)
    return [f"{files.prefix}{memory}/", f"{files.prefix}{FILE_ACCESS_WORKSPACE}/{access}/"]


async def _session_files(files: Any, session_id: str) -> list[tuple[str, bytes]]:
    """Every object in the session's own folders (files, and folder markers ending with ``/``); none on other stores."""
    if not isinstance(files, ObjectAgentFileStore):
        return []
    found: list[tuple[str, bytes]] = []
    for folder in _session_folders(files, session_id):
        after: str | None = None
        while True:
            listing = await files.driver.list(folder, delimiter=None, after=after, limit=_FILE_PAGE)
            for key in listing.keys:
                stored = await files.driver.get(key)
                if stored is not None:
                    found.append((key, stored.data))
            if len(listing.keys) < _FILE_PAGE:
                break
            after = listing.keys[-1]
    return found


def _todo_root(todos: Any, session_id: str) -> str:
    return str(todos.state_key(AgentSession(session_id=session_id), "x")).rsplit("/", 1)[0] + "/"


async def _todo_objects(todos: Any, session_id: str) -> list[tuple[str, bytes]]:
    if todos is None:
        return []
    root = _todo_root(todos, session_id)
    listing = await todos.driver.list(root, delimiter=None)
    found: list[tuple[str, bytes]] = []
    for key in listing.keys:
        stored = await todos.driver.get(key)
        if stored is not None:
            found.append((key, stored.data))
    return found
