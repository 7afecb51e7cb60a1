"""A checkpoint save of a new id is one ``put_in_order`` where the driver has one: record first, then entry."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pytest

from agent_stores.core import OrderedPut, PrefixedObjectDriver, StoreConflictError, put_in_order
from agent_stores.core.checkpoints import ObjectCheckpointStorage
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.testing.checkpoints import make_checkpoint

pytestmark = pytest.mark.asyncio


class CountingDriver(MemoryObjectDriver):
    """The in-process object driver, counting writes and keeping each ``put_in_order`` call's items."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()
        self.batches: list[list[OrderedPut]] = []

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        self.calls["put"] += 1
        return await super().put(key, data, if_absent=if_absent, if_version=if_version)

    async def put_in_order(self, items: Sequence[OrderedPut]) -> list[str]:
        self.calls["put_in_order"] += 1
        self.batches.append(list(items))
        return [await MemoryObjectDriver.put(self, i.key, i.data, if_absent=i.if_absent) for i in items]


class PutOnly(MemoryObjectDriver):
    """The in-process object driver without ``put_in_order`` (as S3's and fsspec's)."""

    put_in_order = None  # pyright: ignore[reportAssignmentType, reportIncompatibleMethodOverride]


async def test_a_new_id_is_one_put_in_order_of_its_record_then_its_entry() -> None:
    driver = CountingDriver()
    storage = ObjectCheckpointStorage(driver)
    checkpoint = make_checkpoint("wf")
    await storage.save(checkpoint)
    assert driver.calls == Counter(put_in_order=1), f"a save of a new id wrote {dict(driver.calls)}"
    (batch,) = driver.batches
    assert [(item.key, item.if_absent) for item in batch] == [
        (storage.record_key(checkpoint.checkpoint_id), True),
        (storage._index_key(checkpoint), False),  # pyright: ignore[reportPrivateUsage]
    ]
    assert await storage.list_checkpoint_ids(workflow_name="wf") == [checkpoint.checkpoint_id]


async def test_a_refused_create_is_replaced_as_an_existing_id() -> None:
    driver = CountingDriver()
    storage = ObjectCheckpointStorage(driver)
    first = make_checkpoint("wf", checkpoint_id="cp", at=1, state={"version": 1})
    await storage.save(first)
    again = make_checkpoint("wf", checkpoint_id="cp", at=2, state={"version": 2})
    await ObjectCheckpointStorage(driver).save(again)  # another store: it takes the id for new first
    assert [cp.state for cp in await storage.list_checkpoints(workflow_name="wf")] == [{"version": 2}]
    assert len((await driver.list("", delimiter=None)).keys) == 2  # one record, one entry


async def test_a_view_under_a_prefix_forwards_one_put_in_order() -> None:
    driver = CountingDriver()
    view = PrefixedObjectDriver(driver, "app/")
    versions = await put_in_order(view, [OrderedPut("a", b"1", if_absent=True), OrderedPut("b", b"2")])
    assert driver.calls == Counter(put_in_order=1)
    assert [item.key for item in driver.batches[0]] == ["app/a", "app/b"]
    assert [await view.head("a"), await view.head("b")] == versions


async def test_without_put_in_order_the_items_are_put_one_after_the_other() -> None:
    driver = PutOnly()
    await driver.put("taken", b"old")
    with pytest.raises(StoreConflictError):
        await put_in_order(driver, [OrderedPut("first", b"1"), OrderedPut("taken", b"2", if_absent=True)])
    assert await driver.get("first") is not None
    storage = ObjectCheckpointStorage(driver)
    checkpoint = make_checkpoint("wf")
    await storage.save(checkpoint)
    assert await storage.list_checkpoint_ids(workflow_name="wf") == [checkpoint.checkpoint_id]
