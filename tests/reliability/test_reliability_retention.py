"""Retention stopped before each of its writes, on SQLite and Redis: saves go on, a rerun finishes, nothing is lost."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from agent_framework import Message

from agent_stores.core import open_stores, retain
from agent_stores.testing.history import SimulatedCrash, SuiteCompaction, crash_log_history
from reliability_support import Target

# The retention's writes: stage, seal, delete the sealed log, append the retained one, drop the staging.
WRITES = 5


def _dicts(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.to_dict() for m in messages]


@pytest.mark.parametrize("target", ["sqlite", "redis"], indirect=True)
def test_a_save_after_a_stopped_retention_lands_and_a_rerun_finishes(
    target: Target, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before each write: loads see the old or the new transcript, a save lands after it, a rerun cleans up.

    The seal's lease is 0 here, so a save that finds a sealed log (its retention stopped) swaps
    it itself instead of waiting the real lease out.
    """
    monkeypatch.setattr(retain, "SEAL_LEASE_S", 0.0)
    saved = [Message("user" if i % 2 == 0 else "assistant", [f"turn {i}"], message_id=f"m-{i}") for i in range(6)]
    later = Message("user", ["after the crash"], message_id="m-later")

    async def main() -> None:
        async with open_stores(target.url) as stores:
            for stop in range(WRITES):
                session_id = f"s{stop}"
                provider: Any = stores.history_provider()
                await provider.save_messages(session_id, saved)
                assert await provider.compact(session_id, SuiteCompaction(keep=2))
                old = _dicts(await stores.history_provider().get_messages(session_id))
                sent = _dicts(await stores.history_provider(skip_excluded=True).get_messages(session_id))
                crash_log_history(provider, stop)
                with pytest.raises(SimulatedCrash):
                    await provider.retain(session_id)
                assert _dicts(await stores.history_provider().get_messages(session_id)) in (old, sent), stop
                reader = stores.history_provider(skip_excluded=True)
                assert _dicts(await reader.get_messages(session_id)) == sent, stop
                await stores.history_provider().save_messages(session_id, [later])
                assert _dicts(await reader.get_messages(session_id)) == [*sent, later.to_dict()], stop
                rerun: Any = stores.history_provider()
                await rerun.retain(session_id)
                assert _dicts(await rerun.export_messages(session_id)) == [*sent, later.to_dict()], stop
                staging = retain.staging_key(rerun, session_id)
                assert (await rerun.driver.tail(staging, 0)).length == 0, f"stop {stop}: the staging log is left"

    asyncio.run(main())
