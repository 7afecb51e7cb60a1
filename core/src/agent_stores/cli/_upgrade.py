"""``agent-stores upgrade``: move tenant data written by release 0.1 into the tenants' roots.

It also rewrites release 0.1's checkpoint index entries in this release's form (their keys
hold the expiry, so listings read no record), namespace by namespace, inside tenants too.

Release 0.1 kept a tenant view's data in three places of the unscoped stores: files under the
folder ``tenants/<tenant>/`` of the file store, sessions under the session id
``tenants/<tenant>/<id>``, history in the namespace ``tenants/<tenant>``. Every kind of a
tenant now lies under ``tenants/<tenant>/`` of the store (see ``agent_stores.core.keys``).
Each item is copied to its new place, read back and compared, and only then removed from the
old one, so an interrupted upgrade loses nothing and a second run finishes it; an item whose
new place already holds different data is a conflict and stays where it was.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from agent_framework import AgentFileStore, Message

from agent_stores.core import (
    TENANTS,
    ObjectAgentFileStore,
    ObjectSessionStore,
    Stores,
    decode_segment,
    decode_snapshot,
    encode_message,
    encode_snapshot,
    redact_url,
)
from agent_stores.core.listing import iter_pages

from ._errors import CliError
from ._open import open_url

__all__ = ["UpgradeItem", "UpgradeReport", "upgrade"]

_OLD_ROOT = f"{TENANTS}/"

Progress = Callable[[str, int], None]


@dataclass
class UpgradeItem:
    """One file, session or history moved (or to be moved) into its tenant's root."""

    kind: Literal["history", "session", "file", "checkpoints"]
    tenant: str
    name: str
    action: str = ""  # move, done (already moved: the old copy removed), conflict, error
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        """The item as the ``--json`` report shows it."""
        document = {"kind": self.kind, "tenant": self.tenant, "name": self.name, "action": self.action}
        if self.detail:
            document["detail"] = self.detail
        return document


@dataclass
class UpgradeReport:
    """What an upgrade found and did."""

    url: str
    dry_run: bool
    items: list[UpgradeItem] = field(default_factory=list[UpgradeItem])

    @property
    def ok(self) -> bool:
        """Nothing failed and nothing conflicted."""
        return all(item.action in ("move", "done") for item in self.items)

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` report."""
        return {
            "ok": self.ok,
            "url": self.url,
            "dry_run": self.dry_run,
            "items": [item.to_json() for item in self.items],
        }


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _messages_digest(messages: list[Message]) -> list[str]:
    """Digests of the messages' stored records (the same bytes whichever store holds them)."""
    return [_digest(encode_message(m)) for m in messages]


async def upgrade(url: str, *, dry_run: bool = False, progress: Progress | None = None) -> UpgradeReport:
    """Move every tenant's data from the 0.1 layout into ``tenants/<tenant>/`` of the store at ``url``.

    Raises:
        CliError: The URL is malformed or names no installed backend, or the backend does not
            hand out its drivers (nothing to upgrade there: tenant views need them).
    """
    report = UpgradeReport(redact_url(url), dry_run)
    tick: Progress = progress or (lambda _phase, _done: None)
    async with open_url(url, must_exist=True) as stores:
        if not stores.offers_drivers:
            raise CliError(f"{redact_url(url)}: the backend does not hand out its drivers; nothing to upgrade")
        await _histories(stores, report, dry_run, tick)
        await _sessions(stores, report, dry_run, tick)
        await _files(stores, report, dry_run, tick)
        await _checkpoint_indexes(stores, report, dry_run, tick)
    return report


async def _checkpoint_indexes(stores: Stores, report: UpgradeReport, dry_run: bool, tick: Progress) -> None:
    """Rewrite every namespace's 0.1 checkpoint index entries (see ``ObjectCheckpointStorage.upgrade_index``)."""
    scopes: list[tuple[str | None, str | None]] = [(None, None)]
    async for tenant in iter_pages(lambda a, n: stores.list_tenants(after=a, limit=n)):
        scopes.append((tenant.segment, tenant.name))
    for tenant_segment, tenant in scopes:
        if tenant_segment is not None and tenant is None:
            continue  # a digest: no tenant id to open its view with (its listings still read records)
        namespaces = iter_pages(
            lambda a, n, t=tenant_segment: stores.list_namespaces("checkpoints", tenant_segment=t, after=a, limit=n)
        )
        async for namespace in namespaces:
            if namespace.name is None:
                continue
            storage = stores.checkpoint_storage(tenant=tenant, namespace=namespace.name)
            rewritten = await storage.upgrade_index(dry_run=dry_run)
            if rewritten:
                detail = f"{rewritten} index entries {'to rewrite' if dry_run else 'rewritten'}"
                report.items.append(UpgradeItem("checkpoints", tenant or "", namespace.name, "move", detail))
                tick("checkpoints", len(report.items))


async def _histories(stores: Stores, report: UpgradeReport, dry_run: bool, tick: Progress) -> None:
    namespaces = [
        entry.name
        async for entry in iter_pages(lambda a, n: stores.list_namespaces("history", after=a, limit=n))
        if entry.name is not None and entry.name.startswith(_OLD_ROOT) and len(entry.name) > len(_OLD_ROOT)
    ]
    for namespace in namespaces:
        tenant = namespace[len(_OLD_ROOT) :]
        async for source in iter_pages(lambda a, n, ns=namespace: stores.list_source_ids(ns, after=a, limit=n)):
            if source.name is None:
                report.items.append(
                    UpgradeItem(
                        "history", tenant, source.segment, "error", "the source id is a digest: not recoverable"
                    )
                )
                continue
            old: Any = stores.history_provider(source.name, namespace=namespace)
            new: Any = stores.history_provider(source.name, tenant=tenant)
            async for session_id in old.iter_sessions():
                item = UpgradeItem("history", tenant, f"{source.name}/{session_id}")
                report.items.append(item)
                messages = await old.export_messages(session_id)
                held = await new.export_messages(session_id)
                if held and _messages_digest(held) != _messages_digest(messages):
                    item.action, item.detail = "conflict", "the tenant's root already holds another history of it"
                    continue
                item.action = "done" if held else "move"
                if not dry_run:
                    if not held:
                        await new.import_messages(session_id, messages)
                        if _messages_digest(await new.export_messages(session_id)) != _messages_digest(messages):
                            item.action, item.detail = "error", "the copy did not read back equal; the old one is kept"
                            continue
                    await old.delete_session(session_id)
                tick("history", len(report.items))


async def _sessions(stores: Stores, report: UpgradeReport, dry_run: bool, tick: Progress) -> None:
    unscoped = stores.session_store()
    if not isinstance(unscoped, ObjectSessionStore):
        return
    after: str | None = None
    while True:
        listing = await unscoped.driver.list(unscoped.prefix, delimiter="/", after=after, limit=500)
        for key in listing.keys:
            name = key[len(unscoped.prefix) :]
            if not name.endswith(".json"):
                continue
            stored_id = decode_segment(name[: -len(".json")])
            if stored_id is None or not stored_id.startswith(_OLD_ROOT):
                continue
            tenant_segment, slash, session_id = stored_id[len(_OLD_ROOT) :].partition("/")
            tenant = decode_segment(tenant_segment)
            if not slash or tenant is None or not session_id:
                continue
            await _move_session(stores, unscoped, (key, stored_id), tenant, session_id, report, dry_run)
            tick("sessions", len(report.items))
        if len(listing.keys) < 500:
            return
        after = listing.keys[-1]


async def _move_session(
    stores: Stores,
    unscoped: ObjectSessionStore,
    old: tuple[str, str],
    tenant: str,
    session_id: str,
    report: UpgradeReport,
    dry_run: bool,
) -> None:
    key, _ = old
    item = UpgradeItem("session", tenant, session_id)
    report.items.append(item)
    stored = await unscoped.driver.get(key)
    if stored is None:
        item.action, item.detail = "error", "vanished"
        return
    new = stores.session_store(tenant=tenant)
    try:
        session = decode_snapshot(stored.data, where=repr(key))
    except ValueError as err:
        item.action, item.detail = "error", f"unreadable, left where it is: {err}"
        return
    held = await new.get(session_id)
    if held is not None and encode_snapshot(held) != encode_snapshot(session):
        item.action, item.detail = "conflict", "the tenant's root already holds another snapshot of it"
        return
    item.action = "done" if held is not None else "move"
    if dry_run:
        return
    if held is None:
        await new.set(session_id, session)
        copied = await new.get(session_id)
        if copied is None or encode_snapshot(copied) != encode_snapshot(session):
            item.action, item.detail = "error", "the copy did not read back equal; the old one is kept"
            return
    await unscoped.driver.delete(key, if_version=stored.version)


async def _files(stores: Stores, report: UpgradeReport, dry_run: bool, tick: Progress) -> None:
    unscoped = stores.file_store()
    try:
        tenants = [e for e in await unscoped.list_children(TENANTS) if e.type == "directory"]
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in tenants:
        tenant = decode_segment(entry.name)
        if tenant is None:
            report.items.append(UpgradeItem("file", entry.name, "", "error", "the tenant's id is not recoverable"))
            continue
        old_root = f"{TENANTS}/{entry.name}"
        await _move_folder(unscoped, stores.file_store(tenant=tenant), old_root, "", tenant, report, dry_run)
        if not dry_run and all(i.action in ("move", "done") for i in report.items if i.tenant == tenant):
            await _remove_folders(unscoped, old_root)
        tick("files", len(report.items))
    if not dry_run and isinstance(unscoped, ObjectAgentFileStore) and not await unscoped.list_children(TENANTS):
        await unscoped.driver.delete(f"{unscoped.prefix}{TENANTS}/")


async def _remove_folders(files: AgentFileStore, folder: str) -> None:
    """Remove the directory markers left under ``folder`` (and its own) once every file is gone."""
    if not isinstance(files, ObjectAgentFileStore):
        return
    for child in await files.list_children(folder):
        if child.type == "directory":
            await _remove_folders(files, f"{folder}/{child.name}")
    if not await files.list_children(folder):
        await files.driver.delete(f"{files.prefix}{folder}/")


async def _move_folder(
    old: AgentFileStore,
    new: AgentFileStore,
    old_root: str,
    folder: str,
    tenant: str,
    report: UpgradeReport,
    dry_run: bool,
) -> None:
    here = f"{old_root}/{folder}" if folder else old_root
    children = await old.list_children(here)
    if folder and not children:
        item = UpgradeItem("file", tenant, folder + "/", "move")
        report.items.append(item)
        if not dry_run:
            await new.create_directory(folder)
    for child in children:
        path = f"{folder}/{child.name}" if folder else child.name
        if child.type == "directory":
            await _move_folder(old, new, old_root, path, tenant, report, dry_run)
            continue
        item = UpgradeItem("file", tenant, path)
        report.items.append(item)
        text = await old.read(f"{old_root}/{path}")
        if text is None:
            item.action, item.detail = "error", "vanished"
            continue
        held = await new.read(path)
        if held is not None and held != text:
            item.action, item.detail = "conflict", "the tenant's root already holds another file at this path"
            continue
        item.action = "done" if held is not None else "move"
        if dry_run:
            continue
        if held is None:
            await new.write(path, text)
            if await new.read(path) != text:
                item.action, item.detail = "error", "the copy did not read back equal; the old one is kept"
                continue
        await old.delete(f"{old_root}/{path}")
