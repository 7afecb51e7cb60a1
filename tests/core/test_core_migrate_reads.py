"""``agent-stores migrate`` reads each source item once: the plan leaves absent items to the copy, and keeps the rest.

The source is the core's stores over an in-process object driver that records every ``get``,
and an object log over it (its remembered windows off, so every read of a history reaches the
driver) that records every read of a log: each history is read once, and each snapshot, file
and todo list object once. (Listing sessions reads the newest segment of each log, to tell a
live log from a deleted one: those reads are the listings', not the items'.)
"""

from __future__ import annotations

import asyncio
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from agent_framework import AgentSession, Message

from agent_stores.cli import _migrate
from agent_stores.core import LogHistoryProvider, ObjectAgentFileStore, ObjectSessionStore, Stores, open_stores
from agent_stores.core.objectlog import ObjectLogDriver
from objectlog_support import Counting

SOURCE = "counting://source"
#: The object names of a two-segment log's newest and older segment (sequence numbers inverted).
_NEWEST, _OLDER = "/s99999999999999999997", "/s99999999999999999998"


class KeyCounting(Counting):
    """:class:`Counting`, also recording which key each ``get`` read."""

    def __init__(self) -> None:
        super().__init__()
        self.gets: Counter[str] = Counter()

    async def get(self, key: str) -> Any:
        self.gets[key] += 1
        return await super().get(key)


class CountingLogs(ObjectLogDriver):
    """The object log, recording the key of each read of a log (a whole history or a window)."""

    def __init__(self, objects: KeyCounting) -> None:
        super().__init__(objects, prefix="history/", cache_bytes=0)
        self.reads: Counter[str] = Counter()

    async def read(self, key: str, *args: Any, **kwargs: Any) -> Any:
        self.reads[key] += 1
        return await super().read(key, *args, **kwargs)


class CountingBackend:
    """The core's stores over one :class:`KeyCounting` driver (history under ``history/``, no remembered windows)."""

    def __init__(self) -> None:
        self.objects = KeyCounting()
        self.logs = CountingLogs(self.objects)

    def object_driver(self) -> KeyCounting:
        return self.objects

    def log_driver(self) -> CountingLogs:
        return self.logs

    def history_provider(self, *, source_id: str, **options: Any) -> LogHistoryProvider:
        return LogHistoryProvider(self.logs, source_id=source_id, **options)

    def file_store(self, **options: Any) -> ObjectAgentFileStore:
        return ObjectAgentFileStore(self.objects, **options)

    def session_store(self, **options: Any) -> ObjectSessionStore:
        return ObjectSessionStore(self.objects, **options)

    async def aclose(self) -> None:
        return None


def _msg(text: str) -> Message:
    return Message(role="user", contents=[text], message_id=text)


async def _seed(backend: CountingBackend, sessions: int) -> None:
    stores = Stores(SOURCE, backend)
    for i in range(sessions):
        history = stores.history_provider()
        await history.save_messages(f"s{i}", [_msg(f"s{i}-a")])
        await history.save_messages(f"s{i}", [_msg(f"s{i}-b"), _msg(f"s{i}-c")])  # two segments
        await stores.session_store().set(f"s{i}", AgentSession(session_id=f"s{i}"))
        await stores.file_store().write(f"notes/s{i}.md", f"note {i}")
        await stores.object_driver().put(f"todos/s{i}.json", b'{"items": []}')
    backend.objects.gets.clear()
    backend.logs.reads.clear()


def _reads(backend: CountingBackend) -> Counter[str]:
    """How often each history (``log <key>``) and each other object (by key) of the source was read.

    A segment below a log's newest is read only by a read of its log: it counts too, so a read
    of a history that bypassed the log driver's ``read`` would show.
    """
    reads = Counter({f"log {key}": count for key, count in backend.logs.reads.items()})
    for key, count in backend.objects.gets.items():
        if not key.startswith("history/") or not key.endswith(_NEWEST):
            reads[key] += count
    return reads


def _migrate_from(backend: CountingBackend, target: str, monkeypatch: pytest.MonkeyPatch, **options: Any) -> Any:
    opened = _migrate.open_url

    def open_url(url: str, *, must_exist: bool) -> Stores:
        return Stores(url, backend) if url == SOURCE else opened(url, must_exist=must_exist)

    monkeypatch.setattr(_migrate, "open_url", open_url)
    return asyncio.run(_migrate.migrate(SOURCE, target, **options))


def test_a_migration_into_an_empty_store_reads_each_source_object_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = CountingBackend()
    asyncio.run(_seed(backend, 6))
    report = _migrate_from(backend, f"sqlite:///{tmp_path / 'target.db'}", monkeypatch)
    assert report.ok and all(i.verified for i in report.items)
    assert Counter(i.kind for i in report.items) == {"history": 6, "snapshot": 6, "file": 6, "folder": 1, "object": 6}
    reads = _reads(backend)
    assert set(reads.values()) == {1}, reads
    assert sum(1 for k in reads if k.startswith("log ")) == 6  # each history, once
    assert sum(1 for k in reads if k.endswith(_OLDER)) == 6  # and each session's older segment, once
    assert sum(1 for k in reads if k.startswith(("sessions/", "files/", "todos/"))) == 3 * 6
    assert {i.name: i.source_count for i in report.items if i.kind == "history"} == {
        f"history/s{i}": 3 for i in range(6)
    }
    assert report.summary()["history"]["messages_copied"] == 18

    async def held() -> list[list[str]]:
        async with open_stores(f"sqlite:///{tmp_path / 'target.db'}") as stores:
            provider: Any = stores.history_provider()
            return [[m.text for m in await provider.export_messages(f"s{i}")] for i in range(6)]

    assert asyncio.run(held()) == [[f"s{i}-a", f"s{i}-b", f"s{i}-c"] for i in range(6)]


def test_items_the_target_holds_are_read_once_too_and_past_the_budget_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the plan read of an item to extend or replace is kept for its copy, within ``KEPT_BYTES``."""
    target = f"sqlite:///{tmp_path / 'target.db'}"

    async def seed_target() -> None:
        async with open_stores(target) as stores:
            await stores.history_provider().save_messages("s0", [_msg("s0-a")])  # the beginning: extended
            await stores.session_store().set("s1", AgentSession(session_id="s1", service_session_id="other"))
            await stores.file_store().write("notes/s2.md", "another note")

    for budget, twice in ((_migrate.KEPT_BYTES, 0), (0, 3)):
        backend = CountingBackend()
        asyncio.run(_seed(backend, 3))
        monkeypatch.setattr(_migrate, "KEPT_BYTES", budget)
        (tmp_path / "target.db").unlink(missing_ok=True)
        asyncio.run(seed_target())
        report = _migrate_from(backend, target, monkeypatch, conflicts="replace")
        actions = {(i.kind, i.name): i.action for i in report.items if i.action != "copy"}
        assert actions == {
            ("history", "history/s0"): "extend",
            ("snapshot", "s1"): "replace",
            ("file", "notes/s2.md"): "replace",
            ("folder", "notes/"): "skip",
        }
        assert report.ok and all(i.verified for i in report.items if i.action != "skip")
        read_twice = {k for k, n in _reads(backend).items() if n > 1}
        # past the budget, the three items the target held are read again (s0's older segment too)
        items = {"log " + k.removeprefix("history/").removesuffix(_OLDER) for k in read_twice if k.endswith(_OLDER)}
        assert len(items | {k for k in read_twice if not k.endswith(_OLDER)}) == twice, read_twice


def test_a_dry_run_reads_each_source_item_once_and_reports_what_a_copy_would_move(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    backend = CountingBackend()
    asyncio.run(_seed(backend, 4))
    report = _migrate_from(backend, f"sqlite:///{tmp_path / 'target.db'}", monkeypatch, dry_run=True)
    assert {i.action for i in report.items} == {"copy"} and report.summary()["history"]["messages_copied"] == 12
    reads = _reads(backend)
    assert set(reads.values()) == {1} and sum(1 for k in reads if k.startswith("log ")) == 4, reads
    assert all(i.expected for i in report.items if i.kind != "folder")  # each digest known without a copy
