"""A sealed object log starts a session with one ``put`` and exports many from one listing, as a plain one does.

``SealedLogDriver`` offers ``create`` and ``read_many`` where the driver underneath does (the
object-store log), sealing and opening records as ``append`` and ``read`` do: a record moved to
another log or position still fails to open, and a driver without them offers neither.
"""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import Message

from agent_stores.core import CorruptRecordError, LogHistoryProvider, LogRecord, ObjectLogDriver
from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver
from agent_stores.core.prefixed import PrefixedLogDriver, within
from agent_stores.core.sealing import DataKeys, Keyring, SealedLogDriver
from agent_stores.core.sealing._scopes import log_scope_of
from objectlog_support import Counting

pytestmark = pytest.mark.asyncio

KEYRING = Keyring.generate()


def _msg(text: str) -> list[Message]:
    return [Message(role="user", contents=[text], message_id=text)]


def _sealed(objects: Counting, keys: DataKeys) -> SealedLogDriver:
    return SealedLogDriver(ObjectLogDriver(objects), keys)


async def test_a_sealed_first_save_is_the_end_listings_and_one_put() -> None:
    """The data keys live elsewhere here: the counts are the log's own requests."""
    objects, keys = Counting(), DataKeys(MemoryObjectDriver(), KEYRING)
    history = LogHistoryProvider(_sealed(objects, keys))
    await history.save_messages("s", _msg("secret-a"))
    assert objects.calls == ["list", "list", "put"]  # the log's end, then slot 1: no staging check
    objects.calls.clear()
    await history.save_messages("s", _msg("secret-b"))
    assert objects.calls == ["put"]
    objects.calls.clear()
    await LogHistoryProvider(_sealed(objects, keys)).import_log("m", _msg("secret-c"), absent=True)
    assert objects.calls == ["put"]  # what migrate writes to a session absent from the target
    for name in (await objects.list("", delimiter=None)).keys:
        stored = await objects.get(name)
        assert stored is not None and b"secret" not in stored.data, name
    fresh = LogHistoryProvider(_sealed(objects, keys))
    assert [m.text for m in await fresh.get_messages("s")] == ["secret-a", "secret-b"]
    assert [m.text for m in await fresh.get_messages("m")] == ["secret-c"]


async def test_a_sealed_export_reads_many_sessions_from_one_listing() -> None:
    objects, keys = Counting(), DataKeys(MemoryObjectDriver(), KEYRING)
    writer = LogHistoryProvider(_sealed(objects, keys))
    for i in range(20):
        await writer.save_messages(f"s{i}", _msg(f"m{i}"))
    objects.calls.clear()
    reader = LogHistoryProvider(_sealed(objects, keys))
    assert reader.reads_many
    exported = await reader.export_logs([f"s{i}" for i in range(20)])
    assert [[m.text for m in e if isinstance(m, Message)] for e in exported] == [[f"m{i}"] for i in range(20)]
    assert objects.calls.count("list") == 1 and objects.calls.count("get") == 20, objects.calls


async def test_create_and_read_many_bind_each_record_to_its_log_and_position() -> None:
    inner, keys = ObjectLogDriver(MemoryObjectDriver()), DataKeys(MemoryObjectDriver(), KEYRING)
    sealed = SealedLogDriver(inner, keys)
    records = [LogRecord("d0", b"zero"), LogRecord("d1", b"one")]
    assert await sealed.create("a", records, session_id="a") is not None
    assert await sealed.create("a", records, session_id="a") is None  # taken: nothing written
    assert await sealed.read_many(["a", "never"]) == [[b"zero", b"one"], None]
    assert (await sealed.tail("a", 2)).digests == ["d0", "d1"]
    stored = await inner.read("a")
    assert all(b"zero" not in p and b"one" not in p for p in stored)

    # Another log's records, copied verbatim: bound to "a", they fail under "b".
    await inner.create("b", [LogRecord("x", p) for p in stored], session_id="b")
    # Records of their own log, swapped; and a record sealed at position 1 stored first.
    data_key = await keys.current(log_scope_of("c"))
    swapped = data_key.seal_records("c", records, 0)[::-1]
    await inner.create("c", swapped, session_id="c")
    await inner.create("d", data_key.seal_records("d", records[:1], 1), session_id="d")
    for key in ("b", "c", "d"):
        with pytest.raises(CorruptRecordError):
            await sealed.read_many([key])
        with pytest.raises(CorruptRecordError):
            await sealed.read(key)


async def test_a_tenants_view_forwards_create_and_read_many_under_its_root() -> None:
    objects, keys = MemoryObjectDriver(), DataKeys(MemoryObjectDriver(), KEYRING)
    root = SealedLogDriver(ObjectLogDriver(objects), keys)
    tenant = root.within("tenants/acme/")
    assert await tenant.create("h/s", [LogRecord("d", b"hello")], session_id="s") is not None
    assert await tenant.read_many(["h/s"]) == [[b"hello"]]
    assert await root.within("tenants/acme/").read("h/s") == [b"hello"]
    other = root.within("tenants/other/")
    payloads: list[bytes] = await tenant.driver.read("h/s")
    assert all(b"hello" not in p for p in payloads)
    copied: Any = other.driver  # the record copied verbatim into another tenant's log of the same name
    await copied.create("h/s", [LogRecord("d", p) for p in payloads], session_id="s")
    with pytest.raises(CorruptRecordError):
        await other.read_many(["h/s"])


async def test_drivers_without_create_or_read_many_offer_neither() -> None:
    keys = DataKeys(MemoryObjectDriver(), KEYRING)
    plain = SealedLogDriver(MemoryLogDriver(), keys)
    prefixed = PrefixedLogDriver(MemoryLogDriver(), "p/")
    for driver in (plain, prefixed, SealedLogDriver(prefixed, keys), plain.within("t/")):
        assert getattr(driver, "create", None) is None
        assert getattr(driver, "read_many", None) is None
        assert not LogHistoryProvider(driver).reads_many
    history = LogHistoryProvider(plain)
    await history.save_messages("s", _msg("a"))
    assert [m.text for m in await history.get_messages("s")] == ["a"]


async def test_a_prefixed_view_forwards_create_and_read_many_with_its_prefix() -> None:
    objects = MemoryObjectDriver()
    logs = ObjectLogDriver(objects)
    view = PrefixedLogDriver(logs, "p/")
    assert await view.create("s", [LogRecord("d", b"x")], session_id="s") is not None
    assert await view.create("s", [LogRecord("d", b"x")], session_id="s") is None
    assert await logs.read("p/s") == [b"x"]
    assert await view.read_many(["s", "t"]) == [[b"x"], None]
    assert within(logs, "p/") is not view  # the object log offers its own view; this one is the fallback
