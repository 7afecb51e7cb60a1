"""``agent-stores migrate``: copy every history, file and session from one store to another, verified.

Everything is copied by default: the unscoped stores and every tenant, every history namespace
and source id the source holds, todos and checkpoints; options narrow it. The source is a
store URL, or ``framework://DIR``: the folders of the framework's own
``FileHistoryProvider`` (``DIR/history``), ``FileSessionStore`` (``DIR/sessions``) and
``FileSystemAgentFileStore`` (``DIR/files``); ``?history=…&sessions=…&files=…`` name other
folders (relative to ``DIR``). The target is a store URL.

A migration first plans (reads both sides, writes nothing), then copies, then reads the target
back and compares counts and record digests with what it wrote. Each source item is read once:
an item the target does not hold is copied whatever it holds, so the plan leaves it to the
copy to read; what the plan read of an item the target holds is kept for its copy (up to
:data:`KEPT_BYTES` in all, re-read beyond). Per item:

- absent on the target: copied; identical: skipped (a re-run is safe);
- a history the target holds a prefix of (the source went on since the last run): the rest is
  appended;
- different data: a conflict. Any conflict refuses the whole migration before anything is
  written, unless ``append`` (the source's history is added after the target's own; files and
  snapshots the target holds are kept) or ``replace`` (the target's history, file or snapshot
  is replaced by the source's). Two histories are never interleaved.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from agent_framework import AgentFileStore, AgentSession, FileSessionStore, Message, SessionStore

from agent_stores.core import (
    TENANTS,
    CompactionRecord,
    LogHistoryProvider,
    ObjectDriver,
    ObjectSessionStore,
    Stores,
    decode_segment,
    decode_snapshot,
    redact_url,
    tenant_root,
)
from agent_stores.core.bounded import run_bounded
from agent_stores.core.fastcodec import fast_to_dict
from agent_stores.core.listing import iter_pages

from ._errors import CliError
from ._open import open_url, store_location

__all__ = ["FRAMEWORK_SCHEME", "MigrationItem", "MigrationReport", "migrate"]

FRAMEWORK_SCHEME = "framework"
#: Object-driver prefixes (under each scope's root) copied verbatim between two stores that both have an object driver.
OBJECT_PREFIXES = ("todos/", "checkpoints/")


Conflicts = Literal["refuse", "append", "replace"]
Progress = Callable[[str, int, int], None]
#: Items planned, copied or verified at once by default (each a few round trips to each store):
#: what ``benchmarks/migrate_bench.py`` (Redis -> S3, 10 ms per S3 request) ran best with.
DEFAULT_CONCURRENCY = 64
#: Copied histories read back from one listing of the target at a time (see ``_verify_together``).
VERIFY_CHUNK = 1000
#: Histories to copy read from one listing of the source at a time, and held until written
#: (see ``_read_together``).
COPY_CHUNK = 100
#: What the plan keeps of the source items it read for their copy (bytes of their JSON or text);
#: an item past it is read again when copied.
KEPT_BYTES = 64 << 20


def _canonical(message: Message) -> bytes:
    """The message's canonical JSON (``to_dict``, sorted keys): equal content, equal bytes.

    What a migration digests, not the core's ``message_digest`` (the framework's identity, used
    for de-duplication): a migration verifies that every message arrived whole, so it compares
    everything.
    """
    as_dict = fast_to_dict(message)  # the very dict to_dict() builds, without the framework's generic walk
    if as_dict is None:
        as_dict = message.to_dict()
    text = json.dumps(as_dict, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.encode("utf-8")


def _snapshot_digest(session: AgentSession) -> str:
    """SHA-256 of a session snapshot's canonical JSON (``to_dict``, sorted keys)."""
    text = json.dumps(session.to_dict(), sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: One stored record of a history as a migration copies it: a message, or a compaction record verbatim.
Entry = Message | CompactionRecord


_COMPACTION_PREFIX = "compaction:"


def _digests(entries: Sequence[Entry]) -> list[str]:
    """Content digests of a history's records; a compaction record's is its bytes' under ``compaction:``."""
    return _measured(entries)[0]


def _measured(entries: Sequence[Entry]) -> tuple[list[str], int]:
    """:func:`_digests` of ``entries``, and the bytes they were computed from (what keeping them costs, about)."""
    digests: list[str] = []
    size = 0
    for entry in entries:
        if isinstance(entry, CompactionRecord):
            digests.append(_COMPACTION_PREFIX + hashlib.sha256(entry.payload).hexdigest())
            size += len(entry.payload)
        else:
            canonical = _canonical(entry)
            digests.append(hashlib.sha256(canonical).hexdigest())
            size += len(canonical)
    return digests, size


def _messages_in(digests: Sequence[str]) -> int:
    return sum(1 for d in digests if not d.startswith(_COMPACTION_PREFIX))


def _combined(digests: Sequence[str]) -> str:
    return hashlib.sha256("".join(digests).encode("ascii")).hexdigest()


@dataclass
class MigrationItem:
    """One history, snapshot, file or object of the migration, and what was done with it."""

    kind: Literal["history", "snapshot", "file", "folder", "object"]
    name: str
    action: str = ""  # copy, skip, extend, append, replace, keep, conflict, error
    source_count: int = 0
    target_count: int = 0
    detail: str = ""
    verified: bool | None = None
    # where the item lives: (source_id, namespace, session_id, name) / (rel_key, session_id) / path / key
    where: Any = field(default=None, repr=False)
    #: The tenant whose stores hold it (``None``: the unscoped stores).
    tenant: str | None = None
    expected: list[str] = field(default_factory=list[str], repr=False)
    #: A history's records on the target before the copy (its messages and compaction records).
    target_records: int = field(default=0, repr=False)
    #: What the plan read of the source item, kept for its copy (``None``: the copy reads it).
    kept: Any = field(default=None, repr=False)
    #: The plan did not read the source item (the target does not hold it): the copy reads it
    #: and sets what the target must hold.
    unread: bool = field(default=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The item as the ``--json`` report shows it."""
        document: dict[str, Any] = {"kind": self.kind, "name": self.name, "action": self.action}
        if self.tenant is not None:
            document["tenant"] = self.tenant
        if self.kind == "history":
            document |= {"source_messages": self.source_count, "target_messages_before": self.target_count}
            if self.expected:
                messages = sum(1 for d in self.expected if not d.startswith(_COMPACTION_PREFIX))
                document |= {"target_messages": messages, "digest": _combined(self.expected)}
        elif self.expected:
            document["digest"] = self.expected[0]
        if self.kind == "file":
            document |= {"source_characters": self.source_count, "target_characters_before": self.target_count}
        if self.detail:
            document["detail"] = self.detail
        if self.verified is not None:
            document["verified"] = self.verified
        return document


@dataclass
class MigrationReport:
    """What a migration planned, did and verified."""

    source: str
    target: str
    conflicts: Conflicts
    dry_run: bool
    items: list[MigrationItem] = field(default_factory=list[MigrationItem])
    refused: bool = False

    def of(self, action: str) -> list[MigrationItem]:
        """The items with ``action``."""
        return [item for item in self.items if item.action == action]

    @property
    def failures(self) -> list[MigrationItem]:
        """Items that could not be copied or whose copy did not verify."""
        return [item for item in self.items if item.action == "error" or item.verified is False]

    @property
    def ok(self) -> bool:
        """Nothing refused, nothing failed."""
        return not self.refused and not self.failures

    def summary(self) -> dict[str, dict[str, int]]:
        """Counts of items per kind and action, and messages copied."""
        table: dict[str, dict[str, int]] = {}
        for item in self.items:
            row = table.setdefault(item.kind, {})
            row[item.action] = row.get(item.action, 0) + 1
            if item.kind == "history" and item.action in ("copy", "extend", "append", "replace"):
                copied = item.source_count - (item.target_count if item.action == "extend" else 0)
                row["messages_copied"] = row.get("messages_copied", 0) + copied
        return table

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` report."""
        return {
            "ok": self.ok,
            "source": self.source,
            "target": self.target,
            "conflicts": self.conflicts,
            "dry_run": self.dry_run,
            "refused": self.refused,
            "summary": self.summary(),
            "items": [item.to_json() for item in self.items],
        }


# -- the two sides ---------------------------------------------------------------------------------


class _Side:
    """What a migration reads (and, for a target, writes)."""

    label: str

    def history(self, source_id: str, namespace: str) -> Any: ...

    def files(self) -> AgentFileStore | None: ...

    def sessions(self) -> SessionStore | None: ...

    def history_sessions(self, source_id: str, namespace: str) -> AsyncIterator[tuple[str | None, str]]: ...

    def snapshots(self) -> AsyncIterator[tuple[str, str | None]]: ...

    async def read_snapshot(self, rel_key: str, session_id: str | None) -> AgentSession | None: ...

    def object_driver(self) -> ObjectDriver | None:
        return None


class _StoresSide(_Side):
    def __init__(self, stores: Stores, url: str, tenant: str | None = None) -> None:
        self.stores = stores
        self.url = url
        self.tenant = tenant
        self.label = redact_url(url)
        self._sessions = stores.session_store(tenant=tenant)
        self._files = stores.file_store(tenant=tenant)
        self._providers: dict[tuple[str, str], Any] = {}

    def scope(self, tenant: str | None) -> _StoresSide:
        """The same stores as ``tenant`` sees them."""
        return _StoresSide(self.stores, self.url, tenant)

    @property
    def root(self) -> str:
        return "" if self.tenant is None else tenant_root(self.tenant)

    def history(self, source_id: str, namespace: str) -> Any:
        key = (source_id, namespace)
        if key not in self._providers:
            self._providers[key] = self.stores.history_provider(source_id, namespace=namespace, tenant=self.tenant)
        return self._providers[key]

    def files(self) -> AgentFileStore:
        return self._files

    def sessions(self) -> SessionStore:
        return self._sessions

    async def history_sessions(self, source_id: str, namespace: str) -> AsyncIterator[tuple[str | None, str]]:
        provider = self.history(source_id, namespace)
        if not callable(getattr(provider, "iter_sessions", None)):
            raise CliError(f"the history provider of {self.label} cannot list sessions (no iter_sessions())")
        async for session_id in provider.iter_sessions():
            yield session_id, session_id

    async def snapshots(self) -> AsyncIterator[tuple[str, str | None]]:
        store = self._sessions
        if not isinstance(store, ObjectSessionStore):
            raise CliError(f"the session store of {self.label} cannot list its sessions")
        after: str | None = None
        while True:
            listing = await store.driver.list(store.prefix, delimiter="/", after=after, limit=500)
            for key in listing.keys:
                relative = key[len(store.prefix) :]
                if relative.endswith(".json"):
                    yield relative, decode_segment(relative[: -len(".json")])
            if len(listing.keys) < 500:
                return
            after = listing.keys[-1]

    async def read_snapshot(self, rel_key: str, session_id: str | None) -> AgentSession | None:
        store = self._sessions
        if isinstance(store, ObjectSessionStore):  # read only: a corrupt snapshot is reported, never moved aside
            key = store.snapshot_key(session_id) if session_id is not None else store.prefix + rel_key
            stored = await store.driver.get(key)
            return None if stored is None else decode_snapshot(stored.data, where=repr(key))
        return None if session_id is None else await store.get(session_id)

    async def write_snapshot(self, rel_key: str, session_id: str | None, session: AgentSession) -> None:
        store = self._sessions
        if session_id is not None:
            await store.set(session_id, session)
        elif isinstance(store, ObjectSessionStore):
            from agent_stores.core import encode_snapshot

            await store.driver.put(store.prefix + rel_key, encode_snapshot(session))
        else:
            raise CliError(f"the session key of {rel_key!r} is a digest; the target needs the original id")

    def object_driver(self) -> ObjectDriver | None:
        try:
            return self.stores.object_driver()
        except TypeError:
            return None


class _FrameworkSide(_Side):
    """The folders of the framework's ``FileHistoryProvider``, ``FileSessionStore`` and ``FileSystemAgentFileStore``."""

    ENCODED = "~session-"

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        base = Path((parts.netloc + parts.path) or ".")
        options = dict(parse_qsl(parts.query))
        unknown = set(options) - {"history", "sessions", "files"}
        if unknown:
            raise CliError(f"unknown option(s) in {url!r}: {', '.join(sorted(unknown))} (history, sessions, files)")
        self.label = url
        self.base = base
        self.history_dir = base / options.get("history", "history")
        self.sessions_dir = base / options.get("sessions", "sessions")
        self.files_dir = base / options.get("files", "files")
        if not any(p.is_dir() for p in (self.history_dir, self.sessions_dir, self.files_dir)):
            raise CliError(
                f"{url}: none of the framework folders exists "
                f"({self.history_dir}, {self.sessions_dir}, {self.files_dir})"
            )
        self._mapping: tuple[str, str] | None = None

    def map_history(self, source_id: str, namespace: str) -> None:
        self._mapping = (source_id, namespace)

    @property
    def mapping(self) -> tuple[str, str]:
        return self._mapping or ("history", "")

    def _stems(self, folder: Path, suffixes: tuple[str, ...]) -> list[tuple[Path, str]]:
        if not folder.is_dir():
            return []
        found: list[tuple[Path, str]] = []
        for path in sorted(folder.iterdir()):
            if path.is_file() and not path.name.startswith(".") and path.suffix in suffixes:
                found.append((path, path.name[: -len(path.suffix)]))
        return found

    def history(self, source_id: str, namespace: str) -> Any:
        return _FrameworkHistory(self.history_dir)

    async def history_sessions(self, source_id: str, namespace: str) -> AsyncIterator[tuple[str | None, str]]:
        if (source_id, namespace) != self._mapping:
            return
        for path, stem in self._stems(self.history_dir, (".jsonl", ".msgpack")):
            session_id = decode_segment(stem, encoded_prefix=self.ENCODED)
            yield session_id, path.name

    def files(self) -> AgentFileStore | None:
        if not self.files_dir.is_dir():
            return None
        from agent_framework import FileSystemAgentFileStore

        return FileSystemAgentFileStore(self.files_dir)

    def sessions(self) -> SessionStore | None:
        return None

    async def snapshots(self) -> AsyncIterator[tuple[str, str | None]]:
        for path, stem in self._stems(self.sessions_dir, (".json", ".msgpack")):
            yield path.name, decode_segment(stem, encoded_prefix=self.ENCODED)

    async def read_snapshot(self, rel_key: str, session_id: str | None) -> AgentSession | None:
        if session_id is None:
            return None
        fmt: Literal["json", "msgpack"] = "msgpack" if rel_key.endswith(".msgpack") else "json"
        return await FileSessionStore(self.sessions_dir, serialization_format=fmt).get(session_id)


class _FrameworkHistory:
    def __init__(self, folder: Path) -> None:
        self.folder = folder

    async def export_messages(self, session_id: str | None, file_name: str = "") -> list[Message]:
        from agent_framework import FileHistoryProvider

        fmt: Literal["json", "msgpack"] = "msgpack" if file_name.endswith(".msgpack") else "json"
        provider = FileHistoryProvider(self.folder, serialization_format=fmt)
        return await provider.get_messages(session_id)


def _open_source(url: str, stack: AsyncExitStack) -> Any:
    if url.split("://", 1)[0].lower() == FRAMEWORK_SCHEME and "://" in url:
        return _FrameworkSide(url)
    return _StoresSide(_enter(open_url(url, must_exist=True), stack), url)


def _refuse_same_store(source: Any, target: _StoresSide) -> None:
    """Refuse a target that is the source, however its URL spells it (the same file, folder, bucket prefix...).

    Raises:
        CliError: Both URLs name the same store.
    """
    if isinstance(source, _FrameworkSide):
        here = "file://" + os.path.realpath(source.base)
    else:
        here = store_location(source.stores)
    if here == store_location(target.stores):
        raise CliError(
            f"{source.label} and {target.label} are the same store ({here}): a store cannot be migrated into itself"
        )


def _enter(stores: Stores, stack: AsyncExitStack) -> Stores:
    stack.push_async_callback(stores.aclose)
    return stores


# -- planning, copying, verifying -------------------------------------------------------------------


async def _read_history(side: Any, source_id: str, namespace: str, session_id: str | None, name: str) -> list[Entry]:
    """The session's records in log order: compaction records too where the side's history keeps them."""
    provider = side.history(source_id, namespace)
    if isinstance(provider, _FrameworkHistory):
        return list(await provider.export_messages(session_id, name))
    if isinstance(provider, LogHistoryProvider):
        return await provider.export_log(session_id)
    return list(await provider.export_messages(session_id))


def _importable(entries: list[Entry], provider: Any) -> list[Entry]:
    """``entries`` as ``provider`` can store them: a history that keeps no compaction records gets the messages."""
    if isinstance(provider, LogHistoryProvider):
        return entries
    return [e for e in entries if not isinstance(e, CompactionRecord)]


async def _import(provider: Any, session_id: str | None, entries: list[Entry], *, absent: bool = False) -> None:
    if isinstance(provider, LogHistoryProvider):
        await provider.import_log(session_id, entries, absent=absent)
    else:
        await provider.import_messages(session_id, [e for e in entries if not isinstance(e, CompactionRecord)])


#: The actions that copy something from the source.
_COPIES = frozenset({"copy", "extend", "append", "replace"})
#: What keeping a session snapshot counts against the budget (a snapshot's state is small and not measured).
_SNAPSHOT_COST = 4096


def _is_prefix(short: Sequence[str], long: Sequence[str]) -> bool:
    return len(short) < len(long) and list(long[: len(short)]) == list(short)


def _history_action(source: list[str], target: list[str], conflicts: Conflicts) -> tuple[str, list[str]]:
    """The action for one history and the digests the target must hold after it."""
    if not target:
        return "copy", source
    if target == source:
        return "skip", target
    if _is_prefix(target, source):
        return "extend", source
    if conflicts == "append":
        if target[-len(source) :] == source:
            return "skip", target
        return "append", target + source
    if conflicts == "replace":
        return "replace", source
    return "conflict", target


def _single_action(source: str, target: str | None, conflicts: Conflicts) -> str:
    if target is None:
        return "copy"
    if target == source:
        return "skip"
    return {"refuse": "conflict", "append": "keep", "replace": "replace"}[conflicts]


async def _walk_files(files: AgentFileStore) -> list[tuple[str, bool]]:
    """Every (path, is_directory) of a file store, directories included (so empty ones are copied)."""
    found: list[tuple[str, bool]] = []
    pending = [""]
    while pending:
        folder = pending.pop()
        for entry in await files.list_children(folder):
            path = f"{folder}/{entry.name}" if folder else entry.name
            if entry.type == "directory":
                found.append((path, True))
                pending.append(path)
            else:
                found.append((path, False))
    return sorted(found)


async def _walk_objects(driver: ObjectDriver, prefix: str) -> list[str]:
    keys: list[str] = []
    after: str | None = None
    while True:
        listing = await driver.list(prefix, delimiter=None, after=after, limit=500)
        keys.extend(listing.keys)
        if len(listing.keys) < 500:
            return keys
        after = listing.keys[-1]


def _text_digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


async def _scopes(source: Any, tenants: Sequence[str] | None, report: MigrationReport) -> list[str | None]:
    """The unscoped stores and every tenant of the source (or the ``tenants`` asked for)."""
    if tenants is not None:
        return list(tenants)
    if not isinstance(source, _StoresSide) or not source.stores.offers_drivers:
        return [None]
    found: list[str | None] = [None]
    async for entry in source.stores.iter_tenants():
        if entry.name is None:
            report.items.append(
                MigrationItem(
                    "history",
                    f"{TENANTS}/{entry.segment}",
                    action="error",
                    detail="the tenant's id is a digest (an id over 110 characters) and cannot be recovered",
                )
            )
            continue
        found.append(entry.name)
    return found


async def _histories(
    source: Any, source_ids: Sequence[str] | None, namespaces: Sequence[str] | None, report: MigrationReport
) -> list[tuple[str, str]]:
    """The (source id, namespace) pairs of one scope: those asked for, else every pair the source holds."""
    if not isinstance(source, _StoresSide) or not source.stores.offers_drivers:
        return [(s, n) for s in source_ids or ("history",) for n in (namespaces if namespaces is not None else ("",))]
    stores, segment = source.stores, source.root.removeprefix(f"{TENANTS}/").rstrip("/") or None
    if namespaces is None:
        found = [
            e
            async for e in iter_pages(
                lambda a, n: stores.list_namespaces("history", tenant_segment=segment, after=a, limit=n)
            )
        ]
        for entry in (e for e in found if e.name is None):
            report.items.append(
                MigrationItem(
                    "history",
                    entry.segment,
                    action="error",
                    tenant=source.tenant,
                    detail="the namespace is a digest (a name over 110 characters): pass it with --namespace",
                )
            )
        namespaces = [e.name for e in found if e.name is not None]
    pairs: list[tuple[str, str]] = []
    for namespace in namespaces:
        if source_ids is not None:
            pairs.extend((s, namespace) for s in source_ids)
            continue
        async for entry in iter_pages(
            lambda a, n, ns=namespace: stores.list_source_ids(ns, tenant_segment=segment, after=a, limit=n)
        ):
            if entry.name is None:
                report.items.append(
                    MigrationItem(
                        "history",
                        f"{namespace}/{entry.segment}",
                        action="error",
                        tenant=source.tenant,
                        detail="the source id is a digest (over 110 characters): pass it with --source-id",
                    )
                )
            else:
                pairs.append((entry.name, namespace))
    return pairs


async def migrate(
    source_url: str,
    target_url: str,
    *,
    source_ids: Sequence[str] | None = None,
    namespaces: Sequence[str] | None = None,
    tenants: Sequence[str] | None = None,
    conflicts: Conflicts = "refuse",
    dry_run: bool = False,
    progress: Progress | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
) -> MigrationReport:
    """Copy every history, file, snapshot, todo list and checkpoint of ``source_url`` to ``target_url``, verified.

    By default everything: the unscoped stores and every tenant the source lists, and in each
    every history namespace and source id it holds. ``tenants``, ``namespaces`` and
    ``source_ids`` narrow that to the ones named (``tenants`` then leaves the unscoped stores
    out). A ``framework://`` source has one history folder: it goes to the first source id and
    namespace given (default ``history`` and ``""``). When both stores have object drivers, the
    harness's todo lists and workflow checkpoints are copied too. The report says what each item
    became; ``refused`` when a conflict stopped it.

    Items are planned, copied and verified ``concurrency`` at a time (folders are made first,
    one after another); every item is distinct, so the order of the copies changes nothing.

    Raises:
        CliError: A URL is malformed, names no installed backend, or a store cannot list its content.
        ValueError: ``concurrency`` is below 1.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    report = MigrationReport(redact_url(source_url), redact_url(target_url), conflicts, dry_run)
    tick: Progress = progress or (lambda _phase, _done, _total: None)
    if target_url.split("://", 1)[0].lower() == FRAMEWORK_SCHEME:
        raise CliError("framework:// folders are a migration source only; the target must be a store URL")
    if (source_ids is not None and not source_ids) or (namespaces is not None and not namespaces):
        raise CliError("give at least one --source-id and one --namespace, or none to copy every one")
    async with AsyncExitStack() as stack:
        opened = _open_source(source_url, stack)
        target_stores = _StoresSide(_enter(open_url(target_url, must_exist=False), stack), target_url)
        _refuse_same_store(opened, target_stores)
        if isinstance(opened, _FrameworkSide):
            if tenants:
                raise CliError("a framework:// source has no tenants")
            if len(source_ids or ()) > 1 or len(namespaces or ()) > 1:
                raise CliError("a framework:// source has one history folder: give one --source-id and --namespace")
            opened.map_history((source_ids or ["history"])[0], (namespaces or [""])[0])
            sides: list[tuple[Any, _StoresSide, list[tuple[str, str]]]] = [(opened, target_stores, [opened.mapping])]
        else:
            sides = []
            for tenant in await _scopes(opened, tenants, report):
                source = opened.scope(tenant)
                sides.append(
                    (source, target_stores.scope(tenant), await _histories(source, source_ids, namespaces, report))
                )

        # plan: read both sides, write nothing
        source_driver, target_driver = opened.object_driver(), target_stores.object_driver()
        steps: list[Callable[[], Awaitable[None]]] = []
        budget = None if dry_run else _Budget(KEPT_BYTES)
        for source, target, pairs in sides:
            steps.extend(await _plan(report, source, target, pairs, source_driver, target_driver, conflicts, budget))
            tick("listing", len(report.items), 0)
        counter = _Counter(tick, "planning", len(steps))
        await run_bounded(steps, lambda plan: counter.after(plan()), concurrency)
        if report.of("conflict"):
            report.refused = True
            return report
        if dry_run:
            return report

        # copy: folders first, parents before children; then everything else concurrently
        scoped = {side[1].tenant: side for side in sides}
        work = [i for i in report.items if i.action in _COPIES]
        counter = _Counter(tick, "copying", len(work))

        async def copy(item: MigrationItem) -> None:
            source, target, _ = scoped[item.tenant]
            try:
                await _copy(item, source, target, source_driver, target_driver)
            except Exception as err:  # one item's failure is reported; the others go on
                item.action, item.detail = "error", f"{type(err).__name__}: {err}"

        folders = sorted((i for i in work if i.kind == "folder"), key=lambda i: i.where)
        for item in folders:
            await counter.after(copy(item))

        # Histories of a source whose provider reads many sessions from one listing (the object
        # store log) are read a chunk at a time (see LogHistoryProvider.export_logs): one listing
        # of the chunk's range instead of each session's own listings. Each read is as fresh as
        # a read of the session alone; the rest is copied item by item.
        reads = _read_together(work, scoped)

        async def copy_together(batch: tuple[Any, list[MigrationItem]]) -> None:
            provider, items = batch
            try:
                held: list[list[Entry] | None] = list(await provider.export_logs([i.where[2] for i in items]))
            except Exception:  # each session is then read (and fails) alone, reported as its own error
                held = [None] * len(items)
            for item, entries in zip(items, held, strict=True):
                if entries is not None:
                    source_id, namespace, _, _ = item.where
                    item.kept = _importable(entries, scoped[item.tenant][1].history(source_id, namespace))
            await run_bounded(items, lambda i: counter.after(copy(i)), concurrency)

        read_together = {id(item) for _, items in reads for item in items}
        await asyncio.gather(
            run_bounded(reads, copy_together, 2),  # the next chunk is read while one is written
            run_bounded(
                (i for i in work if i.kind != "folder" and id(i) not in read_together),
                lambda i: counter.after(copy(i)),
                concurrency,
            ),
        )

        # verify: read the target back
        counter = _Counter(tick, "verifying", len(work))

        def judge(item: MigrationItem, verified: bool) -> None:
            item.verified = verified
            if not verified:
                item.detail = "the target does not hold what was copied (count or digest differs)"

        async def verify(item: MigrationItem) -> None:
            if item.action not in ("error", "skip"):  # skip: an object that vanished before its copy
                judge(item, await _verify(item, scoped[item.tenant][1], target_driver))

        # Copied histories are read back together per source id and namespace, a chunk at a time
        # from one listing of the target each (see LogHistoryProvider.export_logs), while the
        # rest is read back item by item.
        together = _verify_together(work, scoped)

        async def verify_together(batch: tuple[Any, list[MigrationItem]]) -> None:
            provider, items = batch
            held = await provider.export_logs([i.where[2] for i in items])
            for item, entries in zip(items, held, strict=True):
                judge(item, _digests(entries) == item.expected)
            counter.advance(len(items))

        batched = {id(item) for _, items in together for item in items}
        await asyncio.gather(
            run_bounded(together, verify_together, 1),  # each chunk keeps the driver's GETs in flight
            run_bounded((i for i in work if id(i) not in batched), lambda i: counter.after(verify(i)), concurrency),
        )
    return report


def _verify_together(
    work: list[MigrationItem], scoped: dict[str | None, tuple[Any, _StoresSide, Any]]
) -> list[tuple[Any, list[MigrationItem]]]:
    """The copied histories whose target provider reads many sessions from one listing, by provider, in chunks.

    A chunk's records are held at once and its listing covers the provider's whole folder: 1,000
    sessions keep both modest (a listing request per 1,000 objects, per chunk).
    """
    groups: dict[int, tuple[Any, list[MigrationItem]]] = {}
    for item in work:
        if item.kind != "history" or item.action != "copy":
            continue
        source_id, namespace, _, _ = item.where
        provider = scoped[item.tenant][1].history(source_id, namespace)
        if isinstance(provider, LogHistoryProvider) and provider.reads_many:
            groups.setdefault(id(provider), (provider, []))[1].append(item)
    return [
        (provider, items[start : start + VERIFY_CHUNK])
        for provider, items in groups.values()
        for start in range(0, len(items), VERIFY_CHUNK)
    ]


def _read_together(
    work: list[MigrationItem], scoped: dict[str | None, tuple[Any, _StoresSide, Any]]
) -> list[tuple[Any, list[MigrationItem]]]:
    """The histories to copy that the plan did not keep, whose source provider reads many sessions at once, in chunks.

    By source provider, in the order the source listed them (a chunk's sessions sort
    together, so its listing covers their range), :data:`COPY_CHUNK` at a time.
    """
    groups: dict[int, tuple[Any, list[MigrationItem]]] = {}
    for item in work:
        if item.kind != "history" or item.action not in _COPIES or item.kept is not None:
            continue
        source = scoped[item.tenant][0]
        if not isinstance(source, _StoresSide):
            continue
        source_id, namespace, _, _ = item.where
        provider = source.history(source_id, namespace)
        if isinstance(provider, LogHistoryProvider) and provider.reads_many:
            groups.setdefault(id(provider), (provider, []))[1].append(item)
    return [
        (provider, items[start : start + COPY_CHUNK])
        for provider, items in groups.values()
        for start in range(0, len(items), COPY_CHUNK)
    ]


class _Budget:
    """What the plan may still keep of the source items it read, for their copy (bytes)."""

    def __init__(self, limit: int) -> None:
        self.left = limit

    def keep(self, item: MigrationItem, value: Any, cost: int) -> None:
        """Keep ``value`` on ``item`` for its copy if ``cost`` fits (else the copy reads the item again)."""
        if cost <= self.left:
            self.left -= cost
            item.kept = value


class _Counter:
    """Counts finished steps of one phase and reports each to the progress callback."""

    def __init__(self, tick: Progress, phase: str, total: int) -> None:
        self.tick, self.phase, self.total, self.done = tick, phase, total, 0
        tick(phase, 0, total)

    async def after(self, step: Awaitable[None]) -> None:
        await step
        self.advance(1)

    def advance(self, steps: int) -> None:
        self.done += steps
        self.tick(self.phase, self.done, self.total)


def _label(tenant: str | None, *parts: str) -> str:
    """An item's name in the report: its place in its stores (the item's ``tenant`` says whose)."""
    del tenant
    return "/".join(p for p in parts if p)


async def _plan(
    report: MigrationReport,
    source: Any,
    target: _StoresSide,
    pairs: list[tuple[str, str]],
    source_driver: ObjectDriver | None,
    target_driver: ObjectDriver | None,
    conflicts: Conflicts,
    budget: _Budget | None,
) -> list[Callable[[], Awaitable[None]]]:
    """Add the items of one scope to ``report`` and return, per item, what reads both sides to plan it.

    Listing happens here, one page after another; the returned steps read the items
    themselves and may run concurrently (each fills in only its own item). With a ``budget``
    (a migration that copies), an item the target does not hold is planned as a copy without
    reading the source (its copy reads it), and what a step read of the source for an item
    to copy is kept on it within the budget; without one (a dry run), every item is read.
    """
    tenant = target.tenant
    steps: list[Callable[[], Awaitable[None]]] = []

    def step(item: MigrationItem, plan: Callable[[MigrationItem], Awaitable[None]]) -> None:
        report.items.append(item)

        async def run() -> None:
            await plan(item)

        steps.append(run)

    # What the target holds, from its listings (a page per 100 sessions or 500 snapshots): an item
    # the target does not list is planned as absent without reading it there. Every copied item
    # is read back from the target in the verify phase all the same.
    held: dict[tuple[str, str], set[str] | None] = {}

    def unread(item: MigrationItem) -> bool:
        """Plan ``item``, which the target does not hold, as a copy that reads the source itself."""
        if budget is None:
            return False
        item.action, item.unread = "copy", True
        return True

    def keep(item: MigrationItem, value: Any, cost: int) -> None:
        if budget is not None and item.action in _COPIES:
            budget.keep(item, value, cost)

    async def plan_history(item: MigrationItem) -> None:
        source_id, namespace, session_id, name = item.where
        provider = target.history(source_id, namespace)
        listed = held.get((source_id, namespace))
        present = listed is None or session_id in listed
        if not present and unread(item):
            return
        entries = _importable(await _read_history(source, source_id, namespace, session_id, name), provider)
        src, size = _measured(entries)
        dst = _digests(await _read_history(target, source_id, namespace, session_id, "")) if present else []
        item.source_count, item.target_count = _messages_in(src), _messages_in(dst)
        item.target_records = len(dst)
        item.action, item.expected = _history_action(src, dst, conflicts)
        keep(item, entries, size)

    for source_id, namespace in pairs:
        held[(source_id, namespace)] = await _target_sessions(target, source_id, namespace)
        async for session_id, name in source.history_sessions(source_id, namespace):
            label = _label(tenant, namespace, source_id, session_id or name)
            item = MigrationItem("history", label, where=(source_id, namespace, session_id, name), tenant=tenant)
            if session_id is None:
                item.action = "error"
                item.detail = f"the session id of {name!r} is a digest and cannot be recovered"
                report.items.append(item)
                continue
            step(item, plan_history)

    async def plan_snapshot(item: MigrationItem) -> None:
        rel_key, session_id = item.where
        present = held_snapshots is None or session_id is None or session_id in held_snapshots
        if not present and unread(item):
            return
        try:
            session = await source.read_snapshot(rel_key, session_id)
        except ValueError as err:
            item.action, item.detail = "error", str(err)
            return
        if session is None:
            item.action = "error"
            item.detail = "the session id is a digest and cannot be recovered" if session_id is None else "vanished"
            return
        try:
            mine = await target.read_snapshot(rel_key, session_id) if present else None
        except ValueError as err:
            item.action, item.detail = "error", f"the target's snapshot is unreadable: {err}"
            return
        item.expected = [_snapshot_digest(session)]
        item.action = _single_action(item.expected[0], None if mine is None else _snapshot_digest(mine), conflicts)
        item.source_count, item.target_count = 1, int(mine is not None)
        keep(item, session, _SNAPSHOT_COST)

    held_snapshots = await _target_snapshots(target)
    async for rel_key, session_id in source.snapshots():
        step(
            MigrationItem(
                "snapshot", _label(tenant, session_id or rel_key), where=(rel_key, session_id), tenant=tenant
            ),
            plan_snapshot,
        )

    source_files = source.files()
    if source_files is not None:

        async def plan_folder(item: MigrationItem) -> None:
            exists = item.where in {p for p, d in await _walk_children(target.files(), item.where) if d}
            item.action = "skip" if exists else "copy"

        async def plan_file(item: MigrationItem) -> None:
            mine_text = await target.files().read(item.where)  # first: a file the target lacks is copied unread
            if mine_text is None and unread(item):
                return
            text = await source_files.read(item.where)
            if text is None:
                item.action, item.detail = "error", "vanished"
                return
            item.expected = [_text_digest(text)]
            item.source_count, item.target_count = len(text), len(mine_text or "")
            item.action = _single_action(
                item.expected[0], None if mine_text is None else _text_digest(mine_text), conflicts
            )
            keep(item, text, len(text))

        for path, is_directory in await _walk_files(source_files):
            name = _label(tenant, path + ("/" if is_directory else ""))
            item = MigrationItem("folder" if is_directory else "file", name, where=path, tenant=tenant)
            step(item, plan_folder if is_directory else plan_file)

    if source_driver is not None and target_driver is not None:

        async def plan_object(item: MigrationItem) -> None:
            mine_object = await target_driver.get(item.where)  # first: an object the target lacks is copied unread
            if mine_object is None and unread(item):
                return
            stored = await source_driver.get(item.where)
            if stored is None:
                item.action, item.detail = "skip", "vanished from the source while planning"
                return
            item.expected = [hashlib.sha256(stored.data).hexdigest()]
            item.action = _single_action(
                item.expected[0],
                None if mine_object is None else hashlib.sha256(mine_object.data).hexdigest(),
                conflicts,
            )
            keep(item, stored.data, len(stored.data))

        for prefix in OBJECT_PREFIXES:
            for key in await _walk_objects(source_driver, target.root + prefix):
                step(MigrationItem("object", key, where=key, tenant=tenant), plan_object)
    return steps


async def _target_sessions(target: _StoresSide, source_id: str, namespace: str) -> set[str] | None:
    """The session ids the target lists for ``source_id`` in ``namespace``; ``None`` if it cannot list them."""
    try:
        return {session_id async for session_id, _ in target.history_sessions(source_id, namespace) if session_id}
    except CliError:
        return None


async def _target_snapshots(target: _StoresSide) -> set[str] | None:
    """The session ids of the target's snapshots; ``None`` if its session store cannot list them."""
    try:
        return {session_id async for _, session_id in target.snapshots() if session_id is not None}
    except CliError:
        return None


async def _walk_children(files: AgentFileStore, path: str) -> list[tuple[str, bool]]:
    parent, _, _ = path.rpartition("/")
    try:
        children = await files.list_children(parent)
    except (FileNotFoundError, NotADirectoryError):
        return []
    return [(f"{parent}/{c.name}" if parent else c.name, c.type == "directory") for c in children]


async def _copy(item: MigrationItem, source: Any, target: _StoresSide, source_driver: Any, target_driver: Any) -> None:
    """Copy ``item``: from what the plan kept of it, else read from the source (once)."""
    kept, item.kept = item.kept, None
    if item.kind == "history":
        source_id, namespace, session_id, name = item.where
        provider = target.history(source_id, namespace)
        if kept is not None:
            entries = kept
        else:
            entries = _importable(await _read_history(source, source_id, namespace, session_id, name), provider)
        if item.unread:
            item.expected = _digests(entries)
            item.source_count = _messages_in(item.expected)
        if item.action == "replace":
            await provider.delete_session(session_id)
        elif item.action == "extend":
            entries = entries[item.target_records :]
        # A copy goes to a session the plan found empty on the target: create its log directly.
        await _import(provider, session_id, entries, absent=item.action == "copy")
    elif item.kind == "snapshot":
        rel_key, session_id = item.where
        session = kept if kept is not None else await source.read_snapshot(rel_key, session_id)
        if session is None:
            raise CliError("the source snapshot vanished")
        if item.unread:
            item.expected, item.source_count = [_snapshot_digest(session)], 1
        await target.write_snapshot(rel_key, session_id, session)
    elif item.kind == "folder":
        await target.files().create_directory(item.where)
    elif item.kind == "file":
        path = item.where
        text = kept if kept is not None else await source.files().read(path)
        if text is None:
            raise CliError("the source file vanished")
        if item.unread:
            item.expected, item.source_count = [_text_digest(text)], len(text)
        await target.files().write(path, text, overwrite=True)
    else:
        data = kept
        if data is None:
            stored = await source_driver.get(item.where)
            if stored is None and item.unread:  # as the plan treats one (a checkpoint pruned meanwhile)
                item.action, item.detail = "skip", "vanished from the source before its copy"
                return
            if stored is None:
                raise CliError("the source object vanished")
            data = stored.data
        if item.unread:
            item.expected = [hashlib.sha256(data).hexdigest()]
        await target_driver.put(item.where, data)


async def _verify(item: MigrationItem, target: _StoresSide, target_driver: Any) -> bool:
    if item.kind == "history":
        source_id, namespace, session_id, _ = item.where
        held = _digests(await _read_history(target, source_id, namespace, session_id, ""))
        return held == item.expected
    if item.kind == "snapshot":
        rel_key, session_id = item.where
        session = await target.read_snapshot(rel_key, session_id)
        return session is not None and [_snapshot_digest(session)] == item.expected
    if item.kind == "folder":
        return item.where in {p for p, d in await _walk_children(target.files(), item.where) if d}
    if item.kind == "file":
        text = await target.files().read(item.where)
        return text is not None and [_text_digest(text)] == item.expected
    stored = await target_driver.get(item.where)
    return stored is not None and [hashlib.sha256(stored.data).hexdigest()] == item.expected
