"""The retention sweeper on SQLite, Redis (log driver) and SeaweedFS S3 (object-store log): rules, dry run, races."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

import pytest
from agent_framework import AgentSession, Message

from agent_stores.core import StoreConflictError, open_stores
from agent_stores.core.drivers import ConditionalLogDelete
from agent_stores.core.retention import RetentionRule, apply_sweep, plan_sweep, sweep
from agent_stores.core.stats import collect_stats
from ops_support import seed

DAY = 86400.0
NOW = datetime(2026, 6, 1, tzinfo=UTC).timestamp()


def at(moment: float) -> Callable[[], float]:
    """A clock stopped at ``moment``."""
    return lambda: moment


@pytest.mark.asyncio
async def test_sweep_removes_what_the_dry_run_said_and_nothing_written_since(ops_url: str) -> None:
    async with open_stores(ops_url) as stores:
        await seed(stores, None)
        await seed(stores, "acme")
        idle = RetentionRule(idle=10 * DAY)

        # the first sweep starts every item's idle clock; checkpoints carry their own time (2026-01-02)
        first = await sweep(stores, idle, clock=at(NOW))
        assert {(i.kind, i.action) for i in first.items} == {("checkpoints", "deleted")}
        assert first.count("deleted") == 2
        assert first.plan.first_seen == 14 and first.plan.seen["history"] == 6

        # eleven days on, two items were written meanwhile
        later = NOW + 11 * DAY
        await stores.tenant("acme").history_provider().save_messages("s2", [Message("user", ["again"])])
        await stores.file_store().write("b.txt", "changed")
        newest = RetentionRule(idle=10 * DAY, keep_last=1)
        kept = await sweep(stores, newest, kinds=["history"], dry_run=True, clock=at(later))
        assert sorted((i.tenant or "", i.key) for i in kept.items) == [("", "~/history/s2"), ("acme", "~/history/s1")]

        dry = await sweep(stores, idle, dry_run=True, clock=at(later))
        planned = sorted((i.kind, i.tenant or "", i.key) for i in dry.items)
        assert len(planned) == 12 and {i.action for i in dry.items} == {"delete"}
        assert ("history", "acme", "~/history/s2") not in planned and ("files", "", "files/b.txt") not in planned

        real = await sweep(stores, idle, clock=at(later))
        assert sorted((i.kind, i.tenant or "", i.key) for i in real.items if i.action == "deleted") == planned
        assert len(await stores.tenant("acme").history_provider().get_messages("s2")) == 3
        assert await stores.file_store().read("b.txt") == "changed"
        stats = await collect_stats(stores)
        counts = [(t.tenant, t.sessions, t.files, t.snapshots) for t in stats.tenants]
        assert counts == [(None, 0, 1, 0), ("acme", 1, 0, 0)]

        # re-running is idempotent: nothing else is due
        again = await sweep(stores, idle, clock=at(later))
        assert not again.items and not again.plan.orphan_marks

        # an item removed by other means: the next sweep forgets its mark
        await stores.tenant("acme").history_provider().delete_session("s2")  # pyright: ignore[reportAttributeAccessIssue]
        orphaned = await sweep(stores, idle, kinds=["history"], clock=at(later))
        assert [key for key, _ in orphaned.plan.orphan_marks] == ["tenants/acme/retention/history/~/history/s2"]
        assert not (await sweep(stores, idle, kinds=["history"], clock=at(later))).plan.orphan_marks


@pytest.mark.asyncio
async def test_two_racing_sweeps_and_a_writer_lose_nothing_written_during_the_sweep(ops_url: str) -> None:
    async with open_stores(ops_url) as host_a, open_stores(ops_url) as host_b:
        writer = host_b.history_provider()
        snapshots = host_b.session_store()
        ids = [f"w{i}" for i in range(6)]
        racing = [f"r{i}" for i in range(4)]  # appended to at the moment the sweeps delete
        for session_id in [*ids, *racing]:
            await writer.save_messages(session_id, [Message("user", [f"{session_id}-0"])])
            if session_id in ids:
                await snapshots.set(session_id, AgentSession(session_id=session_id))
        rule = RetentionRule(idle=DAY)
        kinds = ["history", "sessions"]
        await sweep(host_a, rule, kinds=kinds, clock=at(NOW))
        later = NOW + 2 * DAY
        plan_a = await plan_sweep(host_a, rule, kinds=kinds, clock=at(later))
        plan_b = await plan_sweep(host_b, rule, kinds=kinds, clock=at(later))
        assert len(plan_a.items) == len(plan_b.items) == 12 + len(racing)

        # written after both hosts planned: w0-w2's histories and w0's snapshot must survive
        written = {session_id: 1 for session_id in ids}
        for session_id in ids[:3]:
            await writer.save_messages(session_id, [Message("user", [f"{session_id}-1"])])
            written[session_id] += 1
        turned = AgentSession(session_id="w0")
        turned.state["turn"] = 1
        await snapshots.set("w0", turned)
        stop = asyncio.Event()

        async def keep_writing() -> None:  # and more appends while both sweeps run
            turn = 2
            while not stop.is_set():
                for session_id in ids[:3]:
                    await writer.save_messages(session_id, [Message("user", [f"{session_id}-{turn}"])])
                    written[session_id] += 1
                turn += 1
                await asyncio.sleep(0)

        async def race() -> None:  # one append per racing session, at the version both plans saw
            await asyncio.gather(*(writer.save_messages(r, [Message("user", [f"{r}-raced"])]) for r in racing))

        task = asyncio.create_task(keep_writing())
        report_a, report_b, _ = await asyncio.gather(
            apply_sweep(host_a, plan_a, concurrency=3), apply_sweep(host_b, plan_b, concurrency=3), race()
        )
        stop.set()
        await task

        for session_id in ids[:3]:
            assert len(await writer.get_messages(session_id)) == written[session_id]
        assert await snapshots.get("w0") is not None
        for session_id in racing:  # the append either came first (the sweep kept all) or after (a new history)
            texts = [m.text for m in await writer.get_messages(session_id)]
            assert texts in ([f"{session_id}-0", f"{session_id}-raced"], [f"{session_id}-raced"]), texts
        deleted = sorted(
            (i.kind, i.key) for i in [*report_a.items, *report_b.items] if i.action == "deleted" and "/r" not in i.key
        )
        expected = sorted(
            [("history", f"~/history/{s}") for s in ids[3:]] + [("sessions", f"sessions/{s}.json") for s in ids[1:]]
        )
        assert deleted == expected  # each once, by one host or the other
        for session_id in ids[3:]:
            assert await writer.get_messages(session_id) == []
        # every one of these log drivers removes a history only at the version the plan saw
        assert all(i.conditional for i in [*report_a.items, *report_b.items])
        changed = {(i.kind, i.key) for i in [*report_a.items, *report_b.items] if i.action == "changed"}
        assert ("sessions", "sessions/w0.json") in changed


@pytest.mark.asyncio
async def test_log_drivers_that_can_delete_a_history_only_at_a_version(ops_url: str) -> None:
    async with open_stores(ops_url) as stores:
        logs = stores.log_driver()
        assert isinstance(logs, ConditionalLogDelete)
        provider = stores.history_provider()
        await provider.save_messages("c", [Message("user", ["one"])])
        key = provider.keys.history("history", "c")
        seen = (await logs.tail(key, 0)).version
        await provider.save_messages("c", [Message("user", ["two"])])
        with pytest.raises(StoreConflictError):
            await logs.delete_if_version(key, seen)
        assert await logs.length(key) == 2
        assert await logs.delete_if_version(key, (await logs.tail(key, 0)).version)
        assert await logs.length(key) == 0 and not await logs.list_logs("", limit=10)
        with pytest.raises(StoreConflictError):
            await logs.delete_if_version(key, seen)
