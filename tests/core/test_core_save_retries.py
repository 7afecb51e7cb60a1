"""A save that keeps losing to other writers retries past 32 attempts while its time budget lasts, then gives up."""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import Message

from agent_stores.core import LogHistoryProvider, StoreConflictError
from agent_stores.core import history as history_module
from agent_stores.core.memory import MemoryLogDriver

pytestmark = pytest.mark.asyncio


class LosingDriver(MemoryLogDriver):
    """The in-process log driver whose appends lose to an imaginary writer ``losses`` times first."""

    def __init__(self, losses: int) -> None:
        super().__init__()
        self.losses = losses
        self.appends = 0

    async def append(self, key: str, records: Any, **kwargs: Any) -> Any:
        self.appends += 1
        if self.appends <= self.losses:
            raise StoreConflictError("another writer won")
        return await super().append(key, records, **kwargs)


async def test_a_save_keeps_trying_past_32_losses_within_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history_module, "_BACKOFF_CAP_S", 0.001)
    driver = LosingDriver(losses=60)
    provider = LogHistoryProvider(driver)
    await provider.save_messages("s", [Message(role="user", contents=["hello"])])
    assert driver.appends == 61
    assert [m.text for m in await provider.get_messages("s")] == ["hello"]


async def test_a_save_gives_up_once_attempts_and_budget_are_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(history_module, "_BACKOFF_CAP_S", 0.001)
    monkeypatch.setattr(history_module, "_CONFLICT_BUDGET_S", 0.0)
    driver = LosingDriver(losses=10**6)
    provider = LogHistoryProvider(driver)
    with pytest.raises(StoreConflictError, match="gave up appending"):
        await provider.save_messages("s", [Message(role="user", contents=["hello"])])
    assert driver.appends == 32
    assert await provider.get_messages("s") == []
