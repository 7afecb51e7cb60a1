"""Two retentions finishing one run on SQLite: the late one deletes nothing a save wrote after the swap.

And the stopped run's staging log is no source id, session or sweep item in listings, stats and sweeps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_framework import Message

from agent_stores.core import open_stores, retain
from agent_stores.core.retention import RetentionRule, plan_sweep
from agent_stores.core.stats import collect_stats
from agent_stores.testing.history import SimulatedCrash, SuiteCompaction, crash_log_history, delay_conditional_delete

pytestmark = pytest.mark.asyncio


def _dicts(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.to_dict() for m in messages]


async def test_two_retentions_of_one_session_lose_nothing_and_leave_one_transcript(tmp_path: Path) -> None:
    """A retention stopped after its seal; two later runs finish it, one late: a save between them is kept.

    The late run read the sealed log, then (before its delete) the other run swapped it and a
    save landed on the new log. Its delete is conditional on the version it read, so it
    conflicts, and it finds the swapped log instead of deleting the save with it.
    """
    saved = [Message("user" if i % 2 == 0 else "assistant", [f"turn {i}"], message_id=f"m-{i}") for i in range(6)]
    later = Message("user", ["saved between the two runs"], message_id="m-later")
    async with open_stores(f"sqlite:///{tmp_path / 'race.db'}") as stores:
        provider: Any = stores.history_provider()
        await provider.save_messages("s", saved)
        assert await provider.compact("s", SuiteCompaction(keep=2))
        sent = _dicts(await stores.history_provider(skip_excluded=True).get_messages("s"))
        crash_log_history(provider, 2)  # stage and seal, then stop before the swap
        with pytest.raises(SimulatedCrash):
            await provider.retain("s")
        # the stopped run's staging log sits beside the session's: listings show no source id for it
        assert [s.name for s in await stores.list_source_ids()] == [provider.source_id]
        assert (await collect_stats(stores)).tenants[0].namespaces[0].sessions == 1, "stats count the staging log"
        plan = await plan_sweep(stores, RetentionRule(keep_last=1), kinds=["history"], dry_run=True)
        assert plan.seen["history"] == 1, "the sweep would judge the staging log by age"

        async def other_run_and_a_save() -> None:
            await stores.history_provider().retain("s")
            await stores.history_provider().save_messages("s", [later])

        late: Any = stores.history_provider()
        key = late.keys.history(late.source_id, "s")
        raced = delay_conditional_delete(late, key, other_run_and_a_save)
        await late.retain("s")
        assert raced(), "the late run never deleted the sealed log"

        stored = _dicts(await stores.history_provider().export_messages("s"))
        assert stored == [*sent, later.to_dict()], "the save between the runs was lost or the transcript doubled"
        assert (await late.driver.tail(retain.staging_key(late, "s"), 0)).length == 0, "the staging log is left"
