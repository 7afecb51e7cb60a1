"""Look inside a store: sessions, one session's history, files, a session snapshot (read only: nothing is created)."""

from __future__ import annotations

from typing import Any

from agent_framework import Message

from agent_stores.core import (
    LogHistoryProvider,
    ObjectDriver,
    ObjectSessionStore,
    decode_snapshot,
    hide_unanswered_calls,
    redact_url,
)
from agent_stores.core.compaction import fold_records, is_compaction_record
from agent_stores.core.objectlog import LogGapError

from ._errors import CliError, CorruptDataError
from ._open import open_url
from ._scope import Scope, no_folder, no_session

__all__ = ["list_files", "list_sessions", "list_snapshots", "read_history", "read_snapshot"]


def _lister(provider: Any, url: str) -> Any:
    if not callable(getattr(provider, "list_sessions", None)):
        raise CliError(f"the history provider of {redact_url(url)} cannot list sessions (no list_sessions())")
    return provider


def _scope_json(scope: Scope, *, history: bool = True) -> dict[str, Any]:
    document: dict[str, Any] = {"tenant": scope.tenant}
    if history:
        document |= {"source_id": scope.source_id, "namespace": scope.namespace}
    return document


async def list_sessions(url: str, scope: Scope, *, after: str | None, limit: int) -> dict[str, Any]:
    """One page of the sessions holding history, with their message counts and whether a snapshot exists.

    The snapshot column reads the session store of the same tenant as the history.
    """
    async with open_url(url, must_exist=True) as stores:
        provider = _lister(scope.history(stores), url)
        snapshots = stores.session_store(tenant=scope.tenant)
        ids: list[str] = await provider.list_sessions(after=after, limit=limit)
        sessions: list[dict[str, Any]] = []
        for session_id in ids:
            count = await provider.count_messages(session_id) if hasattr(provider, "count_messages") else None
            sessions.append(
                {"session_id": session_id, "messages": count, "snapshot": await snapshots.get(session_id) is not None}
            )
        return {
            "url": redact_url(url),
            **_scope_json(scope),
            "sessions": sessions,
            "next_after": ids[-1] if len(ids) == limit else None,
        }


async def list_snapshots(url: str, scope: Scope, *, after: str | None, limit: int) -> dict[str, Any]:
    """One page of the session snapshots the session store holds (ids read from the snapshots)."""
    async with open_url(url, must_exist=True) as stores:
        store = stores.session_store(tenant=scope.tenant)
        if not isinstance(store, ObjectSessionStore):
            raise CliError(f"the session store of {redact_url(url)} cannot list snapshots")
        driver: ObjectDriver = store.driver
        listing = await driver.list(store.prefix, delimiter="/", after=after, limit=limit)
        sessions: list[dict[str, Any]] = []
        for key in listing.keys:
            if not key.endswith(".json"):
                continue
            stored = await driver.get(key)
            if stored is None:
                continue
            try:
                session = decode_snapshot(stored.data, where=key)
            except ValueError as err:
                sessions.append({"key": key, "error": str(err)})
                continue
            sessions.append({"key": key, "session_id": session.session_id, "state": sorted(session.state)})
        return {
            "url": redact_url(url),
            **_scope_json(scope, history=False),
            "snapshots": sessions,
            "next_after": listing.keys[-1] if len(listing.keys) == limit else None,
        }


def message_row(index: int, message: Message) -> dict[str, Any]:
    """A short description of one message."""
    return {
        "index": index,
        "role": str(message.role),
        "message_id": message.message_id,
        "author_name": message.author_name,
        "contents": [c.type for c in message.contents],
        "text": message.text,
    }


async def _compacted(
    provider: Any, session_id: str, *, model_view: bool
) -> list[tuple[Message, dict[str, Any]]] | None:
    """The session's view with what stored compactions decided marked; ``None`` when nothing was compacted.

    With ``model_view``, only what the history provider loads for the model: excluded messages
    and unanswered calls left out.
    """
    if not isinstance(provider, LogHistoryProvider):
        return None
    key = provider.keys.history(provider.source_id, session_id)
    payloads = await provider.driver.read(key)
    if not any(is_compaction_record(p) for p in payloads):
        return None
    keys, view = fold_records(payloads, where=f"history record in {key!r}", cache=provider.decode_cache)
    ordinal = {index: n for n, index in enumerate(i for i, p in enumerate(payloads) if not is_compaction_record(p))}
    marked = [
        (
            m,
            {
                "stored": ordinal[k[1]] if k[0] == "m" else None,
                "excluded": bool(m.additional_properties.get("_excluded")),
            },
        )
        for k, m in zip(keys, view, strict=True)
    ]
    if model_view:
        kept = hide_unanswered_calls([m for m, mark in marked if not mark["excluded"]])
        ids = {id(m) for m in kept}
        marked = [(m, mark) for m, mark in marked if id(m) in ids]
    return marked


async def read_history(
    url: str, session_id: str, scope: Scope, *, offset: int, limit: int, full: bool, model_view: bool = False
) -> dict[str, Any]:
    """One page of a session's stored messages, oldest first (everything stored, no window applied).

    Where stored compactions decided something, the page is the compacted view: every stored
    message (``stored``: its position, ``excluded`` marked) and the messages a compaction
    added (``stored``: ``None``); with ``model_view`` only what the model is sent of it.

    Raises:
        CliError: The store holds no history for the session.
        CorruptDataError: The history has a gap (with the repair command that shows what is left)
            or a record that cannot be decoded.
    """
    async with open_url(url, must_exist=True) as stores:
        provider: Any = scope.history(stores)
        try:
            if callable(getattr(provider, "export_messages", None)):
                messages: list[Message] = await provider.export_messages(session_id)
            else:
                messages = await provider.get_messages(session_id)
        except LogGapError as err:
            from ._repair import repair_command

            raise CorruptDataError(
                f"{err} (see what a repair keeps: {repair_command(url, session_id, scope)})"
            ) from err
        if not messages:
            raise no_session(url, session_id, scope)
        marked = await _compacted(provider, session_id, model_view=model_view)
        if marked is not None:
            messages = [m for m, _ in marked]
        elif model_view:
            messages = hide_unanswered_calls(messages)
        page = messages[offset : offset + limit]
        rows = [m.to_dict() if full else message_row(offset + i, m) for i, m in enumerate(page)]
        if marked is not None:
            for row, (_, mark) in zip(rows, marked[offset : offset + limit], strict=True):
                row.update(mark)
        return {
            "url": redact_url(url),
            "session_id": session_id,
            **_scope_json(scope),
            "total": len(messages),
            "offset": offset,
            "model_view": model_view,
            "messages": rows,
            "next_offset": offset + limit if offset + limit < len(messages) else None,
        }


async def list_files(
    url: str, directory: str, scope: Scope, *, recursive: bool, after: str | None, limit: int
) -> dict[str, Any]:
    """One page of the entries under ``directory`` (with sizes of files), in name order.

    ``directory`` naming a file lists that file alone.

    Raises:
        CliError: The file store holds no folder or file ``directory``.
    """
    async with open_url(url, must_exist=True) as stores:
        files = stores.file_store(tenant=scope.tenant)
        start = directory.strip("/")
        entries: list[dict[str, Any]] = []
        pending = [start]
        if start:
            parent, _, name = start.rpartition("/")
            found = [e for e in await files.list_children(parent) if e.name == name]
            if not found:
                raise no_folder(url, start, scope)
            if found[0].type != "directory":
                entries.append({"path": start, "type": "file"})
                pending = []
        while pending:
            folder = pending.pop(0)
            for entry in sorted(await files.list_children(folder), key=lambda e: e.name):
                path = f"{folder}/{entry.name}" if folder else entry.name
                if entry.type == "directory":
                    entries.append({"path": path + "/", "type": "directory"})
                    if recursive:
                        pending.append(path)
                else:
                    entries.append({"path": path, "type": "file"})
        entries.sort(key=lambda e: e["path"])
        if after is not None:
            entries = [e for e in entries if e["path"] > after]
        page = entries[:limit]
        for entry in page:
            if entry["type"] == "file":
                text = await files.read(entry["path"])
                entry["characters"] = None if text is None else len(text)
        return {
            "url": redact_url(url),
            **_scope_json(scope, history=False),
            "directory": directory,
            "entries": page,
            "next_after": page[-1]["path"] if len(entries) > limit else None,
        }


async def read_snapshot(url: str, session_id: str, scope: Scope) -> dict[str, Any]:
    """The stored snapshot of a session, as the session store returns it.

    Raises:
        CliError: No snapshot is stored for ``session_id``.
    """
    async with open_url(url, must_exist=True) as stores:
        session = await stores.session_store(tenant=scope.tenant).get(session_id)
        if session is None:
            raise no_session(url, session_id, scope, snapshot=True)
        return {"url": redact_url(url), **_scope_json(scope, history=False), "snapshot": session.to_dict()}
