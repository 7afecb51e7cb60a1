"""Sealed stores on SQLite and a local folder: nothing readable raw, misplaced bytes corrupt, keys, erasure.

Secrets of every kind (message text, tool arguments, file contents, session state, todo
titles, checkpoint values) are written through a tenant view of ``open_stores(url,
encryption=...)``; the raw database file is then scanned and altered with the backend's own
(unsealed) drivers.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from agent_framework import AgentSession, Content, Message, WorkflowCheckpoint
from agent_framework._harness._todo import TodoItem

from agent_stores.core import (
    CorruptRecordError,
    LogRecord,
    PlaintextStoreError,
    SealedStoreError,
    StoredObject,
    open_stores,
)
from agent_stores.core.prefixed import within
from agent_stores.core.sealing import (
    KEYS_OBJECT,
    SEALED_MARKER,
    Encryption,
    Keyring,
    SealedStores,
    SealingKeyError,
    is_sealed,
)

pytestmark = pytest.mark.asyncio

EMPTY = StoredObject(b"", "")

SECRETS = (
    "teal-secret-7731",
    "arg-secret-4410",
    "file-secret-9034",
    "state-secret-2290",
    "todo-secret-5108",
    "cp-secret-6617",
)


def sealed(url: str, keyring: Keyring) -> SealedStores:
    stores = open_stores(url, encryption=keyring)
    assert isinstance(stores, SealedStores)
    return stores


async def write_secrets(stores: SealedStores, tenant: str) -> None:
    view = stores.tenant(tenant)
    call = Content.from_function_call("c1", "lookup", arguments={"query": SECRETS[1]})
    await view.history_provider().save_messages(
        "chat", [Message("user", [f"my colour is {SECRETS[0]}"]), Message("assistant", [call])]
    )
    await view.file_store().write("memory/notes.md", f"notes: {SECRETS[2]}")
    session = AgentSession(session_id="chat")
    session.state["remember"] = SECRETS[3]
    await view.session_store().set("chat", session)
    await view.todo_store().save_state(session, [TodoItem(id=1, title=SECRETS[4])], next_id=2, source_id="todos")
    await view.checkpoint_storage().save(
        WorkflowCheckpoint(workflow_name="flow", graph_signature_hash="g", state={"value": SECRETS[5]})
    )


async def read_secrets(stores: SealedStores, tenant: str) -> list[str]:
    view = stores.tenant(tenant)
    messages = await view.history_provider().get_messages("chat")
    session = await view.session_store().get("chat")
    assert session is not None
    items, _ = await view.todo_store().load_state(session, source_id="todos")
    checkpoint = await view.checkpoint_storage().get_latest(workflow_name="flow")
    assert checkpoint is not None
    return [
        messages[0].text,
        str(messages[1].contents[0].arguments),
        await view.file_store().read("memory/notes.md"),
        str(session.state["remember"]),
        items[0].title,
        str(checkpoint.state["value"]),
    ]


def raw_hits(folder: Path) -> list[str]:
    """Every secret found in any file under ``folder`` (a database with its WAL, or a store's folder)."""
    found: list[str] = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        data = path.read_bytes()
        found += [f"{secret} in {path.relative_to(folder)}" for secret in SECRETS if secret.encode() in data]
    return found


@pytest.fixture
def keyring() -> Keyring:
    return Keyring.generate()


@pytest.fixture(params=["sqlite", "folder"])
def store_url(request: pytest.FixtureRequest) -> Callable[[Path], str]:
    """The URL of a store kept in ``folder``: a SQLite database file, or a local folder (fsspec)."""
    if request.param == "sqlite":
        return lambda folder: f"sqlite:///{folder / 'agent.db'}"
    return lambda folder: f"file://{folder / 'store'}"


async def test_every_kind_round_trips_and_the_raw_file_holds_no_secret(
    tmp_path: Path, keyring: Keyring, store_url: Callable[[Path], str]
) -> None:
    async with sealed(store_url(tmp_path), keyring) as stores:
        await write_secrets(stores, "alice")
        assert all(secret in value for secret, value in zip(SECRETS, await read_secrets(stores, "alice"), strict=True))
    assert raw_hits(tmp_path) == []


async def test_plain_stores_write_every_secret_in_the_clear(
    tmp_path: Path, keyring: Keyring, store_url: Callable[[Path], str]
) -> None:
    """The scan itself can fail: without encryption every secret is found."""
    async with open_stores(store_url(tmp_path), encryption=False) as stores:
        view = stores.tenant("alice")
        await view.file_store().write("memory/notes.md", f"notes: {SECRETS[2]}")
    hits = raw_hits(tmp_path)
    assert hits and all(hit.startswith(SECRETS[2]) for hit in hits)


async def test_a_value_copied_to_another_tenant_or_key_is_corrupt(
    tmp_path: Path, keyring: Keyring, store_url: Callable[[Path], str]
) -> None:
    async with sealed(store_url(tmp_path), keyring) as stores:
        await write_secrets(stores, "alice")
        await stores.tenant("bob").file_store().write("memory/notes.md", "bob's own")
        raw = stores.raw_objects
        alice = await raw.get("tenants/alice/files/memory/notes.md")
        assert alice is not None and is_sealed(alice.data)
        await raw.put("tenants/bob/files/memory/notes.md", alice.data)
        with pytest.raises(CorruptRecordError, match=re.escape("tenants/bob/files/memory/notes.md")):
            await stores.tenant("bob").file_store().read("memory/notes.md")
        await raw.put("tenants/alice/files/memory/other.md", alice.data)
        with pytest.raises(CorruptRecordError, match="fails authentication"):
            await stores.tenant("alice").file_store().read("memory/other.md")


async def test_tampered_and_truncated_values_are_corrupt(
    tmp_path: Path, keyring: Keyring, store_url: Callable[[Path], str]
) -> None:
    async with sealed(store_url(tmp_path), keyring) as stores:
        await write_secrets(stores, "alice")
        raw, key = stores.raw_objects, "tenants/alice/files/memory/notes.md"
        stored = await raw.get(key)
        assert stored is not None
        flipped = bytearray(stored.data)
        flipped[-1] ^= 1
        for broken in (bytes(flipped), stored.data[:-20], stored.data[:12]):
            await raw.put(key, broken)
            with pytest.raises(CorruptRecordError, match=re.escape("notes.md")):
                await stores.tenant("alice").file_store().read("memory/notes.md")


async def test_swapped_or_moved_history_records_are_corrupt(
    tmp_path: Path, keyring: Keyring, store_url: Callable[[Path], str]
) -> None:
    async with sealed(store_url(tmp_path), keyring) as stores:
        await write_secrets(stores, "alice")
        history = stores.tenant("alice").history_provider()
        await history.save_messages("chat", [Message("user", ["third"])])
        logs = within(stores.raw_logs, "tenants/alice/")
        key = history.keys.history("history", "chat")  # type: ignore[attr-defined]
        payloads = await logs.read(key)
        tail = await logs.tail(key, 3)
        records = [LogRecord(d, p) for d, p in zip(tail.digests, payloads, strict=True)]
        await logs.delete(key)
        await logs.append(key, [records[1], records[0], records[2]], expected_version=None, session_id="chat")
        with pytest.raises(CorruptRecordError, match="position"):
            await stores.tenant("alice").history_provider().get_messages("chat")
        other = history.keys.history("history", "other")  # type: ignore[attr-defined]
        await logs.append(other, records, expected_version=None, session_id="other")
        with pytest.raises(CorruptRecordError, match="other"):
            await stores.tenant("alice").history_provider().get_messages("other")


async def test_a_wrong_or_missing_keyring_is_a_clear_error_and_writes_nothing(
    tmp_path: Path, keyring: Keyring, store_url: Callable[[Path], str]
) -> None:
    url = store_url(tmp_path)
    async with sealed(url, keyring) as stores:
        await write_secrets(stores, "alice")
    stranger = Keyring.generate()
    impostor = Keyring(keyring.current, {keyring.current: stranger.keys[stranger.current]})
    for wrong, message in ((stranger, keyring.current), (impostor, "does not open")):
        async with sealed(url, wrong) as stores:
            files = stores.tenant("alice").file_store()
            with pytest.raises(SealingKeyError, match=message):
                await files.read("memory/notes.md")
            with pytest.raises(SealingKeyError, match=message):
                await files.write("memory/new.md", "never written")
            assert await stores.raw_objects.get("tenants/alice/files/memory/new.md") is None


async def test_rotated_keyring_keeps_old_records_readable(
    tmp_path: Path, keyring: Keyring, store_url: Callable[[Path], str]
) -> None:
    url = store_url(tmp_path)
    async with sealed(url, keyring) as stores:
        await write_secrets(stores, "alice")
    async with sealed(url, keyring.rotated()) as stores:
        await write_secrets(stores, "bob")
        assert (await read_secrets(stores, "alice"))[2] == f"notes: {SECRETS[2]}"
        assert (await read_secrets(stores, "bob"))[2] == f"notes: {SECRETS[2]}"


async def test_a_plaintext_store_is_sealed_only_when_adopted_and_then_refuses_plain_opens(
    tmp_path: Path, keyring: Keyring, store_url: Callable[[Path], str]
) -> None:
    """A sealed open refuses unmarked plaintext; adopted, it reads it, and a plain open then refuses the store."""
    url = store_url(tmp_path)
    async with open_stores(url, encryption=False) as plain:
        await plain.tenant("alice").history_provider().save_messages("chat", [Message("user", ["before"])])
        await plain.tenant("alice").file_store().write("a.md", "before")
    async with sealed(url, keyring) as stores:
        with pytest.raises(PlaintextStoreError, match="adopt_plaintext"):
            await stores.tenant("alice").history_provider().save_messages("chat", [Message("user", ["lost"])])
        with pytest.raises(PlaintextStoreError):
            await stores.tenant("bob").file_store().write("b.md", "never written")
        for maintenance in (stores.rekey, stores.reseal):
            with pytest.raises(PlaintextStoreError):
                await maintenance()
        written = (await stores.raw_objects.list("", delimiter=None)).keys
        assert not [key for key in written if "sealing/" in key or "bob" in key], written
    async with open_stores(url, encryption=Encryption(keyring, adopt_plaintext=True)) as stores:
        history = stores.tenant("alice").history_provider()
        await history.save_messages("chat", [Message("user", ["after"])])
        assert [m.text for m in await history.get_messages("chat")] == ["before", "after"]
        assert await stores.tenant("alice").file_store().read("a.md") == "before"
    async with sealed(url, keyring) as stores:  # marked now: no option needed
        assert await stores.tenant("alice").file_store().read("a.md") == "before"
        assert not is_sealed((await stores.raw_objects.get("tenants/alice/files/a.md") or EMPTY).data)
        assert await stores.reseal() == {
            **{"scanned": 1, "sealed": 1, "resealed": 0, "unreadable": 0},
            **{"logs_scanned": 1, "logs_resealed": 1, "logs_unreadable": 0, "logs_busy": 0},  # "before" is plaintext
        }
        assert is_sealed((await stores.raw_objects.get("tenants/alice/files/a.md") or EMPTY).data)
        alice_logs = within(stores.raw_logs, "tenants/alice/")
        (log,) = await alice_logs.list_logs("")
        assert all(is_sealed(p) for p in await alice_logs.read(log.key)), "a history record is still plaintext"
        again = await stores.reseal()  # a second run finds nothing left
        assert again["sealed"] == again["logs_resealed"] == 0, again
        assert await stores.tenant("alice").file_store().read("a.md") == "before"
        history = stores.tenant("alice").history_provider()
        assert [m.text for m in await history.get_messages("chat")] == ["before", "after"]
    async with open_stores(url, encryption=False) as plain:
        with pytest.raises(SealedStoreError, match=keyring.current) as refused:
            await plain.tenant("alice").file_store().write("a.md", "plaintext beside sealed data")
        assert refused.value.key_id == keyring.current and "keyring=" in str(refused.value)
    async with sealed(url, keyring) as stores:
        assert await stores.tenant("alice").file_store().read("a.md") == "before"


async def test_forget_destroys_the_key_first_then_every_kind_of_data(
    tmp_path: Path, keyring: Keyring, store_url: Callable[[Path], str]
) -> None:
    url = store_url(tmp_path)
    async with sealed(url, keyring) as stores:
        await write_secrets(stores, "alice")
        await write_secrets(stores, "bob")
        assert await stores.forget("alice") > 0
        assert await stores.raw_objects.list("tenants/alice/", delimiter=None) == ([], [])
        assert await stores.tenant("alice").history_provider().get_messages("chat") == []
        assert (await read_secrets(stores, "bob"))[0] == f"my colour is {SECRETS[0]}"
        assert await stores.forget("alice") == 0


async def test_a_copy_made_once_the_key_is_destroyed_decrypts_nothing(
    tmp_path: Path, keyring: Keyring, store_url: Callable[[Path], str]
) -> None:
    """A forget interrupted after destroying the key (a replica, a snapshot or a backup taken then) opens nothing."""
    live, copy = tmp_path / "live", tmp_path / "copy"
    live.mkdir()
    async with sealed(store_url(live), keyring) as stores:
        await write_secrets(stores, "alice")
        await stores.data_keys.destroy("tenants/alice/")  # the first step of forget; the data is all still there
    shutil.copytree(live, copy)
    assert raw_hits(copy) == []
    async with sealed(store_url(copy), keyring) as stores:
        view = stores.tenant("alice")
        with pytest.raises(CorruptRecordError, match="destroyed"):
            await view.file_store().read("memory/notes.md")
        with pytest.raises(CorruptRecordError, match="destroyed"):
            await view.history_provider().get_messages("chat")
        assert await stores.raw_objects.get("tenants/alice/" + KEYS_OBJECT) is None
        assert await stores.forget("alice") > 0  # the next call finishes the deletion


async def test_rekey_rewraps_every_data_key_so_the_new_key_alone_opens_everything(
    tmp_path: Path, keyring: Keyring, store_url: Callable[[Path], str]
) -> None:
    url = store_url(tmp_path)
    async with sealed(url, keyring) as stores:
        await write_secrets(stores, "alice")
        await write_secrets(stores, "bob")
        await stores.file_store().write("root.md", SECRETS[2])
    rotated = keyring.rotated()
    only_new = Keyring(rotated.current, {rotated.current: rotated.keys[rotated.current]})
    async with sealed(url, only_new) as stores:
        with pytest.raises(SealingKeyError, match=keyring.current):
            await stores.tenant("alice").file_store().read("memory/notes.md")
    async with sealed(url, rotated) as stores:
        assert await stores.rekey() == {"scopes": 3, "rewrapped": 3}
        assert await stores.rekey() == {"scopes": 3, "rewrapped": 0}  # nothing left: a second run is a no-op
    async with sealed(url, only_new) as stores:
        assert (await read_secrets(stores, "alice"))[0] == f"my colour is {SECRETS[0]}"
        assert (await read_secrets(stores, "bob"))[2] == f"notes: {SECRETS[2]}"
        assert await stores.file_store().read("root.md") == SECRETS[2]


async def test_a_store_sealed_before_markers_is_recognised_and_marked(
    tmp_path: Path, keyring: Keyring, store_url: Callable[[Path], str]
) -> None:
    """An unmarked store whose values are sealed opens sealed without adopt_plaintext, and gets its marker."""
    url = store_url(tmp_path)
    async with sealed(url, keyring) as stores:
        await write_secrets(stores, "alice")
        assert await stores.raw_objects.delete(SEALED_MARKER)
    async with sealed(url, keyring) as stores:
        assert (await read_secrets(stores, "alice"))[2] == f"notes: {SECRETS[2]}"
        assert await stores.raw_objects.get(SEALED_MARKER) is not None
    async with open_stores(url, encryption=False) as plain:
        with pytest.raises(SealedStoreError):
            await plain.tenant("alice").history_provider().get_messages("chat")
