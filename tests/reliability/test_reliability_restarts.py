"""Server restarts: the server is stopped while an application saves, then started again.

One test per server backend (Redis, MongoDB, S3 on SeaweedFS, fsspec over SFTP to OpenSSH's
sshd, PostgreSQL), each on a server of its own
that keeps its data across the restart (Redis with an fsync'd append-only file, the MongoDB
stand-in's, SeaweedFS's and PostgreSQL's data directories) and comes back on the same port. A writer saves
pairs of messages through one store object without pause; after a few acknowledged saves the
server is stopped (SIGTERM) while saves are in flight. Once its processes have exited, more
saves are started (each must fail: the server is known to be down, not hoped to be), then the
server is started again while the writer keeps retrying. Then:

- every failed save failed with ``StoreUnavailableError`` (no other error, no hang: the
  store's timeouts bound each attempt), and the writer retried it as an application would;
- every save is stored exactly once (a save whose answer was lost is not stored twice), both
  messages together, in order;
- the same store object saves and reads again once the server is back, without reopening.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
from agent_framework import Message

from agent_stores.core import StoreUnavailableError, open_stores
from agent_stores.testing.servers import ServerUnavailable, free_port, is_required, stop_process, wait_for_port
from agent_stores.testing.servers.mongodb import NX27017Process
from agent_stores.testing.servers.postgresql import LocalPostgreSQL, postgresql_binaries
from agent_stores.testing.servers.redis import LocalRedis, server_binary
from agent_stores.testing.servers.s3 import (
    _ACCESS_KEY,  # pyright: ignore[reportPrivateUsage]
    _SECRET_KEY,  # pyright: ignore[reportPrivateUsage]
    S3Endpoint,
    _wait_until_serving,  # pyright: ignore[reportPrivateUsage]
    _weed_arguments,  # pyright: ignore[reportPrivateUsage]
    _weed_binary,  # pyright: ignore[reportPrivateUsage]
)
from agent_stores.testing.servers.sftp import prepare_sshd, signal_sshd, stop_sshd
from reliability_figures import record
from reliability_support import HEAVY

pytestmark = pytest.mark.asyncio

#: Acknowledged saves before the stop, and after the restart.
BEFORE, AFTER = 5, 5
#: Saves started once the server is down (the first meets the broken connection, the next a refused reconnect).
DOWN_SAVES = 2
#: The writer's pause after a failed save (but in the outage), as an application backs off.
RETRY_PAUSE_S = 0.05


class Restartable:
    """A server of this test's own: ``url``, ``stop()``, ``start()`` on the same port with the same data."""

    name = ""
    url = ""
    env: dict[str, str] = {}

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def discard(self) -> None:
        """Stop for good at the end of the test (its data is thrown away: no grace needed)."""
        self.stop()


class RedisServer(Restartable):
    name = "redis"

    def __init__(self, directory: Path) -> None:
        binary = server_binary()
        if binary is None:
            raise ServerUnavailable("no redis-server on PATH")
        persist = ["--appendonly", "yes", "--appendfsync", "always", "--appenddirname", "aof"]
        self.server = LocalRedis(binary, directory, extra=persist)
        self.url = f"{self.server.url}?socket_timeout=1&socket_connect_timeout=1"

    def start(self) -> None:
        self.server.start()

    def stop(self) -> None:
        self.server.stop()


class MongoDBServer(Restartable):
    name = "mongodb"

    def __init__(self, directory: Path) -> None:
        self.server = NX27017Process(directory)
        self.url = f"{self.server.url}?serverSelectionTimeoutMS=1000&connectTimeoutMS=1000&socketTimeoutMS=3000"

    def start(self) -> None:
        self.server.start()

    def stop(self) -> None:
        self.server.stop()


class PostgreSQLServer(Restartable):
    """A new cluster (``initdb``) in the test's directory; a stop is PostgreSQL's fast shutdown (SIGINT)."""

    name = "postgresql"

    def __init__(self, directory: Path) -> None:
        bindir = postgresql_binaries()
        if bindir is None:
            raise ServerUnavailable("no PostgreSQL server binaries (apt-get install postgresql)")
        self.server = LocalPostgreSQL(bindir, directory)
        self.server.init()
        # A statement waits at most 2 s for a connection (the server being down), then is unavailable.
        self.url = f"{self.server.url}?connect_timeout=1&pool_timeout=2&pool_size=2"

    def start(self) -> None:
        self.server.start()

    def stop(self) -> None:
        self.server.stop()

    def discard(self) -> None:
        process, self.server.process = self.server.process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGQUIT)  # immediate shutdown, no checkpoint: the data is thrown away
            process.wait(10)


class SeaweedFSServer(Restartable):
    """``weed mini`` on fixed loopback ports and one data directory, so a restart brings the same buckets back."""

    name = "s3"

    def __init__(self, directory: Path) -> None:
        self.binary = _weed_binary()
        self.directory = directory
        self.port = free_port()
        self.arguments = _weed_arguments(directory, self.port, free_port(), bind="127.0.0.1")
        self.endpoint = S3Endpoint(f"http://127.0.0.1:{self.port}", _ACCESS_KEY, _SECRET_KEY)
        self.bucket = "restarts"
        query = (
            "ordered_listing=false&path_keys=true&create_bucket=true&max_attempts=2&connect_timeout=1&read_timeout=3"
        )
        self.url = f"s3://{self.bucket}/p?endpoint_url={self.endpoint.endpoint_url}&region=us-east-1&{query}"
        self.env = {"AWS_ACCESS_KEY_ID": _ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": _SECRET_KEY}
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, **self.env}
        with (self.directory / "weed.log").open("ab") as log:
            self.process = subprocess.Popen(
                [self.binary, *self.arguments], stdout=log, stderr=subprocess.STDOUT, env=env, cwd=self.directory
            )
        process = self.process
        wait_for_port("127.0.0.1", self.port, timeout=60, alive=lambda: process.poll() is None)
        _wait_until_serving(self.endpoint, alive=lambda: process.poll() is None)

    def stop(self) -> None:
        process, self.process = self.process, None
        stop_process(process, grace=15)

    def discard(self) -> None:
        process, self.process = self.process, None
        stop_process(process, grace=1)  # weed mini can take 15 s to shut down; its data is thrown away


class SshdServer(Restartable):
    """OpenSSH ``sshd`` (internal-sftp) on a fixed loopback port, with its keys and data in one directory.

    Stopping it ends the listener and every connection process it forked (SIGTERM to each, as
    a service manager stopping sshd does), so the store's open SSH connection breaks; the store
    must reopen it by itself once sshd is back.
    """

    name = "fsspec"

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.sshd = prepare_sshd(directory)
        self.port = self.sshd.port
        # ``timeout``: paramiko's connect timeout, which the store also applies to every SFTP request.
        self.url = (
            f"fsspec+sftp://{quote(self.sshd.user)}@127.0.0.1:{self.port}{self.sshd.data / 'store'}"
            f"?key_filename={quote(str(self.sshd.client_key))}&timeout=2"
        )
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with (self.directory / "sshd.log").open("ab") as log:
            self.process = subprocess.Popen(self.sshd.command(), stdout=log, stderr=subprocess.STDOUT)
        process = self.process
        wait_for_port("127.0.0.1", self.port, timeout=20, alive=lambda: process.poll() is None)

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is not None:
            stop_sshd(process)  # the listener and its connection processes


SERVERS: dict[str, Callable[[Path], Restartable]] = {
    "redis": RedisServer,
    "mongodb": MongoDBServer,
    "s3": SeaweedFSServer,
    "fsspec": SshdServer,
    "postgresql": PostgreSQLServer,
}
SERVER_NAMES = {
    "redis": "redis-server (AOF)",
    "mongodb": "nx-27017 stand-in",
    "s3": "SeaweedFS weed mini",
    "fsspec": "OpenSSH sshd (SFTP)",
    "postgresql": "PostgreSQL (Debian's server)",
}


#: Runs only with ``AGENT_STORES_HEAVY=1`` (a new cluster costs seconds): every run restarts PostgreSQL
#: in tests/postgresql/test_postgresql_restart.py.
HEAVY_ONLY = {"postgresql"}


@pytest.fixture(params=list(SERVERS))
def server(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Restartable]:
    if request.param in HEAVY_ONLY and not HEAVY:
        pytest.skip(f"the {request.param} run: set AGENT_STORES_HEAVY=1")
    # Short directory names: weed mini's Unix sockets live in the directory (108-byte limit).
    with tempfile.TemporaryDirectory(prefix="as-restart-") as directory:
        try:
            found = SERVERS[request.param](Path(directory))
            found.start()
        except ServerUnavailable as err:
            if is_required("sftp" if request.param == "fsspec" else request.param):
                pytest.fail(f"cannot start a {request.param} server of this test's own: {err}", pytrace=False)
            pytest.skip(f"cannot start a {request.param} server of this test's own: {err}")
        for key, value in found.env.items():
            monkeypatch.setenv(key, value)
        try:
            yield found
        finally:
            found.discard()


def _pair(index: int) -> list[Message]:
    return [
        Message(role="user", contents=[f"{index}:a"], message_id=f"{index}:a"),
        Message(role="assistant", contents=[f"{index}:b"], message_id=f"{index}:b"),
    ]


async def test_a_server_restart_loses_nothing_and_the_store_recovers(server: Restartable) -> None:
    errors: Counter[str] = Counter()
    acked: list[int] = []
    slowest_failure = 0.0
    deadline = time.monotonic() + 180
    async with open_stores(server.url) as stores:
        history = stores.history_provider(source_id="restart")
        loop = asyncio.get_running_loop()
        index = 0

        async def attempt() -> bool:
            """Try the current save once; on success move on to the next one."""
            nonlocal index, slowest_failure
            assert time.monotonic() < deadline, f"no progress: {len(acked)} saves acknowledged, errors {dict(errors)}"
            started = time.monotonic()
            try:
                await history.save_messages("s", _pair(index))
            except StoreUnavailableError:
                slowest_failure = max(slowest_failure, time.monotonic() - started)
                errors["StoreUnavailableError"] += 1
                return False  # the application retries the same save
            except Exception as err:  # anything else is a defect, counted and reported below
                errors[type(err).__name__] += 1
                return False
            acked.append(index)
            index += 1
            return True

        while len(acked) < BEFORE:
            await attempt()
        stopping = loop.run_in_executor(None, server.stop)
        while not stopping.done():  # saves in flight while the server stops: stored or unavailable
            if not await attempt():
                await asyncio.sleep(RETRY_PAUSE_S)
        await stopping
        # The server's processes have exited: these saves start while it is down, so each must fail.
        for _ in range(DOWN_SAVES):
            assert not await attempt(), "a save succeeded while the server was down"
        assert errors["StoreUnavailableError"] >= DOWN_SAVES, f"saves into the outage failed with {dict(errors)}"
        restarting = loop.run_in_executor(None, server.start)
        while not restarting.done():  # the writer keeps retrying while the server comes back
            if not await attempt():
                await asyncio.sleep(RETRY_PAUSE_S)
        await restarting
        acked_after = 0
        while acked_after < AFTER:
            if await attempt():
                acked_after += 1
            else:
                await asyncio.sleep(RETRY_PAUSE_S)

        stored = [m.message_id for m in await history.get_messages("s")]
        counts = Counter(stored)
        duplicated = sum(n - 1 for n in counts.values() if n > 1)
        expected = [mid for i in acked for mid in (f"{i}:a", f"{i}:b")]
        lost = len(set(expected) - set(stored))
        assert set(errors) <= {"StoreUnavailableError"}, f"errors other than StoreUnavailableError: {dict(errors)}"
        assert duplicated == 0, f"stored twice: {[k for k, n in counts.items() if n > 1]}"
        assert lost == 0, "an acknowledged save is missing"
        assert stored == expected, "saves are out of order or torn"
    record(
        {
            "suite": "restarts",
            "backend": server.name,
            "server": SERVER_NAMES[server.name],
            "acknowledged": len(acked),
            "unavailable": errors["StoreUnavailableError"],
            "other_errors": sum(n for k, n in errors.items() if k != "StoreUnavailableError"),
            "lost": lost,
            "duplicated": duplicated,
            "works_after": acked_after > 0,
            "slowest_failure_s": f"{slowest_failure:.2f}",
        }
    )


@pytest.fixture
def sshd(monkeypatch: pytest.MonkeyPatch) -> Iterator[SshdServer]:
    with tempfile.TemporaryDirectory(prefix="as-sshd-") as directory:
        try:
            found = SshdServer(Path(directory))
            found.start()
        except ServerUnavailable as err:
            if is_required("sftp"):
                pytest.fail(f"cannot start an sshd of this test's own: {err}", pytrace=False)
            pytest.skip(f"cannot start an sshd of this test's own: {err}")
        try:
            yield found
        finally:
            found.discard()


def _signal_all(server: SshdServer, signum: int) -> None:
    assert server.process is not None
    signal_sshd(server.process, signum)


#: Upper bound on one failing call while sshd is silent: many times the URL's ``timeout`` (2 s),
#: so only a call that waits for TCP or paramiko's own 15 s banner wait exceeds it.
SILENT_CALL_LIMIT_S = 30


async def test_a_silent_sshd_fails_each_call_within_the_timeout_and_the_store_recovers(sshd: SshdServer) -> None:
    """sshd stops answering (SIGSTOP: connections stay open, nothing replies), then resumes (SIGCONT).

    A save while it is silent fails with ``StoreUnavailableError`` (the URL's ``timeout`` bounds
    each SFTP request and each wait of a reconnect) instead of hanging; once sshd answers again
    the same store object saves, and every acknowledged save is stored once, in order.
    """
    acked: list[int] = []
    failures = 0
    async with open_stores(sshd.url) as stores:
        history = stores.history_provider(source_id="silent")
        for index in range(3):
            await history.save_messages("s", _pair(index))
            acked.append(index)
        _signal_all(sshd, signal.SIGSTOP)
        try:
            for index in range(3, 5):  # the first fails on the open connection, the next on a reconnect
                with pytest.raises(StoreUnavailableError):
                    await asyncio.wait_for(history.save_messages("s", _pair(index)), SILENT_CALL_LIMIT_S)
                failures += 1
        finally:
            _signal_all(sshd, signal.SIGCONT)
        index = 3
        while len(acked) < 6:
            try:
                await asyncio.wait_for(history.save_messages("s", _pair(index)), SILENT_CALL_LIMIT_S)
            except StoreUnavailableError:
                failures += 1
                assert failures < 20, "the store does not recover once sshd answers again"
                await asyncio.sleep(0.1)
                continue
            acked.append(index)
            index += 1
        stored = [m.message_id for m in await history.get_messages("s")]
    assert stored == [mid for i in acked for mid in (f"{i}:a", f"{i}:b")]
