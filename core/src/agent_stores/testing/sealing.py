"""The encryption clause set: a sealed store keeps every promise of ``docs/encryption.md``.

Subclass :class:`SealingConformance` and provide a ``sealed_stores_factory`` fixture: a
callable taking a key provider and returning sealed stores over the **same** backing data on
every call (as ``open_stores(url, encryption=provider)`` does), each with ``raw_objects`` and
``raw_logs`` (the drivers underneath the sealing layer, to copy and alter what is stored),
``forget(tenant)`` and ``forget(namespace=...)``, ``rotate_data_keys(tenant=...)`` and
``reseal(tenant=...)`` reporting ``logs_resealed`` (as
:class:`~agent_stores.core.sealing.SealedStores` has them, with its key objects); given
``False`` instead of a provider, it returns the same stores opened without a key (as
``open_stores(url, encryption=False)`` does)::

    import pytest
    from agent_stores.core import open_stores
    from agent_stores.testing import SealingCapabilities, SealingConformance

    class TestMySealedStore(SealingConformance):
        capabilities = SealingCapabilities()

        @pytest.fixture
        def sealed_stores_factory(self, tmp_path):
            return lambda provider: open_stores(f"sqlite:///{tmp_path / 'agent.db'}", encryption=provider)

The ``key_provider``, ``other_key_provider`` and ``rotate`` fixtures default to local keyrings;
override them to run the clauses against another key provider (a KMS). Every clause works in
tenants (and namespaces) of its own, so the suite can run against a live store that holds data.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from agent_framework import AgentSession, Message
from agent_framework._harness._todo import TodoItem

from agent_stores.core import CorruptRecordError, LogRecord, SealedStoreError, StoreError, tenant_root
from agent_stores.core.keys import key_segment, split_tenant
from agent_stores.core.prefixed import within
from agent_stores.core.sealing import KeyProvider, Keyring, is_sealed, keys_object, sealed_key_id
from agent_stores.core.sealing._format import digest_key_id
from agent_stores.core.sealmark import LOG_OBJECTS, read_marker

from ._base import ConformanceBase, unique_id
from .history import SuiteCompaction

__all__ = ["SealingCapabilities", "SealingConformance"]

_FILE = "memory/notes.md"


@dataclass(frozen=True)
class SealingCapabilities:
    """What a sealed store declares (nothing yet: every clause applies to every sealed store)."""


class SealingConformance(ConformanceBase):
    """Encryption at rest: nothing readable below the sealing layer, misplaced bytes corrupt, keys and erasure."""

    factory_fixture: ClassVar[str] = "sealed_stores_factory"
    capabilities: ClassVar[Any] = SealingCapabilities()

    @pytest.fixture
    def key_provider(self) -> KeyProvider:
        """The provider the clauses write with."""
        return Keyring.generate()

    @pytest.fixture
    def other_key_provider(self) -> KeyProvider:
        """A provider that holds none of :meth:`key_provider`'s keys."""
        return Keyring.generate()

    @pytest.fixture
    def rotate(self) -> Callable[[KeyProvider], KeyProvider]:
        """Return a provider with a new current key-encryption key that still unwraps what ``provider`` wrapped."""

        def rotated(provider: KeyProvider) -> KeyProvider:
            assert isinstance(provider, Keyring), "override the rotate fixture for a provider that is not a Keyring"
            return provider.rotated()

        return rotated

    @pytest.fixture
    def open_sealed(self, request: pytest.FixtureRequest) -> Callable[[KeyProvider], Any]:
        """Open the factory's stores for a provider (``False``: without a key), as an async context manager."""
        factory = request.getfixturevalue(self.factory_fixture)

        @asynccontextmanager
        async def opened(provider: KeyProvider | bool) -> AsyncGenerator[Any]:
            stores = factory(provider)
            if inspect.isawaitable(stores):
                stores = await stores
            try:
                yield stores
            finally:
                await stores.aclose()

        return opened

    async def _write(self, stores: Any, tenant: str, secret: str) -> None:
        view = stores.tenant(tenant)
        await view.history_provider().save_messages(
            "chat", [Message("user", [f"first {secret}"]), Message("assistant", [f"second {secret}"])]
        )
        await view.file_store().write(_FILE, f"notes {secret}")
        session = AgentSession(session_id="chat")
        session.state["secret"] = secret
        await view.session_store().set("chat", session)

    async def _raw(self, stores: Any, tenant: str) -> tuple[dict[str, bytes], dict[str, list[LogRecord]]]:
        """Every object and log record of ``tenant`` as the driver underneath the sealing layer holds it."""
        root = tenant_root(tenant)
        objects: dict[str, bytes] = {}
        for key in (await stores.raw_objects.list(root, delimiter=None)).keys:
            stored = await stores.raw_objects.get(key)
            if stored is not None:
                objects[key] = stored.data
        logs: dict[str, list[LogRecord]] = {}
        scoped = within(stores.raw_logs, root)
        for log in await scoped.list_logs("", limit=1000):
            payloads = await scoped.read(log.key)
            tail = await scoped.tail(log.key, len(payloads))
            logs[log.key] = [LogRecord(d, p) for d, p in zip(tail.digests, payloads, strict=True)]
        return objects, logs

    def _file_key(self, stores: Any, tenant: str) -> str:
        return tenant_root(tenant) + "files/" + _FILE

    async def _expect_corrupt(self, read: Awaitable[Any], what: str) -> None:
        try:
            await read
        except CorruptRecordError:
            return
        pytest.fail(f"{what} was read without a CorruptRecordError")

    async def test_nothing_below_the_sealing_layer_is_readable(
        self, open_sealed: Callable[[KeyProvider], Any], key_provider: KeyProvider
    ) -> None:
        """Message text, file contents, session state and digests reach the driver sealed.

        The clause writes a secret through history, a file and a session snapshot, then reads
        every object and log record of the tenant from the driver underneath. Failure means
        some kind is written in plaintext below the sealing layer.
        """
        tenant, secret = unique_id("sealed"), unique_id("secret")
        async with open_sealed(key_provider) as stores:
            await self._write(stores, tenant, secret)
            objects, logs = await self._raw(stores, tenant)
            stored = [*objects.values(), *(r.payload + r.digest.encode() for records in logs.values() for r in records)]
            assert objects and logs, "the clause found nothing stored for the tenant under the sealing layer"
            leaks = [key for key, data in [*objects.items()] if secret.encode() in data]
            leaks += [key for key, records in logs.items() if any(secret.encode() in r.payload for r in records)]
            assert not leaks and not any(secret.encode() in data for data in stored), f"plaintext in {leaks}"

    async def test_a_wrong_key_provider_is_a_clear_error_and_writes_nothing(
        self,
        open_sealed: Callable[[KeyProvider], Any],
        key_provider: KeyProvider,
        other_key_provider: KeyProvider,
    ) -> None:
        """A provider without the tenant's key-encryption key fails reads and writes with a StoreError naming that key.

        Failure means sealed data was read or overwritten without its key, a new key was made
        beside the old one, or the error does not say which key is needed.
        """
        tenant, secret = unique_id("sealed"), unique_id("secret")
        async with open_sealed(key_provider) as stores:
            await self._write(stores, tenant, secret)
            before, _ = await self._raw(stores, tenant)
        async with open_sealed(other_key_provider) as stores:
            files = stores.tenant(tenant).file_store()
            attempts: list[Callable[[], Awaitable[Any]]] = [
                lambda: files.read(_FILE),
                lambda: files.write("other.md", "never written"),
            ]
            for attempt in attempts:
                with pytest.raises(StoreError) as caught:
                    await attempt()
                assert not isinstance(caught.value, CorruptRecordError), "a wrong key is not corrupt data"
                assert key_provider.key_id in str(caught.value), f"the error does not name the key: {caught.value}"
            after, _ = await self._raw(stores, tenant)
            assert after == before, "a provider without the key wrote to the tenant"

    async def test_a_store_opened_without_its_key_refuses_every_operation(
        self, open_sealed: Callable[[KeyProvider | bool], Any], key_provider: KeyProvider
    ) -> None:
        """Opened without a key, a sealed store refuses reads and writes of every kind with SealedStoreError.

        The error names the key-encryption key the store's marker records and how to give it;
        nothing is written, for the tenant holding data or for a new one. Failure means a store
        opened by mistake without its key writes plaintext beside sealed data (which a sealed
        open would then accept), or reads fail as corrupt data instead of naming the missing key.
        """
        tenant, fresh, secret = unique_id("sealed"), unique_id("sealed"), unique_id("secret")
        async with open_sealed(key_provider) as stores:
            await self._write(stores, tenant, secret)
            before = await self._raw(stores, tenant)
            marker = await read_marker(stores.raw_objects)
        assert marker is not None, "the sealed store holds data but no sealed-store marker"
        async with open_sealed(False) as plain:
            view, other = plain.tenant(tenant), plain.tenant(fresh)
            session = AgentSession(session_id="chat")
            attempts: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
                ("write a file", lambda: view.file_store().write(_FILE, "plaintext beside sealed data")),
                ("read a file", lambda: view.file_store().read(_FILE)),
                ("save history", lambda: view.history_provider().save_messages("chat", [Message("user", ["x"])])),
                ("load history", lambda: view.history_provider().get_messages("chat")),
                ("set a session", lambda: view.session_store().set("chat", session)),
                ("save todos", lambda: view.todo_store().save_state(session, [], next_id=1, source_id="todos")),
                ("a new tenant's write", lambda: other.file_store().write(_FILE, "plaintext")),
            ]
            for what, attempt in attempts:
                with pytest.raises(SealedStoreError) as refused:
                    await attempt()
                assert marker.key_id in str(refused.value), f"{what}: the error does not name the key: {refused.value}"
        async with open_sealed(key_provider) as stores:
            assert await self._raw(stores, tenant) == before, "an open without the key changed the tenant's data"
            assert await self._raw(stores, fresh) == ({}, {}), "an open without the key wrote a new tenant"
            assert await stores.tenant(tenant).file_store().read(_FILE) == f"notes {secret}"

    async def test_tampered_and_truncated_values_are_corrupt(
        self, open_sealed: Callable[[KeyProvider], Any], key_provider: KeyProvider
    ) -> None:
        """A stored value with one bit flipped, or cut short, is a CorruptRecordError.

        Failure means a value is read without authenticating it.
        """
        tenant, secret = unique_id("sealed"), unique_id("secret")
        async with open_sealed(key_provider) as stores:
            await self._write(stores, tenant, secret)
            key = self._file_key(stores, tenant)
            stored = (await self._raw(stores, tenant))[0][key]
            flipped = bytearray(stored)
            flipped[len(flipped) // 2] ^= 1
            for broken, what in ((bytes(flipped), "a flipped bit"), (stored[: len(stored) // 2], "a truncated value")):
                await stores.raw_objects.put(key, broken)
                await self._expect_corrupt(stores.tenant(tenant).file_store().read(_FILE), what)

    async def test_values_copied_to_another_tenant_or_key_are_corrupt(
        self, open_sealed: Callable[[KeyProvider], Any], key_provider: KeyProvider
    ) -> None:
        """A sealed value copied under another tenant's key, or another key of its own tenant, is a CorruptRecordError.

        Failure means the associated data does not bind a value to where it belongs: one
        tenant's data could be served as another's.
        """
        tenant, other, secret = unique_id("sealed"), unique_id("sealed"), unique_id("secret")
        async with open_sealed(key_provider) as stores:
            await self._write(stores, tenant, secret)
            await self._write(stores, other, unique_id("secret"))
            data = (await self._raw(stores, tenant))[0][self._file_key(stores, tenant)]
            await stores.raw_objects.put(self._file_key(stores, other), data)
            await self._expect_corrupt(stores.tenant(other).file_store().read(_FILE), "another tenant's file")
            await stores.raw_objects.put(tenant_root(tenant) + "files/moved.md", data)
            await self._expect_corrupt(
                stores.tenant(tenant).file_store().read("moved.md"), "a file copied to a new path"
            )

    async def test_swapped_or_copied_history_records_are_corrupt(
        self, open_sealed: Callable[[KeyProvider], Any], key_provider: KeyProvider
    ) -> None:
        """History records in another order, or copied to another session, are a CorruptRecordError.

        Both when a session is loaded and when many are exported together (``export_logs``,
        what a migration reads). Failure means a record is not bound to its log and position.
        """
        tenant, secret = unique_id("sealed"), unique_id("secret")
        async with open_sealed(key_provider) as stores:
            await self._write(stores, tenant, secret)
            logs = within(stores.raw_logs, tenant_root(tenant))
            (key, records), *_ = (await self._raw(stores, tenant))[1].items()
            await logs.delete(key)
            await logs.append(key, [records[1], records[0]], expected_version=None, session_id="chat")
            history = stores.tenant(tenant).history_provider()
            await self._expect_corrupt(history.get_messages("chat"), "swapped records")
            await self._expect_corrupt(history.export_logs(["chat"]), "swapped records, exported")
            copy = key.rsplit("/", 1)[0] + "/" + unique_id("copy")
            await logs.append(copy, records, expected_version=None, session_id="copy")
            copied = stores.tenant(tenant).history_provider()
            await self._expect_corrupt(copied.get_messages(copy.rsplit("/", 1)[1]), "records copied to another session")
            exported = stores.tenant(tenant).history_provider().export_logs([copy.rsplit("/", 1)[1]])
            await self._expect_corrupt(exported, "records copied to another session, exported")

    async def test_rotation_keeps_old_records_readable(
        self,
        open_sealed: Callable[[KeyProvider], Any],
        key_provider: KeyProvider,
        rotate: Callable[[KeyProvider], KeyProvider],
    ) -> None:
        """After a new key-encryption key, records written before stay readable and new ones are written.

        Failure means rotating the key-encryption key loses access to existing data.
        """
        tenant, fresh, secret = unique_id("sealed"), unique_id("sealed"), unique_id("secret")
        async with open_sealed(key_provider) as stores:
            await self._write(stores, tenant, secret)
        async with open_sealed(rotate(key_provider)) as stores:
            await self._write(stores, fresh, secret)
            for name in (tenant, fresh):
                view = stores.tenant(name)
                assert await view.file_store().read(_FILE) == f"notes {secret}"
                assert [m.text for m in await view.history_provider().get_messages("chat")] == [
                    f"first {secret}",
                    f"second {secret}",
                ]

    async def test_after_forget_a_copy_of_the_data_does_not_decrypt(
        self, open_sealed: Callable[[KeyProvider], Any], key_provider: KeyProvider
    ) -> None:
        """The tenant's objects and records copied before forget, put back after it, open as CorruptRecordError only.

        Failure means ``forget`` deleted the data but left a key that opens a copy of it (a
        replica, a snapshot, a restored backup of the data).
        """
        tenant, secret = unique_id("sealed"), unique_id("secret")
        async with open_sealed(key_provider) as stores:
            await self._write(stores, tenant, secret)
            objects, logs = await self._raw(stores, tenant)
            await stores.forget(tenant)
            data_keys = {k: v for k, v in objects.items() if k.startswith(tenant_root(tenant) + "files/")}
            for key, data in data_keys.items():
                await stores.raw_objects.put(key, data)
            scoped = within(stores.raw_logs, tenant_root(tenant))
            for key, records in logs.items():
                await scoped.append(key, records, expected_version=None, session_id="chat")
            view = stores.tenant(tenant)
            await self._expect_corrupt(view.file_store().read(_FILE), "a file restored after forget")
            await self._expect_corrupt(view.history_provider().get_messages("chat"), "history restored after forget")
            await stores.forget(tenant)

    async def test_a_new_data_key_seals_new_writes_and_old_records_stay_readable(
        self, open_sealed: Callable[[KeyProvider], Any], key_provider: KeyProvider
    ) -> None:
        """After ``rotate_data_keys``, new values carry the new data key's id and every older value still opens.

        Another process that cached the tenant's keys before the rotation reads the values
        sealed with the key it has not seen, and a second rotation with the first one's cutoff
        adds no key. Failure means a rotation loses access to existing records, new writes keep
        the old key, or other processes cannot read what the rotating one writes.
        """
        tenant, secret = unique_id("sealed"), unique_id("secret")
        file_key = self._file_key(None, tenant)
        async with open_sealed(key_provider) as stores, open_sealed(key_provider) as other:
            await self._write(stores, tenant, secret)
            old = sealed_key_id((await self._raw(stores, tenant))[0][file_key], where=file_key)
            assert await other.tenant(tenant).file_store().read(_FILE) == f"notes {secret}"  # caches the old key
            report = await stores.rotate_data_keys(tenant=tenant)
            assert report["rotated"] == 1, report
            view = stores.tenant(tenant)
            await view.file_store().write("new.md", f"new {secret}")
            await view.history_provider().save_messages("chat", [Message("user", [f"third {secret}"])])
            objects, logs = await self._raw(stores, tenant)
            new = sealed_key_id(objects[tenant_root(tenant) + "files/new.md"], where="new.md")
            assert new != old, "a write after the rotation is sealed with the old data key"
            (records,) = logs.values()
            kids = [sealed_key_id(r.payload, where="a record") for r in records]
            assert kids == [old, old, new], f"history records' data keys {kids}: the append after it kept the old key"
            transcript = [f"first {secret}", f"second {secret}", f"third {secret}"]
            for reader in (stores, other):
                view = reader.tenant(tenant)
                assert await view.file_store().read(_FILE) == f"notes {secret}"
                assert await view.file_store().read("new.md") == f"new {secret}"
                assert [m.text for m in await view.history_provider().get_messages("chat")] == transcript
            again = await stores.rotate_data_keys(tenant=tenant, older_than=report["older_than"])
            assert again["rotated"] == 0, "a rotation run again with its cutoff added a second key"
            await stores.forget(tenant)

    async def test_resealed_objects_need_only_the_new_data_key(
        self, open_sealed: Callable[[KeyProvider], Any], key_provider: KeyProvider
    ) -> None:
        """After a rotation, ``reseal`` seals every object again under the new key; the old key no longer opens them.

        The clause rotates, reseals, then removes the old data key from the tenant's key object:
        the resealed file still reads, and its pre-rotation bytes put back are a
        CorruptRecordError. A second reseal finds nothing to do. Failure means the sweep left
        objects under the old key, rewrote them unchanged, or is not resumable.
        """
        tenant, secret = unique_id("sealed"), unique_id("secret")
        file_key = self._file_key(None, tenant)
        async with open_sealed(key_provider) as stores:
            await self._write(stores, tenant, secret)
            before = (await self._raw(stores, tenant))[0][file_key]
            old = sealed_key_id(before, where=file_key)
            assert (await stores.rotate_data_keys(tenant=tenant))["rotated"] == 1
            report = await stores.reseal(tenant=tenant)
            assert report["resealed"] >= 2 and report["unreadable"] == 0, report  # the file and the session
            objects, _ = await self._raw(stores, tenant)
            keys_key = keys_object(tenant_root(tenant))
            held = [
                sealed_key_id(data, where=key)
                for key, data in objects.items()
                if is_sealed(data) and not split_tenant(key)[1].startswith(LOG_OBJECTS)  # not log segments
            ]
            assert old not in held, "an object is still sealed with the old data key after reseal"
            assert (await stores.reseal(tenant=tenant))["resealed"] == 0, "a second reseal rewrote objects again"
            stored = await stores.raw_objects.get(keys_key)
            assert stored is not None, "the tenant's key object is missing"
            keys = json.loads(stored.data)
            del keys["keys"][old]
            await stores.raw_objects.put(keys_key, json.dumps(keys).encode())
        async with open_sealed(key_provider) as stores:
            files = stores.tenant(tenant).file_store()
            assert await files.read(_FILE) == f"notes {secret}"
            await stores.raw_objects.put(file_key, before)
            await self._expect_corrupt(files.read(_FILE), "a value sealed with a removed data key")
            await stores.forget(tenant)

    async def test_resealed_logs_need_only_the_new_data_key_and_keep_their_transcript(
        self, open_sealed: Callable[[KeyProvider], Any], key_provider: KeyProvider
    ) -> None:
        """After a rotation, ``reseal`` rewrites each history log under the new key; the session holds the same.

        The clause saves messages, compacts the session (a compaction record, annotations, a
        summary), rotates the tenant's data key, saves one more message and reseals: no record
        or digest of the tenant's logs carries the old data key and no staging log is left; the
        full transcript and the model's view are what they were; saving every message again
        stores nothing (de-duplication holds); a second reseal rewrites no log. Failure means
        the sweep left history under the old key (``forget`` of a copy would not shred it),
        changed what a session holds, broke de-duplication, or is not resumable.
        """
        tenant, secret = unique_id("sealed"), unique_id("secret")
        saved = [
            Message("user" if i % 2 == 0 else "assistant", [f"turn {i} {secret}"], message_id=f"m-{i}")
            for i in range(5)
        ]
        later = Message("user", [f"later {secret}"], message_id="m-later")
        async with open_sealed(key_provider) as stores:
            view = stores.tenant(tenant)
            history = view.history_provider()
            await history.save_messages("chat", saved)
            assert await history.compact("chat", SuiteCompaction(keep=2)), "the compaction stored nothing"
            (records,) = (await self._raw(stores, tenant))[1].values()
            old = sealed_key_id(records[0].payload, where="a history record")
            assert (await stores.rotate_data_keys(tenant=tenant))["rotated"] == 1
            await history.save_messages("chat", [later])
            full = [m.to_dict() for m in await history.export_messages("chat")]
            sent = [m.to_dict() for m in await view.history_provider(skip_excluded=True).get_messages("chat")]
            report = await stores.reseal(tenant=tenant)
            assert report["logs_resealed"] == 1 and report["logs_unreadable"] == 0, report
            logs = (await self._raw(stores, tenant))[1]
            assert len(logs) == 1, f"logs after the reseal: {sorted(logs)} (a staging log left?)"
            (records,) = logs.values()
            kids = {sealed_key_id(r.payload, where="a history record") for r in records}
            kids |= {digest_key_id(r.digest, where="a history digest") for r in records}
            assert old not in kids, "a history record or digest is still sealed with the old data key after reseal"
            fresh = stores.tenant(tenant)
            assert [m.to_dict() for m in await fresh.history_provider().export_messages("chat")] == full, (
                "the reseal changed the session's transcript"
            )
            view_after = await fresh.history_provider(skip_excluded=True).get_messages("chat")
            assert [m.to_dict() for m in view_after] == sent, "the reseal changed what the model is sent"
            await fresh.history_provider().save_messages("chat", [*saved, later])
            assert len(next(iter((await self._raw(stores, tenant))[1].values()))) == len(records), (
                "saving stored messages again after the reseal stored them twice"
            )
            again = await stores.reseal(tenant=tenant)
            assert again["logs_resealed"] == 0, "a second reseal rewrote the log again"
            await stores.forget(tenant)

    async def test_forget_namespace_leaves_nothing_of_it_decryptable_and_the_rest_intact(
        self, open_sealed: Callable[[KeyProvider], Any], key_provider: KeyProvider
    ) -> None:
        """Outside tenants, ``forget(namespace=...)`` destroys the namespace's keys and data; other namespaces stay.

        The clause writes history and a todo list in two namespaces, copies the raw bytes of one,
        forgets it and puts the copies back: they open as CorruptRecordError only, and the
        other namespace reads as before. Failure means a namespace shares its data key with
        the rest of the store (a copy of it stays readable), or forget reaches beyond it.
        """
        gone, kept, secret = unique_id("ns"), unique_id("ns"), unique_id("secret")
        session = AgentSession(session_id="chat")
        async with open_sealed(key_provider) as stores:
            for namespace in (gone, kept):
                await stores.history_provider(namespace=namespace).save_messages(
                    "chat", [Message("user", [f"{namespace} {secret}"])]
                )
                await stores.todo_store(namespace=namespace).save_state(
                    session, [TodoItem(id=1, title=f"{namespace} {secret}")], next_id=2, source_id="todos"
                )
            segment = key_segment(gone)
            logs, in_namespace = stores.raw_logs, segment + "/"  # log keys outside tenants start with it
            copied_logs: dict[str, list[LogRecord]] = {}
            for log in await logs.list_logs(in_namespace, limit=1000):
                payloads = await logs.read(log.key)
                tail = await logs.tail(log.key, len(payloads))
                copied_logs[log.key] = [LogRecord(d, p) for d, p in zip(tail.digests, payloads, strict=True)]
            todo_prefix = f"todos/{segment}/"
            copied = {
                k: await stores.raw_objects.get(k)
                for k in (await stores.raw_objects.list(todo_prefix, delimiter=None)).keys
            }
            assert copied_logs and copied, "the clause found nothing stored for the namespace"
            assert await stores.forget(namespace=gone) >= 2
            assert not await logs.list_logs(in_namespace, limit=10), "forget left a log of the namespace"
            assert not (await stores.raw_objects.list(todo_prefix, delimiter=None)).keys, "forget left an object"
            for key, records in copied_logs.items():
                await logs.append(key, records, expected_version=None, session_id="chat")
            for key, value in copied.items():
                assert value is not None
                await stores.raw_objects.put(key, value.data)
            history = stores.history_provider(namespace=gone)
            await self._expect_corrupt(history.get_messages("chat"), "history restored after forget")
            todos = stores.todo_store(namespace=gone)
            await self._expect_corrupt(
                todos.load_state(session, source_id="todos"), "a todo list restored after forget"
            )
            other = stores.history_provider(namespace=kept)
            assert [m.text for m in await other.get_messages("chat")] == [f"{kept} {secret}"]
            items, _ = await stores.todo_store(namespace=kept).load_state(session, source_id="todos")
            assert [i.title for i in items] == [f"{kept} {secret}"]
            await stores.forget(namespace=gone)
            await stores.forget(namespace=kept)
