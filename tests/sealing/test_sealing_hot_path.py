"""The sealing drivers' hot path: batched object reads reach the driver underneath as one batch, and a
log record read again is not decrypted again yet keeps every guarantee of a first read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

import pytest

from agent_stores.core import CorruptRecordError, LogRecord, StoredObject
from agent_stores.core.checkpoints import ObjectCheckpointStorage
from agent_stores.core.compaction import COMPACTION_DIGEST, SEAL_DIGEST
from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver
from agent_stores.core.prefixed import PrefixedObjectDriver
from agent_stores.core.sealing import DataKey, DataKeys, Keyring, SealedLogDriver, SealedObjectDriver
from agent_stores.testing.checkpoints import make_checkpoint

pytestmark = pytest.mark.asyncio


class BatchCountingDriver(MemoryObjectDriver):
    """The in-process object driver with a batched read, counting gets and batches."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()

    async def get(self, key: str) -> Any:
        self.calls["get"] += 1
        return await super().get(key)

    async def get_many(self, keys: Sequence[str]) -> list[StoredObject | None]:
        self.calls["get_many"] += 1
        return [await super(BatchCountingDriver, self).get(key) for key in keys]


def _views(counting: BatchCountingDriver) -> dict[str, Any]:
    keys = DataKeys(MemoryObjectDriver(), Keyring.generate())
    return {
        "sealed": SealedObjectDriver(counting, keys),
        "prefixed": PrefixedObjectDriver(counting, "app/"),
        "sealed over prefixed": SealedObjectDriver(PrefixedObjectDriver(counting, "app/"), keys),
    }


@pytest.mark.parametrize("view", ["sealed", "prefixed", "sealed over prefixed"])
async def test_checkpoint_listing_reads_records_in_one_batch_of_the_driver_underneath(view: str) -> None:
    counting = BatchCountingDriver()
    storage = ObjectCheckpointStorage(_views(counting)[view])
    saved = [await storage.save(make_checkpoint("wf", at=i)) for i in range(12)]
    counting.calls.clear()
    listed = await storage.list_checkpoints(workflow_name="wf")
    assert [cp.checkpoint_id for cp in listed] == saved
    assert counting.calls == Counter(get_many=1)  # the 12 records in one batch, no get of each


@pytest.mark.parametrize("view", ["sealed", "prefixed"])
async def test_get_many_without_a_batch_underneath_is_a_get_of_each_key(view: str) -> None:
    plain = MemoryObjectDriver()  # no get_many: the view reads each key
    driver = (
        SealedObjectDriver(plain, DataKeys(MemoryObjectDriver(), Keyring.generate()))
        if view == "sealed"
        else PrefixedObjectDriver(plain, "app/")
    )
    await driver.put("a", b"first")
    await driver.put("b", b"second")
    got = await driver.get_many(["a", "missing", "b"])
    assert got == [await driver.get("a"), None, await driver.get("b")]
    assert [None if g is None else g.data for g in got] == [b"first", None, b"second"]


async def test_sealed_get_many_reports_a_value_copied_to_another_key_as_corrupt() -> None:
    counting = BatchCountingDriver()
    driver = SealedObjectDriver(counting, DataKeys(MemoryObjectDriver(), Keyring.generate()))
    await driver.put("a", b"secret")
    stored = await counting.get("a")
    assert stored is not None
    await counting.put("b", stored.data)
    with pytest.raises(CorruptRecordError, match="'b'"):
        await driver.get_many(["a", "b"])


def _records(count: int, start: int = 0) -> list[LogRecord]:
    return [LogRecord(f"d{i}", f'{{"text": "message {i}"}}'.encode()) for i in range(start, start + count)]


async def test_a_record_read_again_is_not_decrypted_again() -> None:
    keys = DataKeys(MemoryObjectDriver(), Keyring.generate())
    driver = SealedLogDriver(MemoryLogDriver(), keys)
    version = await driver.append("log", _records(6), expected_version=None, session_id="s")
    await driver.append("log", _records(2, 6), expected_version=version, session_id="s")
    expected = [r.payload for r in _records(8)]
    assert await driver.read("log") == expected
    opened: list[bytes] = []
    open_record, open_split = DataKey.open_record, DataKey.open_split

    def counting_open_record(self: DataKey, suffix: bytes, data: bytes, *, where: str) -> tuple[bytes, int]:
        opened.append(data)
        return open_record(self, suffix, data, where=where)

    def counting_open_split(self: DataKey, key: str, data: bytes, split: Any, *, where: str) -> Any:
        opened.append(data)
        return open_split(self, key, data, split, where=where)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(DataKey, "open_record", counting_open_record)
        patch.setattr(DataKey, "open_split", counting_open_split)
        assert await driver.read("log") == expected
        assert await driver.read("log", last=3) == expected[-3:]
        assert opened == []
        other = SealedLogDriver(driver.driver, keys)  # another driver remembers nothing: it decrypts
        assert await other.read("log") == expected
        assert len(opened) == 8


async def test_a_remembered_record_moved_to_another_position_or_log_is_still_corrupt() -> None:
    raw = MemoryLogDriver()
    driver = SealedLogDriver(raw, DataKeys(MemoryObjectDriver(), Keyring.generate()))
    await driver.append("log", _records(3), expected_version=None, session_id="s")
    await driver.read("log")  # every record remembered as opened
    stored = await raw.read("log")
    swapped = [stored[1], stored[0], stored[2]]
    await raw.append(
        "swapped", [LogRecord(f"x{i}", p) for i, p in enumerate(swapped)], expected_version=None, session_id="s"
    )
    with pytest.raises(CorruptRecordError, match="'swapped'"):
        await driver.read("swapped")
    tail = await raw.tail("log", 0)
    await raw.append("log", [LogRecord("again", stored[0])], expected_version=tail.version, session_id="s")
    with pytest.raises(CorruptRecordError, match="position 0 but read at 3"):
        await driver.read("log")


async def test_a_remembered_record_of_a_destroyed_key_is_not_read() -> None:
    keys = DataKeys(MemoryObjectDriver(), Keyring.generate())
    driver = SealedLogDriver(MemoryLogDriver(), keys)
    await driver.append("log", _records(2), expected_version=None, session_id="s")
    await driver.read("log")  # remembered as opened
    assert await keys.destroy("")
    with pytest.raises(CorruptRecordError, match="does not hold"):
        await driver.read("log")


async def test_opened_bytes_zero_remembers_nothing() -> None:
    driver = SealedLogDriver(MemoryLogDriver(), DataKeys(MemoryObjectDriver(), Keyring.generate()), opened_bytes=0)
    await driver.append("log", _records(4), expected_version=None, session_id="s")
    assert await driver.read("log") == [r.payload for r in _records(4)]
    assert await driver.read("log") == [r.payload for r in _records(4)]
    assert len(driver._opened) == 0  # pyright: ignore[reportPrivateUsage]


async def test_batch_sealing_matches_one_record_at_a_time() -> None:
    keys = DataKeys(MemoryObjectDriver(), Keyring.generate())
    data_key = await keys.current("")
    records = _records(3)
    sealed = data_key.seal_records("log", records, 5)
    for index, (record, stored) in enumerate(zip(records, sealed, strict=True)):
        assert data_key.open("log", stored.payload, where="r") == (record.payload, 5 + index)
        assert data_key.open_digest("log", stored.digest, where="r") == record.digest
        assert stored.digest == data_key.seal_digest("log", record.digest)  # deterministic, as one at a time
    nonces = {stored.payload[len(data_key.log_prefix) + 8 :][:12] for stored in sealed}
    assert len(nonces) == 3


class CountingLogs(MemoryLogDriver):
    """The in-process log driver, counting each request kind."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: Counter[str] = Counter()

    async def tail(self, key: str, count: int) -> Any:
        self.calls["tail"] += 1
        return await super().tail(key, count)

    async def append(self, key: str, records: Sequence[LogRecord], **kwargs: Any) -> Any:
        self.calls["append"] += 1
        return await super().append(key, records, **kwargs)

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        self.calls["read"] += 1
        return await super().read(key, last=last)


@pytest.mark.parametrize("max_messages", [None, 4])
async def test_a_sealed_history_makes_the_same_driver_requests_as_a_plain_one(max_messages: int | None) -> None:
    from agent_framework import Content, Message

    from agent_stores.core import LogHistoryProvider

    plain, sealed = CountingLogs(), CountingLogs()
    keys = DataKeys(MemoryObjectDriver(), Keyring.generate())
    providers = [
        LogHistoryProvider(plain, max_messages=max_messages),
        LogHistoryProvider(SealedLogDriver(sealed, keys), max_messages=max_messages),
    ]
    for provider in providers:
        for turn in range(5):
            await provider.get_messages("s")
            texts = [f"question {turn}", f"answer {turn}"]
            await provider.save_messages(
                "s",
                [
                    Message(role=r, contents=[Content.from_text(t)])
                    for r, t in zip(("user", "assistant"), texts, strict=True)
                ],
            )
    assert plain.calls["append"] == 5
    assert sealed.calls == plain.calls


async def test_a_log_written_before_sealing_keeps_its_plain_compaction_digests_readable() -> None:
    """``tail`` of a plaintext log holding compaction records returns their plain digests, then the sealed ones."""
    raw = MemoryLogDriver()
    plain = [LogRecord("iplain", b"{}"), LogRecord(COMPACTION_DIGEST, b"{}"), LogRecord(SEAL_DIGEST, b"{}")]
    version = await raw.append("log", plain, expected_version=None, session_id="s")
    driver = SealedLogDriver(raw, DataKeys(MemoryObjectDriver(), Keyring.generate()))
    assert (await driver.tail("log", 5)).digests == [r.digest for r in plain]
    await driver.append("log", [LogRecord("inew", b"{}")], expected_version=version, session_id="s")
    assert (await raw.tail("log", 1)).digests[0].startswith("~")  # the new digest is sealed
    assert (await driver.tail("log", 5)).digests == [*(r.digest for r in plain), "inew"]
    strict = SealedLogDriver(raw, driver.keys, plaintext_reads=False)
    with pytest.raises(CorruptRecordError, match="not sealed"):
        await strict.tail("log", 5)
