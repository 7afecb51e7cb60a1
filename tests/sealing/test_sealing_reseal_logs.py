"""Re-sealing history logs on SQLite and Redis while agents write: nothing lost or doubled, all under the new key.

The sweep rewrites a log through retention's stage/seal/swap; these tests force a save into each
gap of that rewrite (after the read, while the log is sealed), stop the rewrite half-way, and
run a writer beside a whole sweep.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from agent_framework import Message

from agent_stores.core import LogRecord, open_stores
from agent_stores.core.compaction import SEAL_DIGEST
from agent_stores.core.drivers import LogVersion
from agent_stores.core.sealing import (
    Keyring,
    SealedLogDriver,
    SealedStores,
    is_sealed,
    log_scope_of,
    sealed_key_id,
)
from agent_stores.core.sealing._format import digest_key_id
from agent_stores.testing.history import SimulatedCrash, SuiteCompaction, crash_log_history
from agent_stores.testing.servers import Server
from agent_stores.testing.servers.redis import redis_server

pytestmark = pytest.mark.asyncio


class _Stopped(Exception):
    """The re-seal process stopped here."""


class _Hooked(SealedLogDriver):
    """The store's sealing log driver, running ``before_seal`` / ``before_swap`` once at those steps of a rewrite.

    ``before_seal`` runs before the seal is appended to the log (after the rewrite read it),
    ``before_swap`` before the sealed log is deleted (while it takes no saves).
    """

    before_seal: Callable[[], Awaitable[None]] | None = None
    before_swap: Callable[[], Awaitable[None]] | None = None

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        if records and records[0].digest == SEAL_DIGEST and self.before_seal is not None:
            hook, self.before_seal = self.before_seal, None
            await hook()
        return await super().append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)

    async def delete_if_version(self, key: str, version: LogVersion) -> bool:
        if "~retaining." not in key and self.before_swap is not None:
            hook, self.before_swap = self.before_swap, None
            await hook()
        return await super().delete_if_version(key, version)


@pytest.fixture(scope="module")
def redis() -> Iterator[Server]:
    with redis_server() as server:
        yield server


@pytest.fixture(params=["sqlite", "redis"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A store of the test's own: a SQLite file, or a Redis key prefix."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'agent.db'}"
    server: Server = request.getfixturevalue("redis")
    return f"{server.url}?key_prefix=t{uuid.uuid4().hex[:12]}:"


def _sealed(url: str, keyring: Keyring) -> SealedStores:
    stores = open_stores(url, encryption=keyring)
    assert isinstance(stores, SealedStores)
    return stores


def _hook(stores: SealedStores) -> _Hooked:
    """Route the stores' log writes (the sweep's and every provider's made afterwards) through a hooked driver."""
    hooked = _Hooked(stores.raw_logs, stores.data_keys, plaintext_reads=stores.encryption.plaintext_reads)
    stores._logs = hooked  # pyright: ignore[reportPrivateUsage]
    return hooked


def _turns(session: str, count: int, start: int = 0) -> list[Message]:
    return [Message("user", [f"{session} turn {i}"], message_id=f"{session}-{i}") for i in range(start, start + count)]


async def _kids(stores: SealedStores) -> set[str]:
    """Every data key id a history record or digest of the store is sealed with (raw)."""
    found: set[str] = set()
    for log in await stores.raw_logs.list_logs("", limit=1000):
        payloads = await stores.raw_logs.read(log.key)
        found |= {sealed_key_id(p, where=log.key) for p in payloads}
        tail = await stores.raw_logs.tail(log.key, len(payloads))
        found |= {digest_key_id(d, where=log.key) for d in tail.digests}
    return found


async def _current(stores: SealedStores) -> str:
    """The current data key of the scope of the store's history logs (all in the default namespace here)."""
    (log, *_) = await stores.raw_logs.list_logs("", limit=1)
    current = (await stores.data_keys.kids(log_scope_of(log.key)))[0]
    assert current is not None
    return current


async def _texts(stores: SealedStores, session: str) -> list[str]:
    provider: Any = stores.history_provider()
    return [m.text for m in await provider.export_messages(session)]


async def test_a_save_after_the_read_and_one_while_sealed_are_both_kept(url: str) -> None:
    """A save landing before the seal makes the rewrite start again; one landing while sealed waits for the swap."""
    keyring = Keyring.generate()
    async with _sealed(url, keyring) as stores:
        await stores.history_provider().save_messages("s", _turns("s", 4))
        assert (await stores.rotate_data_keys())["rotated"] == 1
        hooked = _hook(stores)
        waiting: list[asyncio.Task[None]] = []

        async def save_before_seal() -> None:
            await stores.history_provider().save_messages("s", _turns("s", 1, start=4))

        async def save_while_sealed() -> None:
            waiting.append(asyncio.ensure_future(stores.history_provider().save_messages("s", _turns("s", 1, start=5))))
            await asyncio.sleep(0.2)  # the save finds the log sealed and waits for the swap
            assert not waiting[0].done(), "a save appended to a sealed log"

        hooked.before_seal, hooked.before_swap = save_before_seal, save_while_sealed
        report = await stores.reseal()
        await asyncio.wait_for(waiting[0], 10)
        assert hooked.before_seal is None and hooked.before_swap is None, "a forced race never ran"
        assert report["logs_resealed"] == 1, report
        assert await _texts(stores, "s") == [f"s turn {i}" for i in range(6)], "a save was lost or stored twice"
        assert await _kids(stores) == {await _current(stores)}, "a record is still under the old data key"
        assert len(await stores.raw_logs.list_logs("", limit=10)) == 1, "the staging log is left"


@pytest.mark.parametrize("step", ["before_seal", "before_swap"])
async def test_a_reseal_stopped_at_its_seal_or_swap_is_finished_by_the_next_run(url: str, step: str) -> None:
    """Readers see the old transcript meanwhile; the next sweep finishes (or starts again) and seals the log.

    Stopped before its seal, the run leaves a staging log and an untouched log that reads as the
    staged copy: the next run must still find the log under the old key and rewrite it.
    """
    keyring = Keyring.generate()
    async with _sealed(url, keyring) as stores:
        await stores.history_provider().save_messages("s", _turns("s", 3))
        assert (await stores.rotate_data_keys())["rotated"] == 1
        hooked = _hook(stores)

        async def stop() -> None:
            raise _Stopped

        setattr(hooked, step, stop)
        with pytest.raises(_Stopped):
            await stores.reseal()
        assert await _texts(stores, "s") == [f"s turn {i}" for i in range(3)], "a reader lost the sealed transcript"
    async with _sealed(url, keyring) as stores:
        report = await stores.reseal()
        assert report["logs_resealed"] == 1, report
        assert await _texts(stores, "s") == [f"s turn {i}" for i in range(3)]
        assert await _kids(stores) == {await _current(stores)}
        assert len(await stores.raw_logs.list_logs("", limit=10)) == 1, "the staging log is left"
        assert (await stores.reseal())["logs_resealed"] == 0


async def test_a_writer_saving_during_a_whole_sweep_loses_nothing(url: str) -> None:
    """Saves to every session while the sweep rewrites them: each session holds each message once, in order."""
    keyring = Keyring.generate()
    sessions = [f"s{i}" for i in range(6)]
    async with _sealed(url, keyring) as stores:
        for session in sessions:
            await stores.history_provider().save_messages(session, _turns(session, 3))
        assert (await stores.rotate_data_keys())["rotated"] == 1

        async def writer() -> None:
            provider: Any = stores.history_provider()
            for turn in range(3, 9):
                for session in sessions:
                    await provider.save_messages(session, _turns(session, 1, start=turn))
                await asyncio.sleep(0)

        report, _ = await asyncio.gather(stores.reseal(concurrency=2), writer())
        assert report["logs_scanned"] == len(sessions) and report["logs_unreadable"] == 0, report
        for session in sessions:
            assert await _texts(stores, session) == [f"{session} turn {i}" for i in range(9)], session
        await stores.reseal()  # a log the writer reached before the rotation took effect is finished here
        assert await _kids(stores) == {await _current(stores)}


async def test_a_whole_store_reseal_reaches_tenants_and_namespaces_once_and_seals_adopted_plaintext(
    url: str,
) -> None:
    """Plaintext logs of the root namespace, another namespace and a tenant are sealed, each rewritten once."""
    keyring = Keyring.generate()
    async with open_stores(url, encryption=False) as plain:
        await plain.history_provider().save_messages("s", _turns("s", 2))
        await plain.history_provider(namespace="support").save_messages("s", _turns("s", 2))
        await plain.tenant("acme").history_provider().save_messages("s", _turns("s", 2))
    stores = open_stores(url, encryption=keyring, adopt_plaintext=True)
    assert isinstance(stores, SealedStores)
    async with stores:
        report = await stores.reseal(concurrency=2)
        assert (report["logs_scanned"], report["logs_resealed"], report["logs_unreadable"]) == (3, 3, 0), report
        for log in await stores.raw_logs.list_logs("", limit=10):
            assert all(is_sealed(p) for p in await stores.raw_logs.read(log.key)), f"{log.key} holds plaintext"
        for provider in (
            stores.history_provider(),
            stores.history_provider(namespace="support"),
            stores.tenant("acme").history_provider(),
        ):
            await provider.save_messages("s", _turns("s", 2))  # stored already: de-duplicated
            assert [m.text for m in await provider.get_messages("s")] == ["s turn 0", "s turn 1"]
        assert (await stores.reseal())["logs_resealed"] == 0


class _StagedFirst(_Hooked):
    """Runs ``before_stage`` once, just before the sweep stages a log (a retention staging it first)."""

    before_stage: Callable[[], Awaitable[None]] | None = None

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        if "~retaining." in key and self.before_stage is not None:
            hook, self.before_stage = self.before_stage, None
            await hook()
        return await super().append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)


async def test_a_log_a_retention_is_rewriting_is_left_busy_and_the_next_run_seals_it(url: str) -> None:
    """A retention staged the log first: the sweep leaves it (``logs_busy``) and goes on; the next run seals it."""
    keyring = Keyring.generate()
    async with _sealed(url, keyring) as stores:
        provider: Any = stores.history_provider()
        await provider.save_messages("s", _turns("s", 4))
        await provider.save_messages("t", _turns("t", 2))
        assert await provider.compact("s", SuiteCompaction(keep=2))
        sent = [m.to_dict() for m in await stores.history_provider(skip_excluded=True).get_messages("s")]
        assert (await stores.rotate_data_keys())["rotated"] == 1
        hooked = _StagedFirst(stores.raw_logs, stores.data_keys)
        stores._logs = hooked  # pyright: ignore[reportPrivateUsage]

        async def a_retention_stops_after_staging() -> None:
            retention: Any = stores.history_provider()
            crash_log_history(retention, 1)  # stage, then stop before the seal
            with pytest.raises(SimulatedCrash):
                await retention.retain("s")

        hooked.before_stage = a_retention_stops_after_staging
        report = await stores.reseal(concurrency=1)
        assert hooked.before_stage is None, "the forced race never ran"
        # "s" is left busy and the sweep goes on; the retention's staging log, listed after "t", is
        # dropped (never sealed) later in the same run, and "s" sealed then
        assert report["logs_busy"] == 1 and report["logs_resealed"] >= 1, report
        report = await stores.reseal()
        assert (report["logs_busy"], report["logs_unreadable"]) == (0, 0), report
        assert await _kids(stores) == {await _current(stores)}
        assert len(await stores.raw_logs.list_logs("", limit=10)) == 2, "a staging log is left"
        after = [m.to_dict() for m in await stores.history_provider(skip_excluded=True).get_messages("s")]
        assert after == sent, "what the model is sent changed"
        rerun: Any = stores.history_provider()
        assert await rerun.retain("s") == 2  # the retention, run again, finishes
        after = [m.to_dict() for m in await stores.history_provider(skip_excluded=True).get_messages("s")]
        assert [m["message_id"] for m in after] == [m["message_id"] for m in sent]


async def test_a_rewritten_log_expires_log_ttl_after_the_rewrite(url: str) -> None:
    """``log_ttl`` is the rewritten log's expiry (log drivers report none to keep); a ttl not positive is refused."""
    keyring = Keyring.generate()
    async with _sealed(url, keyring) as stores:
        await stores.history_provider().save_messages("s", _turns("s", 2))
        assert (await stores.rotate_data_keys())["rotated"] == 1
        with pytest.raises(ValueError, match="ttl"):
            await stores.reseal(log_ttl=0)
        report = await stores.reseal(log_ttl=3)  # long enough for a loaded machine to read it back first
        assert report["logs_resealed"] == 1, report
        assert await _texts(stores, "s") == ["s turn 0", "s turn 1"]
        await asyncio.sleep(3.5)
        assert await _texts(stores, "s") == [], "the rewritten log did not expire log_ttl after the rewrite"
