"""Data keys of sealed SQLite stores: per-namespace keys outside tenants, rotation, re-sealing, forget a namespace."""

from __future__ import annotations

import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import pytest
from agent_framework import AgentSession, Message, WorkflowCheckpoint
from agent_framework._harness._todo import TodoItem

from agent_stores.core import CorruptRecordError, LogRecord, ObjectDriver, open_stores
from agent_stores.core.keys import key_segment
from agent_stores.core.sealing import (
    DataKeys,
    Encryption,
    Keyring,
    SealedStores,
    keys_object,
    namespace_scope,
    sealed_key_id,
    tenant_scope,
)
from agent_stores.core.sealing import _drivers as sealing_drivers

pytestmark = pytest.mark.asyncio

SESSION = AgentSession(session_id="chat")


@pytest.fixture
def keyring() -> Keyring:
    return Keyring.generate()


@pytest.fixture
def url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'agent.db'}"


def sealed(url: str, encryption: Keyring | Encryption) -> SealedStores:
    stores = open_stores(url, encryption=encryption)
    assert isinstance(stores, SealedStores)
    return stores


async def write_namespace(stores: SealedStores, namespace: str, secret: str) -> None:
    await stores.history_provider(namespace=namespace).save_messages("chat", [Message("user", [secret])])
    await stores.todo_store(namespace=namespace).save_state(
        SESSION, [TodoItem(id=1, title=secret)], next_id=2, source_id="todos"
    )
    await stores.checkpoint_storage(namespace=namespace).save(
        WorkflowCheckpoint(workflow_name="flow", graph_signature_hash="g", state={"value": secret})
    )


async def read_namespace(stores: SealedStores, namespace: str) -> list[str]:
    messages = await stores.history_provider(namespace=namespace).get_messages("chat")
    items, _ = await stores.todo_store(namespace=namespace).load_state(SESSION, source_id="todos")
    checkpoint = await stores.checkpoint_storage(namespace=namespace).get_latest(workflow_name="flow")
    assert checkpoint is not None
    return [*(m.text for m in messages), *(i.title for i in items), str(checkpoint.state["value"])]


async def kids_of(stores: SealedStores, prefix: str) -> set[str]:
    """The data key ids of every sealed object under ``prefix`` (raw)."""
    found: set[str] = set()
    for key in (await stores.raw_objects.list(prefix, delimiter=None)).keys:
        stored = await stores.raw_objects.get(key)
        if stored is not None and stored.data:
            found.add(sealed_key_id(stored.data, where=key))
    return found


async def log_kids(stores: SealedStores, namespace: str) -> list[str]:
    (log,) = await stores.raw_logs.list_logs(key_segment(namespace) + "/")
    return [sealed_key_id(p, where=log.key) for p in await stores.raw_logs.read(log.key)]


async def test_namespaces_outside_tenants_get_data_keys_of_their_own(url: str, keyring: Keyring) -> None:
    """History, todos and checkpoints of a namespace use its keys; files, sessions and tenants keep theirs."""
    async with sealed(url, keyring) as stores:
        await write_namespace(stores, "support", "support-secret")
        await write_namespace(stores, "billing", "billing-secret")
        await stores.file_store().write("notes.md", "root file")
        await stores.session_store().set("chat", SESSION)
        await stores.tenant("acme").file_store().write("notes.md", "tenant file")
        support, billing = namespace_scope(key_segment("support")), namespace_scope(key_segment("billing"))
        (support_kid, _), (billing_kid, _) = await stores.data_keys.kids(support), await stores.data_keys.kids(billing)
        root_kid, _ = await stores.data_keys.kids("")
        assert len({support_kid, billing_kid, root_kid}) == 3 and None not in {support_kid, billing_kid, root_kid}
        assert await stores.raw_objects.get("sealing/namespaces/support/keys.json") is not None
        assert await log_kids(stores, "support") == [support_kid]
        assert await kids_of(stores, "todos/support/") == {support_kid}
        assert await kids_of(stores, "checkpoints/support/") == {support_kid}
        assert await kids_of(stores, "files/") == await kids_of(stores, "sessions/") == {root_kid}
        assert await read_namespace(stores, "support") == ["support-secret"] * 3
        assert (await stores.rekey())["scopes"] == 4  # the root, two namespaces, one tenant
    async with sealed(url, keyring) as stores:  # a new process finds the namespace keys in the store
        assert await read_namespace(stores, "billing") == ["billing-secret"] * 3


async def test_a_store_sealed_before_namespace_keys_keeps_reading_and_reseal_moves_its_objects(
    url: str, keyring: Keyring, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Namespace values sealed with the root's key (before this release) open, and reseal moves objects over."""
    with monkeypatch.context() as before:  # the scopes of the release before: everything outside tenants is the root's
        before.setattr(sealing_drivers, "object_scope_of", lambda key: "")
        before.setattr(sealing_drivers, "log_scope_of", lambda key: "")
        async with sealed(url, keyring) as stores:
            await write_namespace(stores, "support", "old-secret")
            root_kid, _ = await stores.data_keys.kids("")
            assert await stores.data_keys.kids(namespace_scope("support")) == (None, frozenset())
    async with sealed(url, keyring) as stores:
        assert await read_namespace(stores, "support") == ["old-secret"] * 3
        await stores.history_provider(namespace="support").save_messages("chat", [Message("user", ["new"])])
        ns_kid, _ = await stores.data_keys.kids(namespace_scope("support"))
        assert ns_kid is not None and await log_kids(stores, "support") == [root_kid, ns_kid]
        report = await stores.reseal(namespace="support")
        assert report["resealed"] >= 2 and report["unreadable"] == 0, report  # the todo list and the checkpoint
        assert report["logs_resealed"] == 1 and report["logs_unreadable"] == 0, report
        assert await kids_of(stores, "todos/support/") == await kids_of(stores, "checkpoints/support/") == {ns_kid}
        assert await log_kids(stores, "support") == [ns_kid, ns_kid], "a log record is still under the root's key"
        assert await read_namespace(stores, "support") == ["old-secret", "new", "old-secret", "old-secret"]
        again = await stores.reseal()
        assert again["resealed"] == again["logs_resealed"] == 0, again
        # forget(namespace=) now shreds the log: a copy taken before it opens with no key left in the store
        (log,) = await stores.raw_logs.list_logs(key_segment("support") + "/")
        payloads = await stores.raw_logs.read(log.key)
        digests = (await stores.raw_logs.tail(log.key, len(payloads))).digests
        await stores.forget(namespace="support")
        records = [LogRecord(d, p) for d, p in zip(digests, payloads, strict=True)]
        await stores.raw_logs.append(log.key, records, expected_version=None, session_id=log.session_id)
        with pytest.raises(CorruptRecordError):
            await stores.history_provider(namespace="support").get_messages("chat")


async def test_a_rotation_adds_a_current_key_and_keeps_the_old_ones(url: str, keyring: Keyring) -> None:
    async with sealed(url, keyring) as stores:
        await stores.tenant("acme").file_store().write("a.md", "before")
        await write_namespace(stores, "support", "secret")
        await stores.file_store().write("root.md", "root")
        report = await stores.rotate_data_keys()
        assert (report["scopes"], report["rotated"]) == (3, 3)
        for scope in ("", namespace_scope("support"), tenant_scope("acme")):
            current, held = await stores.data_keys.kids(scope)
            assert len(held) == 2 and current in held
        again = await stores.rotate_data_keys(older_than=report["older_than"])  # a run resumed: nothing left
        assert again["rotated"] == 0
        assert await stores.tenant("acme").file_store().read("a.md") == "before"
        assert await read_namespace(stores, "support") == ["secret"] * 3
        with pytest.raises(ValueError, match="not both"):
            await stores.rotate_data_keys(tenant="acme", namespace="support")


class RacingObjects:
    """An object driver that runs ``race`` once, just before its first write (another process writing first)."""

    def __init__(self, driver: ObjectDriver, race: Callable[[], Awaitable[Any]]) -> None:
        self.driver = driver
        self.race: Callable[[], Awaitable[Any]] | None = race

    def __getattr__(self, name: str) -> Any:
        return getattr(self.driver, name)

    async def put(self, key: str, data: bytes, **conditions: Any) -> str:
        if self.race is not None:
            race, self.race = self.race, None
            await race()
        return await self.driver.put(key, data, **conditions)


async def test_two_processes_rotating_at_once_add_one_key(url: str, keyring: Keyring) -> None:
    """The loser of the conditional write reads the key object again and finds it rotated since its cutoff."""
    async with sealed(url, keyring) as first, sealed(url, keyring) as second:
        await first.tenant("acme").file_store().write("a.md", "before")
        scope, cutoff = tenant_scope("acme"), time.time()
        racing = DataKeys(
            cast(
                ObjectDriver,
                RacingObjects(second.raw_objects, lambda: first.rotate_data_keys(tenant="acme", older_than=cutoff)),
            ),
            keyring,
        )
        assert await racing.rotate(scope, older_than=cutoff) is None  # the other process rotated first
        current, held = await first.data_keys.kids(scope)
        assert len(held) == 2 and (await second.data_keys.kids(scope))[0] == current


async def test_other_processes_use_a_new_key_once_they_read_the_key_object_again(url: str, keyring: Keyring) -> None:
    """A cached scope is read again after ``key_refresh``; a value sealed with an unseen key is read at once."""
    async with (
        sealed(url, keyring) as rotating,
        sealed(url, Encryption(keyring)) as cached,
        sealed(url, Encryption(keyring, key_refresh=0.0)) as refreshing,
    ):
        await rotating.tenant("acme").file_store().write("a.md", "first")
        for other in (cached, refreshing):
            assert await other.tenant("acme").file_store().read("a.md") == "first"
        await rotating.rotate_data_keys(tenant="acme")
        new = (await rotating.data_keys.kids(tenant_scope("acme")))[0]
        await refreshing.tenant("acme").file_store().write("refreshing.md", "x")  # reads the key object each use
        assert await kids_of(rotating, tenant_scope("acme") + "files/refreshing.md") == {new}
        await cached.tenant("acme").file_store().write("cached.md", "x")  # within the bound: the key it holds
        assert await kids_of(rotating, tenant_scope("acme") + "files/cached.md") != {new}
        await rotating.tenant("acme").file_store().write("b.md", "second")
        assert await cached.tenant("acme").file_store().read("b.md") == "second"  # an unseen key: read again
        await cached.tenant("acme").file_store().write("cached.md", "y")  # and from then on, the new key
        assert await kids_of(rotating, tenant_scope("acme") + "files/cached.md") == {new}


async def test_history_appends_use_a_new_key_once_they_read_the_key_object_again(url: str, keyring: Keyring) -> None:
    """An append seals with the key its store holds within ``key_refresh`` and with the new one after a rotation.

    Appends find their scope's current key without I/O while it is fresh; each append of a
    store with ``key_refresh=0`` reads the key object again; a store that meets a record under
    an unseen key reads the key object at once and seals with the new key from then on.
    """
    scope = namespace_scope(key_segment("support"))

    async def kids(session: str) -> list[str]:
        logs = await rotating.raw_logs.list_logs(key_segment("support") + "/")
        (log,) = [log for log in logs if log.key.endswith("/" + key_segment(session))]
        return [sealed_key_id(p, where=log.key) for p in await rotating.raw_logs.read(log.key)]

    async with (
        sealed(url, keyring) as rotating,
        sealed(url, Encryption(keyring)) as cached,
        sealed(url, Encryption(keyring, key_refresh=0.0)) as refreshing,
    ):
        cached_history = cached.history_provider(namespace="support")
        refreshing_history = refreshing.history_provider(namespace="support")
        await cached_history.save_messages("a", [Message("user", ["a1"])])
        await refreshing_history.save_messages("b", [Message("user", ["b1"])])
        old = (await rotating.data_keys.kids(scope))[0]
        await rotating.rotate_data_keys(namespace="support")
        new = (await rotating.data_keys.kids(scope))[0]
        assert new != old
        await cached_history.save_messages("a", [Message("user", ["a2"])])  # within the bound: the key it holds
        await refreshing_history.save_messages("b", [Message("user", ["b2"])])  # reads the key object again
        assert await kids("a") == [old, old]
        assert await kids("b") == [old, new]
        await refreshing_history.save_messages("a", [Message("user", ["a3"])])
        await cached_history.save_messages("a", [Message("user", ["a4"])])  # meets a3's unseen key: reads again
        assert await kids("a") == [old, old, new, new]
        reader = rotating.history_provider(namespace="support")
        assert [m.text for m in await reader.get_messages("a")] == ["a1", "a2", "a3", "a4"]
        assert [m.text for m in await reader.get_messages("b")] == ["b1", "b2"]


async def test_forget_a_namespace_destroys_its_key_then_its_data_only(url: str, keyring: Keyring) -> None:
    async with sealed(url, keyring) as stores:
        await write_namespace(stores, "support", "gone-secret")
        await write_namespace(stores, "billing", "kept-secret")
        await stores.todo_store(namespace="tenants").save_state(SESSION, [], next_id=1, source_id="todos")
        await stores.checkpoint_storage(namespace="tenants").save(
            WorkflowCheckpoint(workflow_name="flow", graph_signature_hash="g", state={})
        )  # history refuses the namespace "tenants" outside tenants
        await stores.tenant("acme").history_provider().save_messages("chat", [Message("user", ["tenant"])])
        await stores.file_store().write("notes.md", "root file")
        todo = (await stores.raw_objects.list("todos/support/", delimiter=None)).keys[0]
        copy = await stores.raw_objects.get(todo)
        assert copy is not None
        objects = [
            *(await stores.raw_objects.list("todos/support/", delimiter=None)).keys,
            *(await stores.raw_objects.list("checkpoints/support/", delimiter=None)).keys,
        ]
        assert await stores.forget(namespace="support") == 1 + len(objects)  # the log, the todo list, the checkpoint's
        assert await stores.raw_objects.get(keys_object(namespace_scope("support"))) is None
        await stores.raw_objects.put(todo, copy.data)
        with pytest.raises(CorruptRecordError, match="destroyed"):
            await stores.todo_store(namespace="support").load_state(SESSION, source_id="todos")
        assert await stores.history_provider(namespace="support").get_messages("chat") == []
        assert await read_namespace(stores, "billing") == ["kept-secret"] * 3
        assert await stores.file_store().read("notes.md") == "root file"
        assert await stores.forget(namespace="tenants") == len(objects)  # its todo list and checkpoint, no tenant's log
        assert [m.text for m in await stores.tenant("acme").history_provider().get_messages("chat")] == ["tenant"]
        with pytest.raises(ValueError, match="exactly one"):
            await stores.forget()


async def test_a_keys_object_records_when_each_key_was_made(url: str, keyring: Keyring) -> None:
    async with sealed(url, keyring) as stores:
        await stores.file_store().write("a.md", "x")
        stored = await stores.raw_objects.get(keys_object(""))
        assert stored is not None
        (entry,) = json.loads(stored.data)["keys"].values()
        assert isinstance(entry["created"], float) and entry["kek"] == keyring.current


async def test_reseal_leaves_a_value_that_does_not_open_as_it_is_and_counts_it(url: str, keyring: Keyring) -> None:
    async with sealed(url, keyring) as stores:
        await stores.tenant("acme").file_store().write("a.md", "acme")
        await stores.tenant("other").file_store().write("b.md", "other")
        foreign = await stores.raw_objects.get("tenants/other/files/b.md")
        assert foreign is not None
        await stores.raw_objects.put("tenants/acme/files/b.md", foreign.data)  # another tenant's key id
        await stores.rotate_data_keys(tenant="acme")
        report = await stores.reseal(tenant="acme")
        assert (report["resealed"], report["unreadable"]) == (1, 1), report
        assert (await stores.raw_objects.get("tenants/acme/files/b.md") or foreign).data == foreign.data
        assert await stores.tenant("acme").file_store().read("a.md") == "acme"
