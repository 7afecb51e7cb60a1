"""Look inside a store: sessions, one session's history, files, a session snapshot (read only)."""

from __future__ import annotations

from typing import Any

from agent_framework import Message

from agent_stores.core import ObjectDriver, ObjectSessionStore, Stores, decode_snapshot, open_stores, redact_url
from agent_stores.core.objectlog import LogGapError

from ._errors import CliError, CorruptDataError

__all__ = ["list_files", "list_sessions", "list_snapshots", "open_url", "read_history", "read_snapshot"]


def open_url(url: str) -> Stores:
    """``open_stores(url)``, with a malformed URL or a missing backend as a one-line error.

    Raises:
        CliError: The URL is malformed or its backend is not installed.
    """
    if "://" not in url:
        raise CliError(f"expected a store URL (scheme://...), got {redact_url(url)!r}")
    try:
        return open_stores(url)
    except ValueError as err:
        raise CliError(str(err)) from err


def _lister(provider: Any, url: str) -> Any:
    if not callable(getattr(provider, "list_sessions", None)):
        raise CliError(f"the history provider of {redact_url(url)} cannot list sessions (no list_sessions())")
    return provider


async def list_sessions(url: str, *, source_id: str, namespace: str, after: str | None, limit: int) -> dict[str, Any]:
    """One page of the sessions holding history, with their message counts and whether a snapshot exists."""
    async with open_url(url) as stores:
        provider = _lister(stores.history_provider(source_id, namespace=namespace), url)
        snapshots = stores.session_store()
        ids: list[str] = await provider.list_sessions(after=after, limit=limit)
        sessions: list[dict[str, Any]] = []
        for session_id in ids:
            count = await provider.count_messages(session_id) if hasattr(provider, "count_messages") else None
            sessions.append(
                {"session_id": session_id, "messages": count, "snapshot": await snapshots.get(session_id) is not None}
            )
        return {
            "url": redact_url(url),
            "source_id": source_id,
            "namespace": namespace,
            "sessions": sessions,
            "next_after": ids[-1] if len(ids) == limit else None,
        }


async def list_snapshots(url: str, *, after: str | None, limit: int) -> dict[str, Any]:
    """One page of the session snapshots the session store holds (ids read from the snapshots)."""
    async with open_url(url) as stores:
        store = stores.session_store()
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


async def read_history(
    url: str, session_id: str, *, source_id: str, namespace: str, offset: int, limit: int, full: bool
) -> dict[str, Any]:
    """One page of a session's stored messages, oldest first (everything stored, no window applied).

    Raises:
        CorruptDataError: The history has a gap (with the repair command that shows what is left)
            or a record that cannot be decoded.
    """
    async with open_url(url) as stores:
        provider: Any = stores.history_provider(source_id, namespace=namespace)
        try:
            if callable(getattr(provider, "export_messages", None)):
                messages: list[Message] = await provider.export_messages(session_id)
            else:
                messages = await provider.get_messages(session_id)
        except LogGapError as err:
            from ._repair import repair_command

            command = repair_command(url, session_id, source_id=source_id, namespace=namespace)
            raise CorruptDataError(f"{err} (see what a repair keeps: {command})") from err
        page = messages[offset : offset + limit]
        return {
            "url": redact_url(url),
            "session_id": session_id,
            "source_id": source_id,
            "namespace": namespace,
            "total": len(messages),
            "offset": offset,
            "messages": [m.to_dict() if full else message_row(offset + i, m) for i, m in enumerate(page)],
            "next_offset": offset + limit if offset + limit < len(messages) else None,
        }


async def list_files(url: str, directory: str, *, recursive: bool, after: str | None, limit: int) -> dict[str, Any]:
    """One page of the entries under ``directory`` (with sizes of files), in name order."""
    async with open_url(url) as stores:
        files = stores.file_store()
        entries: list[dict[str, Any]] = []
        pending = [directory.strip("/")]
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
            "directory": directory,
            "entries": page,
            "next_after": page[-1]["path"] if len(entries) > limit else None,
        }


async def read_snapshot(url: str, session_id: str) -> dict[str, Any]:
    """The stored snapshot of a session, as the session store returns it.

    Raises:
        CliError: No snapshot is stored for ``session_id``.
    """
    async with open_url(url) as stores:
        session = await stores.session_store().get(session_id)
        if session is None:
            raise CliError(f"no session snapshot {session_id!r} in {redact_url(url)}")
        return {"url": redact_url(url), "snapshot": session.to_dict()}
