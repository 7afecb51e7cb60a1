"""The encryption clause set: a sealed store keeps every promise of ``docs/encryption.md``.

Subclass :class:`SealingConformance` and provide a ``sealed_stores_factory`` fixture: a
callable taking a key provider and returning sealed stores over the **same** backing data on
every call (as ``open_stores(url, encryption=provider)`` does), each with ``raw_objects`` and
``raw_logs`` (the drivers underneath the sealing layer, to copy and alter what is stored) and
``forget(tenant)``; given ``False`` instead of a provider, it returns the same stores opened
without a key (as ``open_stores(url, encryption=False)`` does)::

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
tenants of its own, so the suite can run against a live store that holds data.
"""

from __future__ import annotations

import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from agent_framework import AgentSession, Message

from agent_stores.core import CorruptRecordError, LogRecord, SealedStoreError, StoreError, tenant_root
from agent_stores.core.prefixed import within
from agent_stores.core.sealing import KeyProvider, Keyring
from agent_stores.core.sealmark import read_marker

from ._base import ConformanceBase, unique_id

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

        Failure means a record is not bound to its log and position.
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
            copy = key.rsplit("/", 1)[0] + "/" + unique_id("copy")
            await logs.append(copy, records, expected_version=None, session_id="copy")
            copied = stores.tenant(tenant).history_provider()
            await self._expect_corrupt(copied.get_messages(copy.rsplit("/", 1)[1]), "records copied to another session")

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
