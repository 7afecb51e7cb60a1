"""Tenant views (``Stores.tenant``) on every backend: nothing of one tenant is reachable through another's view.

``agent_stores.testing.hostile`` proves isolation by namespace and prefix, the mechanisms under
the views; these tests go through the views a hosted application uses: a client-supplied session
key, path or tenant id, however hostile (separators, ``..``, NUL, another tenant's prefix, encoded
forms, very long ids), never reads, lists, overwrites or deletes another tenant's data.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from agent_framework import AgentSession, Message, WorkflowCheckpoint
from agent_framework._harness._todo import TodoItem

from agent_stores.core import TENANTS, key_segment
from agents_support import StoreTarget

pytestmark = pytest.mark.asyncio

A, B = "tenant-a", "tenant-b"
# Session keys a client might send, aimed at another tenant's data or at the key layout.
ALL_HOSTILE_KEYS = [
    "s",
    "S",
    f"../{B}/s",
    f"../../tenants/{B}/s",
    f"tenants/{B}/s",
    f"{B}/s",
    f"/{A}/s",
    "s/",
    "/s",
    "..",
    ".",
    "a/../s",
    "s\x00",
    "\x00",
    f"s\x00{B}",
    "%2e%2e%2fs",
    "..%2fs",
    "~s",
    "~",
    "~session-on2a",  # an encoded-looking key
    "*",
    "s*",
    "[s]",
    '{"$ne": null}',
    "s\n",
    "\\..\\s",
    f"s:{B}",
    "tenants",
    "tenants/",
    "x" * 181,
    "x" * 5000,
]
# The keys most likely to cross a boundary; every key with AGENT_STORES_HEAVY=1.
HOSTILE_KEYS = (
    ALL_HOSTILE_KEYS
    if os.environ.get("AGENT_STORES_HEAVY") == "1"
    else ["s", f"../{B}/s", f"tenants/{B}/s", f"{B}/s", "..", "s\x00", f"s\x00{B}", "~session-on2a", "*", "x" * 5000]
)
# What a view under a hostile tenant id tries (every key goes through tenant B's view).
SOME_KEYS = ["s", f"../{A}/s", f"tenants/{A}/s", "x" * 5000]
# Tenant ids an application might derive carelessly, aimed at tenant A's data.
HOSTILE_TENANTS = [
    f"{B}/..",
    f"{B}/../{A}",
    f"{A}/",
    f"/{A}",
    f"tenants/{A}",
    f"{A}\x00",
    A.upper(),
    f"{A} ",
    f"~{A}",
    "..",
    ".",
    "*",
    "tenant-",
    A * 700,
]
FILE_PATHS = ["notes.md", "memories/preferences.md", f"tenants/{B}/notes.md", "s/deep/er/file.md"]
# Paths that must be refused (ValueError) or stay inside the tenant's own folder.
HOSTILE_PATHS = [
    f"../{B}/notes.md",
    f"../../tenants/{B}/notes.md",
    f"/tenants/{B}/notes.md",
    "..",
    "a/../../notes.md",
    "notes.md\x00",
    "\\..\\notes.md",
    f"~{B}/notes.md",
    "x" * 300,
]


async def _gather(calls: list[Awaitable[Any]]) -> list[Any]:
    return list(await asyncio.gather(*calls))


def _session(owner: str, key: str) -> AgentSession:
    session = AgentSession(session_id=key[:100])
    session.state.update(owner=owner, key=key)
    return session


async def test_session_keys_never_reach_another_tenant(store_target: StoreTarget) -> None:
    async with store_target.open() as stores:
        a, b = stores.tenant(A).session_store(), stores.tenant(B).session_store()
        others = [stores.tenant(t).session_store() for t in HOSTILE_TENANTS]
        await _gather([a.set(k, _session(A, k)) for k in HOSTILE_KEYS])
        # read: no key through another tenant's view (or a hostile tenant id) finds A's sessions
        assert await _gather([b.get(k) for k in HOSTILE_KEYS]) == [None] * len(HOSTILE_KEYS)
        assert await _gather([v.get(k) for v in others for k in SOME_KEYS]) == [None] * len(others) * len(SOME_KEYS)
        # overwrite and delete through B: A's sessions stay, each under its own key
        await _gather([b.set(k, _session(B, k)) for k in HOSTILE_KEYS])
        await _gather([view.set(k, _session("other", k)) for view in others for k in SOME_KEYS])
        await _gather([view.delete(k) for view in [b, *others] for k in HOSTILE_KEYS])
        mine = await _gather([a.get(k) for k in HOSTILE_KEYS])
        assert [(s.state["owner"], s.state["key"]) for s in mine] == [(A, k) for k in HOSTILE_KEYS]
        # the unscoped store (an administrator's view) does not take a client key to a tenant's session
        unscoped = stores.session_store()
        assert await _gather([unscoped.get(k) for k in HOSTILE_KEYS]) == [None] * len(HOSTILE_KEYS)
        await _gather([a.delete(k) for k in HOSTILE_KEYS])
        assert await _gather([a.get(k) for k in HOSTILE_KEYS]) == [None] * len(HOSTILE_KEYS)


async def test_history_never_reaches_another_tenant(store_target: StoreTarget) -> None:
    def message(owner: str, key: str) -> list[Message]:
        return [Message(role="user", contents=[f"{owner}:{key}"])]

    async with store_target.open() as stores:
        a: Any = stores.tenant(A).history_provider()
        b: Any = stores.tenant(B).history_provider()
        others: list[Any] = [stores.tenant(t).history_provider() for t in HOSTILE_TENANTS]
        await _gather([a.save_messages(k, message(A, k)) for k in HOSTILE_KEYS])
        for view in [b, *others]:
            assert await view.list_sessions(limit=1000) == []
            keys = HOSTILE_KEYS if view is b else SOME_KEYS
            assert await _gather([view.get_messages(k) for k in keys]) == [[] for _ in keys]
        assert sorted(await a.list_sessions(limit=1000)) == sorted(HOSTILE_KEYS)
        # B's writes and deletes leave A's history as it was
        await _gather([b.save_messages(k, message(B, k)) for k in HOSTILE_KEYS])
        await _gather([view.delete_session(k) for view in others for k in SOME_KEYS])
        assert await _gather([b.delete_session(k) for k in HOSTILE_KEYS]) == [True] * len(HOSTILE_KEYS)
        texts = [[m.text for m in ms] for ms in await _gather([a.get_messages(k) for k in HOSTILE_KEYS])]
        assert texts == [[f"{A}:{k}"] for k in HOSTILE_KEYS]
        # the unscoped provider's namespace is not a tenant's, nor is a tenant's namespace another's
        unscoped: Any = stores.history_provider()
        assert await unscoped.list_sessions(limit=1000) == []
        inner: Any = stores.tenant(A).history_provider(namespace="inner")
        assert await inner.list_sessions(limit=1000) == []
        # the namespace that holds the tenants is not one an unscoped store may take
        with pytest.raises(ValueError, match="reserved"):
            stores.history_provider(namespace="tenants")


async def _refused_or(call: Callable[[], Awaitable[Any]]) -> Any:
    """The call's result, or ``"refused"`` when the path rules reject it with ValueError before any I/O."""
    try:
        return await call()
    except ValueError:
        return "refused"


async def test_file_paths_never_reach_another_tenant(store_target: StoreTarget) -> None:
    async with store_target.open() as stores:
        a, b = stores.tenant(A).file_store(), stores.tenant(B).file_store()
        others = [stores.tenant(t).file_store() for t in HOSTILE_TENANTS]
        await _gather([a.write(p, f"{A}:{p}") for p in FILE_PATHS])
        written = [p for p in HOSTILE_PATHS if await _refused_or(lambda p=p: a.write(p, f"{A}:{p}")) != "refused"]
        paths = FILE_PATHS + written
        for view in [b, *others]:
            assert await view.list_children("") == []
            assert await view.search("", A, recursive=True) == []
            probes = paths + HOSTILE_PATHS
            reads = await _gather([_refused_or(lambda p=p, v=view: v.read(p)) for p in probes])
            assert set(reads) <= {None, "refused"}, list(zip(probes, reads, strict=True))
            exists = await _gather([_refused_or(lambda p=p, v=view: v.file_exists(p)) for p in probes])
            assert set(exists) <= {False, "refused"}, list(zip(probes, exists, strict=True))
        # B writes and deletes the same paths, other tenants delete: A's files stay
        await _gather([_refused_or(lambda p=p: b.write(p, f"{B}:{p}")) for p in paths + HOSTILE_PATHS])
        await _gather([_refused_or(lambda p=p: b.delete(p)) for p in paths + HOSTILE_PATHS])
        await _gather([_refused_or(lambda v=v, p=p: v.delete(p)) for v in others for p in paths])
        assert await _gather([a.read(p) for p in paths]) == [f"{A}:{p}" for p in paths]
        found = await a.search("", A, recursive=True)
        assert sorted(r.file_name for r in found) == sorted(paths)
        # B's own copy of a path is B's
        await b.write("notes.md", "mine")
        assert await b.read("notes.md") == "mine" and await a.read("notes.md") == f"{A}:notes.md"


async def _physical(stores: Any) -> set[str]:
    """Every object key and every log key the store holds, as its unscoped drivers list them."""
    keys: set[str] = set()
    objects, logs = stores.object_driver(), stores.log_driver()
    after: str | None = None
    while True:
        page = await objects.list("", delimiter=None, after=after, limit=500)
        keys.update(page.keys)
        if len(page.keys) < 500:
            break
        after = page.keys[-1]
    after = None
    while True:
        found = await logs.list_logs("", after=after, limit=500)
        keys.update(f"log:{log.key}" for log in found)
        if len(found) < 500:
            break
        after = found[-1].key
    return keys


async def _write_every_kind(view: Any, owner: str) -> None:
    await view.history_provider().save_messages("s1", [Message(role="user", contents=[f"{owner} says hi"])])
    await view.history_provider(namespace="ns").save_messages("s2", [Message(role="user", contents=["more"])])
    await view.file_store().write("memories/notes.md", f"{owner} notes")
    await view.session_store().set("s1", AgentSession(session_id="s1"))
    session = AgentSession(session_id="s1")
    await view.todo_store().save_state(session, [TodoItem(id=1, title=f"{owner} todo")], next_id=2, source_id="todos")
    checkpoint = WorkflowCheckpoint(workflow_name=f"{owner}-flow", graph_signature_hash="g")
    await view.checkpoint_storage(namespace="wf").save(checkpoint)


async def test_a_tenant_s_data_is_exactly_what_lies_under_its_root(store_target: StoreTarget) -> None:
    """History, files, sessions, todos and checkpoints of a tenant land under ``tenants/<tenant>/`` and nowhere else."""
    async with store_target.open() as stores:
        before = await _physical(stores)
        await _write_every_kind(stores.tenant(A), A)
        after_a = await _physical(stores)
        root_a = f"{TENANTS}/{key_segment(A)}/"
        added = after_a - before
        assert added, "tenant A's writes added nothing the drivers list"
        outside = sorted(k for k in added if not k.removeprefix("log:").startswith(root_a))
        assert outside == [], f"tenant A's data outside {root_a!r}"
        kinds = {k.removeprefix("log:")[len(root_a) :].split("/", 1)[0] for k in added}
        for kind in ("files", "sessions", "todos", "checkpoints"):
            assert kind in kinds, f"no {kind} under {root_a!r}: {sorted(added)}"
        assert "history" in kinds or any(k.startswith("log:") for k in added), sorted(added)
        # tenant B's writes touch nothing of A's, and A's root holds exactly what it held
        await _write_every_kind(stores.tenant(B), B)
        after_b = await _physical(stores)
        assert after_b >= after_a
        assert {k for k in after_b - after_a if k.removeprefix("log:").startswith(root_a)} == set()
        # the store lists both tenants, and each tenant's namespaces
        tenants = [t.name for t in await stores.list_tenants()]
        assert tenants == sorted([A, B], key=key_segment)
        segment_a = key_segment(A)
        assert [n.name for n in await stores.list_namespaces("history", tenant_segment=segment_a)] == sorted(
            ["", "ns"], key=key_segment
        )
        assert [n.name for n in await stores.list_namespaces("checkpoints", tenant_segment=segment_a)] == ["wf"]
        assert [n.name for n in await stores.list_namespaces("todos", tenant_segment=segment_a)] == [""]
        assert await stores.list_namespaces("history") == []
        # tenant views hand the todo provider to the harness, on the tenant's todo store
        kwargs = stores.tenant(A).harness_kwargs()
        assert kwargs["todo_provider"].store.tenant == A


async def test_tenants_are_listed_in_pages(store_target: StoreTarget) -> None:
    names = [f"t{n:02d}" for n in range(7)] + ["x" * 300]
    async with store_target.open() as stores:
        await _gather([stores.tenant(t).session_store().set("s", AgentSession(session_id="s")) for t in names[:4]])
        await _gather(
            [
                stores.tenant(t).history_provider().save_messages("s", [Message(role="user", contents=["hi"])])
                for t in names[4:]
            ]
        )
        pages: list[list[str | None]] = []
        after: str | None = None
        while True:
            page = await stores.list_tenants(after=after, limit=3)
            pages.append([t.name for t in page])
            if len(page) < 3:
                break
            after = page[-1].segment
        listed = [t for page in pages for t in page]
        expected = sorted(names, key=key_segment)
        # a 300-character id is kept as its digest: listed, but not recoverable from the key
        assert listed == [None if len(t) > 100 else t for t in expected]
        assert [t.segment async for t in stores.iter_tenants(page_size=2)] == [key_segment(t) for t in expected]
