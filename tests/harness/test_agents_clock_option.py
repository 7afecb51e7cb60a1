"""``open_stores(url, clock=...)``: every expiry a backend's client decides follows the clock given."""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import Message, WorkflowCheckpoint

from agent_stores.core import open_stores
from agent_stores.testing import FakeClock
from agents_support import StoreTarget

pytestmark = pytest.mark.asyncio


async def test_history_and_checkpoints_expire_on_the_clock_given(store_target: StoreTarget) -> None:
    clock = FakeClock()
    async with open_stores(store_target.url, clock=clock, **store_target.options) as stores:
        if store_target.backend == "redis":  # the server expires keys by its own clock
            assert not stores.backend.follows_clock
            return
        assert stores.backend.follows_clock
        history: Any = stores.history_provider(ttl=60)
        await history.save_messages("s", [Message(role="user", contents=["soon gone"])])
        checkpoints = stores.checkpoint_storage(ttl=60)
        await checkpoints.save(WorkflowCheckpoint(workflow_name="flow", graph_signature_hash="g"))
        clock.advance(59)
        assert [m.text for m in await history.get_messages("s")] == ["soon gone"]
        assert len(await checkpoints.list_checkpoints(workflow_name="flow")) == 1
        clock.advance(2)
        assert await history.get_messages("s") == []
        assert await checkpoints.list_checkpoints(workflow_name="flow") == []


async def test_a_clock_that_is_not_callable_is_refused(store_target: StoreTarget) -> None:
    with pytest.raises(TypeError, match="clock"):
        open_stores(store_target.url, clock=12.5, **store_target.options)
