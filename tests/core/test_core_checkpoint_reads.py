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

    async def list(self, prefix: str, **options: Any) -> Any:
        self.calls["list"] += 1
        return await super().list(prefix, **options)

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
    assert driver.calls == Counter(list=2)  # the index alone (its entries, and the markers of stopped moves)
    assert [cp.checkpoint_id for cp in await storage.list_checkpoints(workflow_name="wf")] == saved
    assert driver.calls == Counter(list=4, get=40)


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


async def _written_by_release_0_1(driver: CountingDriver, storage: ObjectCheckpointStorage, *saves: Any) -> None:
    """Save through this release, then turn every index entry into the 0.1 form (no expiry in its key)."""
    for checkpoint in saves:
        await storage.save(checkpoint)
    for key in (await driver.list(f"{storage.root}workflows/", delimiter=None)).keys:
        stored = await driver.get(key)
        assert stored is not None
        await driver.delete(key)
        await driver.put(key[: key.rindex("~")], stored.data)


async def test_a_store_of_release_0_1_reads_the_same_and_upgrade_rewrites_its_index() -> None:
    driver = CountingDriver()
    clock = [1_000.0]
    storage = ObjectCheckpointStorage(driver, ttl=100, clock=lambda: clock[0])
    first, second = make_checkpoint("wf", at=1), make_checkpoint("wf", at=2)
    parent = make_checkpoint("wf", at=3, checkpoint_id="z")
    child = make_checkpoint("wf", at=3, checkpoint_id="a", previous="z")
    await _written_by_release_0_1(driver, storage, first, second, child, parent)
    clock[0] += 50
    late = make_checkpoint("wf", at=4)
    await storage.save(late)  # an entry of this release beside the old ones
    expected = [first.checkpoint_id, second.checkpoint_id, "z", "a", late.checkpoint_id]

    async def listings() -> list[str]:
        ids = await storage.list_checkpoint_ids(workflow_name="wf")
        assert [cp.checkpoint_id for cp in await storage.list_checkpoints(workflow_name="wf")] == ids
        return ids

    assert await listings() == expected
    latest = await storage.get_latest(workflow_name="wf")
    assert latest is not None and latest.checkpoint_id == late.checkpoint_id
    # A 0.1 entry re-saved by this release (same place): listed once, whichever entry is read.
    await storage.save(second)
    assert await listings() == expected

    assert await storage.upgrade_index(dry_run=True) == 4
    assert await storage.upgrade_index() == 4
    assert await storage.upgrade_index() == 0
    keys = (await driver.list(f"{storage.root}workflows/", delimiter=None)).keys
    assert len(keys) == 5 and all("~" in key.rsplit("/", 1)[1][1:] for key in keys)
    driver.calls.clear()
    assert await storage.list_checkpoint_ids(workflow_name="wf") == expected
    assert driver.calls == Counter(list=2, get=2)  # the index, and the tie's records only
    clock[0] += 60  # the 0.1 saves expired (their expiry now read from the keys), the later saves did not
    assert await listings() == [second.checkpoint_id, late.checkpoint_id]


async def test_a_move_stopped_midway_is_read_from_its_record_until_settled() -> None:
    driver = CountingDriver()
    storage = ObjectCheckpointStorage(driver)
    await storage.save(make_checkpoint("wf", checkpoint_id="cp", at=1))
    old_entry = storage._index_key(make_checkpoint("wf", checkpoint_id="cp", at=1))  # pyright: ignore[reportPrivateUsage]
    # Moved to another workflow, stopped after the record was written: the old entry looks live.
    await storage.save(make_checkpoint("other", checkpoint_id="cp", at=2))
    await driver.put(old_entry, b"{}")
    await driver.put(f"{storage.root}moving/cp", b'{"entries": ["' + old_entry.encode() + b'"]}')
    assert await storage.list_checkpoint_ids(workflow_name="wf") == []
    assert await storage.list_checkpoint_ids(workflow_name="other") == ["cp"]
    assert (await driver.list(f"{storage.root}moving/", delimiter=None)).keys == []  # settled
    assert await driver.head(old_entry) is None


async def test_purge_lists_the_records_once_however_many_pages_they_fill() -> None:
    # Resuming the listing after each page of removals cost a whole listing per page on a server
    # that lists out of byte order (SeaweedFS): quadratic in the number of checkpoints.
    driver = CountingDriver()
    clock = [1_000.0]
    short = ObjectCheckpointStorage(driver, ttl=10, clock=lambda: clock[0])
    lasting = ObjectCheckpointStorage(driver, ttl=1_000, clock=lambda: clock[0])
    expiring = [await short.save(make_checkpoint("wf", at=i)) for i in range(300)]
    kept = [await lasting.save(make_checkpoint("wf", at=1_000 + i)) for i in range(40)]
    orphan = make_checkpoint("wf", checkpoint_id="orphan", at=2_000)  # a save stopped before its entry
    await short.save(orphan)
    await driver.delete(short._index_key(orphan, clock[0] + 10))  # pyright: ignore[reportPrivateUsage]
    clock[0] += 11
    driver.calls.clear()
    assert await short.purge_expired() == 301
    assert driver.calls["list"] == 1
    assert driver.calls["get"] == 341  # each record read once to see its expiry
    assert await short.list_checkpoint_ids(workflow_name="wf") == kept
    left = (await driver.list(short.root, delimiter=None)).keys
    assert len(left) == 2 * len(kept)  # their records and entries: nothing of the expired ones
    assert not any(checkpoint_id in key for checkpoint_id in [*expiring, "orphan"] for key in left)
