"""The encryption clause set against sealed SQLite stores, and against deliberately broken sealing layers.

Each broken layer declares, as divergences (strict xfail), exactly the clauses its bug must
fail: a clause that stops catching the bug fails this run.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_stores.core import StoredObject, Stores, open_stores
from agent_stores.core.keys import key_segment
from agent_stores.core.prefixed import within
from agent_stores.core.sealing import (
    Encryption,
    KeyProvider,
    SealedLogDriver,
    SealedObjectDriver,
    SealedStores,
    forget,
    keys_object,
    log_scope_of,
    namespace_scope,
    scope_of,
    tenant_scope,
)
from agent_stores.core.sealing._format import is_sealed, sealed_key_id
from agent_stores.sqlite import SQLiteBackend
from agent_stores.testing import SealingCapabilities, SealingConformance


def sealed_sqlite(
    path: Path, provider: KeyProvider | bool, stores_type: type[SealedStores] = SealedStores
) -> SealedStores | Stores:
    url = f"sqlite:///{path}"
    if provider is False:
        return open_stores(url, encryption=False)
    assert not isinstance(provider, bool)
    if stores_type is SealedStores:
        stores = open_stores(url, encryption=provider)
        assert isinstance(stores, SealedStores)
        return stores
    return stores_type(url, SQLiteBackend(url), Encryption(provider))


class TestSealedSQLite(SealingConformance):
    capabilities = SealingCapabilities()

    @pytest.fixture
    def sealed_stores_factory(self, tmp_path: Path) -> Callable[[KeyProvider | bool], SealedStores | Stores]:
        return lambda provider: sealed_sqlite(tmp_path / "agent.db", provider)


class UnboundObjects(SealedObjectDriver):
    """Seals every object as if it were stored under one key: copies within a tenant open."""

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        sealed = (await self.keys.current(scope_of(key))).seal("", data)
        return await self.driver.put(key, sealed, if_absent=if_absent, if_version=if_version)

    async def get(self, key: str) -> StoredObject | None:
        stored = await self.driver.get(key)
        if stored is None or not is_sealed(stored.data):
            return stored
        data_key = await self.keys.get(scope_of(key), sealed_key_id(stored.data, where=key), where=key)
        return StoredObject(data_key.open("", stored.data, where=key)[0], stored.version)


class UnpositionedLogs(SealedLogDriver):
    """Opens each record on its own, never checking that positions follow each other."""

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        full = self.root + key
        plain: list[bytes] = []
        for payload in await self.driver.read(key, last=last):
            data_key = await self.keys.get(log_scope_of(full), sealed_key_id(payload, where=key), where=key)
            plain.append(data_key.open(full, payload, where=key)[0])
        return plain

    def within(self, prefix: str) -> SealedLogDriver:
        return UnpositionedLogs(within(self.driver, prefix), self.keys, root=self.root + prefix)


class LeakyFiles(SealedObjectDriver):
    """Stores file contents in plaintext (everything else sealed)."""

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        if "/files/" in key:
            return await self.driver.put(key, data, if_absent=if_absent, if_version=if_version)
        return await super().put(key, data, if_absent=if_absent, if_version=if_version)


class _Rewired(SealedStores):
    """Sealed stores whose sealing drivers are the broken ones a subclass names."""

    objects_type: type[SealedObjectDriver] = SealedObjectDriver
    logs_type: type[SealedLogDriver] = SealedLogDriver

    def __init__(self, url: str, backend: Any, encryption: Encryption) -> None:
        super().__init__(url, backend, encryption)
        self._objects = self.objects_type(self.raw_objects, self.data_keys)
        self._logs = self.logs_type(self.raw_logs, self.data_keys)


class _UnboundStores(_Rewired):
    objects_type = UnboundObjects


class _UnpositionedStores(_Rewired):
    logs_type = UnpositionedLogs


class _LeakyStores(_Rewired):
    objects_type = LeakyFiles


class _KeepsKeysStores(_Rewired):
    """Deletes the tenant's or namespace's data but leaves its data keys: a copy of the data still opens."""

    async def forget(self, tenant: str | None = None, *, namespace: str | None = None) -> int:
        scope = tenant_scope(tenant) if tenant is not None else namespace_scope(key_segment(namespace or ""))
        key = keys_object(scope)
        saved = await self.raw_objects.get(key)
        deleted = await forget(self, tenant, namespace=namespace)
        if saved is not None:
            await self.raw_objects.put(key, saved.data)
        return deleted


class _UnmarkedStores(_Rewired):
    """Never marks the store as sealed: an open without a key takes it for a plain store."""

    async def _mark(self) -> None:
        return None


class _Broken(SealingConformance):
    capabilities = SealingCapabilities()
    stores_type: type[SealedStores]

    @pytest.fixture
    def sealed_stores_factory(self, tmp_path: Path) -> Callable[[KeyProvider | bool], SealedStores | Stores]:
        return lambda provider: sealed_sqlite(tmp_path / "agent.db", provider, self.stores_type)


class TestUnboundObjectsAreCaught(_Broken):
    stores_type = _UnboundStores
    divergences = {
        "test_values_copied_to_another_tenant_or_key_are_corrupt": "seals objects without their key",
        "test_resealed_objects_need_only_the_new_data_key": "the sweep cannot open objects sealed unbound",
    }


class TestUnpositionedLogsAreCaught(_Broken):
    stores_type = _UnpositionedStores
    divergences = {"test_swapped_or_copied_history_records_are_corrupt": "never checks record positions"}


class TestLeakyFilesAreCaught(_Broken):
    stores_type = _LeakyStores
    divergences = {
        "test_nothing_below_the_sealing_layer_is_readable": "writes file contents in plaintext",
        "test_a_wrong_key_provider_is_a_clear_error_and_writes_nothing": "plaintext files read without the key",
        "test_tampered_and_truncated_values_are_corrupt": "plaintext files are not authenticated",
        "test_values_copied_to_another_tenant_or_key_are_corrupt": "plaintext files are not bound to their key",
        "test_after_forget_a_copy_of_the_data_does_not_decrypt": "plaintext files need no key",
        "test_a_new_data_key_seals_new_writes_and_old_records_stay_readable": "new files carry no data key",
        "test_resealed_objects_need_only_the_new_data_key": "plaintext files carry no data key",
    }


class TestForgetKeepingKeysIsCaught(_Broken):
    stores_type = _KeepsKeysStores
    divergences = {
        "test_after_forget_a_copy_of_the_data_does_not_decrypt": "leaves the tenant's data keys in place",
        "test_forget_namespace_leaves_nothing_of_it_decryptable_and_the_rest_intact": "leaves the namespace's keys",
    }


class TestUnmarkedStoresAreCaught(_Broken):
    stores_type = _UnmarkedStores
    divergences = {"test_a_store_opened_without_its_key_refuses_every_operation": "never marks the store as sealed"}
