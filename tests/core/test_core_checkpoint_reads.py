"""What a checkpoint listing costs in driver requests, and that healing an entry never drops a live one."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from agent_stores.core.checkpoints import ObjectCheckpointStorage
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.testing.checkpoints import make_checkpoint

pytestmark = pytest.mark.asyncio


class CountingDriver(MemoryObjectDriver):
    """The in-process object driver, counting each request kind; ``before_head`` runs before a HEAD."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.before_head: Any = None

    async def get(self, key: str) -> Any:
        self.calls["get"] += 1
        return await super().get(key)

    async def head(self, key: str) -> str | None:
        self.calls["head"] += 1
        if self.before_head is not None:
            hook, self.before_head = self.before_head, None
            await hook()
        return await super().head(key)


async def test_listing_live_checkpoints_reads_each_record_once_and_nothing_else() -> None:
    driver = CountingDriver()
    storage = ObjectCheckpointStorage(driver)
    saved = [await storage.save(make_checkpoint("wf", at=i)) for i in range(40)]
    driver.calls.clear()
    assert await storage.list_checkpoint_ids(workflow_name="wf") == saved
    assert driver.calls == Counter(get=40)


async def test_a_stale_entry_is_dropped_and_a_rewritten_one_kept() -> None:
    driver = CountingDriver()
    storage = ObjectCheckpointStorage(driver)
    first = make_checkpoint("wf", checkpoint_id="cp", at=1)
    await storage.save(first)
    stale_entry = storage._index_key(first)  # pyright: ignore[reportPrivateUsage]
    # Re-saved under a later timestamp, then the old entry put back (a save killed before it dropped it).
    await storage.save(make_checkpoint("wf", checkpoint_id="cp", at=2))
    await driver.put(stale_entry, b"{}")
    assert await storage.list_checkpoint_ids(workflow_name="wf") == ["cp"]
    assert await driver.head(stale_entry) is None  # healed

    # The same stale entry again, but a save of the old timestamp lands while the listing looks at it:
    # the entry is live again and must survive.
    await driver.put(stale_entry, b"{}")

    async def resave_old_timestamp() -> None:
        await storage.save(make_checkpoint("wf", checkpoint_id="cp", at=1))

    driver.before_head = resave_old_timestamp
    assert "cp" in await storage.list_checkpoint_ids(workflow_name="wf")  # a listing racing a save
    assert await driver.head(stale_entry) is not None
    assert await storage.list_checkpoint_ids(workflow_name="wf") == ["cp"]
    assert (await storage.load("cp")).timestamp == first.timestamp
