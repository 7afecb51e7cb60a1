"""The history suite on S3 (SeaweedFS; moto with ``AGENT_STORES_HEAVY=1``): ``S3HistoryProvider`` over the object log.

Every provider a factory opens owns its own boto3 client, as separate processes would; the
``multi_process`` clause runs two real child processes saving to one session through S3's
conditional writes. A second class forces frequent compaction so checkpoints are exercised on
the real servers too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import boto3
import pytest

from agent_stores.core import LogHistoryProvider, ObjectLogDriver
from agent_stores.s3 import S3Backend, S3HistoryProvider, S3ObjectDriver
from agent_stores.testing import FakeClock, HistoryProviderConformance, declared, expires_on_the_real_clock
from s3_support import S3Target, every_store_suite

ALL = declared(S3Backend, "history")


_sessions: dict[str, boto3.Session] = {}


def open_history(url: str, credentials: dict[str, Any], **options: Any) -> S3HistoryProvider:
    """The ``history_process_factory`` spec: a provider owning its own client, in any process.

    Clients share one boto3 session per process (a new session costs about 0.2 s); each
    provider still has a client of its own.
    """
    key = repr(sorted(credentials.items()))
    session = _sessions.get(key) or _sessions.setdefault(key, boto3.Session(**credentials))
    return S3HistoryProvider.from_url(url, session=session, **options)


class _S3History(HistoryProviderConformance):
    capabilities = ALL
    fake_clock = True
    target_fixture = ""

    @pytest.fixture
    def target(self, request: pytest.FixtureRequest) -> S3Target:
        return request.getfixturevalue(self.target_fixture)

    @pytest.fixture
    def history_factory(self, target: S3Target, s3_prefix: str, clock: FakeClock) -> Callable[..., S3HistoryProvider]:
        url, credentials = target.url(s3_prefix), target.endpoint.client_kwargs()
        return lambda **options: open_history(url, credentials, clock=clock, **options)

    @pytest.fixture
    def history_process_factory(self, target: S3Target, s3_prefix: str) -> tuple[str, dict[str, Any]]:
        return f"{__name__}:open_history", {
            "url": target.url(s3_prefix),
            "credentials": target.endpoint.client_kwargs(),
        }


class TestSeaweedFSHistory(_S3History):
    target_fixture = "seaweedfs"


@every_store_suite
class TestMotoHistory(_S3History):
    target_fixture = "moto_s3"


class TestSeaweedFSHistoryCompacting(HistoryProviderConformance):
    """The object log on S3 with a checkpoint after every 3 segments a full read fetches."""

    capabilities = declared(S3Backend, "history", multi_process=False)  # the class opens no second process
    fake_clock = True

    @pytest.fixture
    def history_factory(
        self, seaweedfs: S3Target, s3_prefix: str, clock: FakeClock
    ) -> Callable[..., LogHistoryProvider]:
        def open_provider(**options: Any) -> LogHistoryProvider:
            objects = S3ObjectDriver(seaweedfs.client(), seaweedfs.bucket, owns_client=True, **seaweedfs.driver_options)
            log = ObjectLogDriver(
                objects, prefix=f"{s3_prefix}/history/", owns_objects=True, compact_after=3, clock=clock
            )
            return LogHistoryProvider(log, owns_driver=True, **options)

        return open_provider


class _Requests:
    """Counts the S3 operations a borrowed client sends (botocore's event hooks)."""

    def __init__(self, client: Any) -> None:
        self.names: list[str] = []
        client.meta.events.register("before-call.s3", self._seen)

    def _seen(self, model: Any, **_: Any) -> None:
        self.names.append(model.name)

    def take(self) -> list[str]:
        names, self.names = self.names, []
        return names


@pytest.mark.asyncio
async def test_a_steady_save_is_one_put_and_a_window_reads_only_the_newest_segments(
    s3: S3Target, s3_prefix: str
) -> None:
    """The costs the design promises: one PUT per save on a known session; a windowed load lists two keys."""
    from agent_framework import Message

    client = s3.client()
    requests = _Requests(client)
    provider = S3HistoryProvider(client, s3.bucket, prefix=s3_prefix, max_messages=4, driver_options=s3.driver_options)
    try:
        await provider.save_messages("s", [Message(role="user", contents=["first"])])
        requests.take()
        for turn in range(30):
            await provider.save_messages(
                "s", [Message(role="user", contents=[f"q{turn}"]), Message(role="assistant", contents=[f"a{turn}"])]
            )
            assert requests.take() == ["PutObject"], f"turn {turn}"
        loaded = await provider.get_messages("s")
        assert [m.text for m in loaded] == ["q28", "a28", "q29", "a29"]
        names = requests.take()
        # Two LISTs of one key (newest segment, newest tail object), then the 2 newest segments
        # (the core's estimate may fetch one more in the same parallel round) — never the 31
        # segments of the session.
        assert names.count("ListObjectsV2") == 2 and 2 <= names.count("GetObject") <= 3, names
        assert set(names) == {"ListObjectsV2", "GetObject"}, names
        # A wide window over many segments: the first load writes a tail object, and from then
        # on a load after a save is one LIST (the newest segment; the tail it wrote is fetched by
        # name in the same round) and a few GETs, not one GET per turn.
        wide = S3HistoryProvider(client, s3.bucket, prefix=s3_prefix, max_messages=50, driver_options=s3.driver_options)
        try:
            assert len(await wide.get_messages("s")) == 50
            requests.take()
            for turn in range(30, 34):
                await provider.save_messages(
                    "s", [Message(role="user", contents=[f"q{turn}"]), Message(role="assistant", contents=[f"a{turn}"])]
                )
                requests.take()
                assert [m.text for m in await wide.get_messages("s")][-2:] == [f"q{turn}", f"a{turn}"]
                names = requests.take()
                assert names.count("ListObjectsV2") == 1 and names.count("GetObject") <= 2 + (turn - 29), names
        finally:
            await wide.aclose()
    finally:
        await provider.aclose()
        client.close()


def _records(*names: str) -> list[Any]:
    from agent_stores.core import LogRecord

    return [LogRecord(f"d-{n}", n.encode()) for n in names]


@pytest.mark.asyncio
async def test_logs_are_listed_once_each_in_folder_order(s3: S3Target, s3_prefix: str) -> None:
    """Keys where byte order and path-component order differ (``ab`` / ``ab-c`` / ``ab.d``) page correctly."""
    log = ObjectLogDriver(s3.objects(), prefix=f"{s3_prefix}/history/", owns_objects=True)
    try:
        keys = ["p/ab", "p/ab-c", "p/ab.d", "p/b", "p/a", "q/x"]
        for key in keys:
            version = None
            for i in range(3):
                version = await log.append(key, _records(str(i)), expected_version=version, session_id=key.upper())
        await log.delete("p/b")
        seen: list[str] = []
        after = None
        for _ in range(20):
            page = await log.list_logs("p/", after=after, limit=2)
            if not page:
                break
            seen.extend(info.key for info in page)
            after = page[-1].key
        assert seen == sorted(["p/ab", "p/ab-c", "p/ab.d", "p/a"], key=lambda k: k + "/")
    finally:
        await log.aclose()


@pytest.mark.asyncio
async def test_versions_never_repeat_after_delete_and_racing_appends_have_one_winner(
    s3: S3Target, s3_prefix: str
) -> None:
    import asyncio

    from agent_stores.core import StoreConflictError

    log = ObjectLogDriver(s3.objects(), prefix=f"{s3_prefix}/history/", owns_objects=True)
    try:
        versions = [await log.append("k", _records("a"), expected_version=None, session_id="s")]
        for name in "bc":
            versions.append(await log.append("k", _records(name), expected_version=versions[-1], session_id="s"))
        results = await asyncio.gather(
            *(log.append("k", _records(f"w{i}"), expected_version=versions[-1], session_id="s") for i in range(5)),
            return_exceptions=True,
        )
        assert sum(1 for r in results if not isinstance(r, BaseException)) == 1
        assert all(isinstance(r, StoreConflictError) for r in results if isinstance(r, BaseException))
        assert len(await log.read("k")) == 4
        assert await log.delete("k") is True
        assert await log.read("k") == []
        rewritten = await log.append("k", _records("x"), expected_version=None, session_id="s")
        assert rewritten not in versions
        for stale in versions:
            with pytest.raises(StoreConflictError):
                await log.append("k", _records("zombie"), expected_version=stale, session_id="s")
        assert await log.read("k") == [b"x"]
    finally:
        await log.aclose()


@pytest.mark.asyncio
async def test_expiry_on_the_real_clock(s3: S3Target, s3_prefix: str) -> None:
    """The S3 backend's one test on the real clock (the suites' expiry clauses run on a fake one)."""
    driver = s3.objects()
    history = S3HistoryProvider(driver, prefix=s3_prefix, ttl=0.5)
    try:
        await expires_on_the_real_clock(history)
    finally:
        await history.aclose()
        await driver.aclose()
