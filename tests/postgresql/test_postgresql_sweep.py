"""The retention sweeper on PostgreSQL: histories are removed only at the version the sweep saw."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from agent_framework import Message

from agent_stores.core import StoreConflictError, open_stores
from agent_stores.core.drivers import ConditionalLogDelete
from agent_stores.core.retention import RetentionRule, apply_sweep, plan_sweep, sweep

NOW = datetime(2026, 6, 1, tzinfo=UTC).timestamp()


@pytest.mark.asyncio
async def test_delete_if_version_and_a_sweep_keep_what_was_written_after_the_plan(postgresql_url: str) -> None:
    async with open_stores(postgresql_url) as stores:
        logs = stores.log_driver()
        assert isinstance(logs, ConditionalLogDelete)
        provider = stores.tenant("acme").history_provider()
        for session_id in ("idle", "busy"):
            await provider.save_messages(session_id, [Message("user", [f"{session_id} 1"])])
        key = "tenants/acme/" + provider.keys.history("history", "busy")  # pyright: ignore[reportAttributeAccessIssue]
        seen = (await logs.tail(key, 0)).version

        rule = RetentionRule(idle=3600)
        await sweep(stores, rule, kinds=["history"], clock=lambda: NOW)
        plan = await plan_sweep(stores, rule, kinds=["history"], clock=lambda: NOW + 7200)
        assert sorted(i.key for i in plan.items) == ["~/history/busy", "~/history/idle"]
        await provider.save_messages("busy", [Message("user", ["busy 2"])])
        with pytest.raises(StoreConflictError):
            await logs.delete_if_version(key, seen)

        report = await apply_sweep(stores, plan)
        assert {(i.key, i.action, i.conditional) for i in report.items} == {
            ("~/history/busy", "changed", True),
            ("~/history/idle", "deleted", True),
        }
        assert len(await provider.get_messages("busy")) == 2
        assert await provider.get_messages("idle") == []
