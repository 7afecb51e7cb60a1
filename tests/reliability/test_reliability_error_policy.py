"""One error policy on every backend: a table of faults, each forced on the backend's real server, and the class raised.

The rule (``docs/security.md``): refused by the server or the system (credentials, ACL or file
permission) is a ``StoreError`` that is not a ``StoreUnavailableError`` (retrying never helps);
unreachable, reset, stalled or busy past its timeout is a ``StoreUnavailableError``; a failed
condition is a ``StoreConflictError``. Each row names the backend, the fault and the class
expected; the client library's own exception is chained as the cause.

Server faults go through an :class:`~agent_stores.testing.outage.OutageProxy` the test cuts
(``refuse``: stopped or refusing; ``after_next_request``: reset mid-operation, after a first
operation opened the connection; ``stall``: connections open, nothing answered). Servers are
the reliability suite's own (``conftest.py``: Redis, the MongoDB server or its stand-in,
SeaweedFS) plus OpenSSH's sshd for fsspec over SFTP and a PostgreSQL server; the run's summary
names each. A path is
made read-only with its mode bits, or, where they do not bind (root), with ``chattr +i``.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import sqlite3
import subprocess
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import boto3
import psycopg
import pytest
from agent_framework import AgentSession
from redis.asyncio import Redis

from agent_stores.core import StoreConflictError, StoreError, StoreUnavailableError, open_stores
from agent_stores.core.stores import Stores
from agent_stores.fsspec._url import parse_url
from agent_stores.testing.outage import OutageMode, OutageProxy
from agent_stores.testing.servers import Server, announce
from agent_stores.testing.servers.mongodb import is_stand_in
from agent_stores.testing.servers.postgresql import postgresql_server
from agent_stores.testing.servers.sftp import sftp_server, with_path
from reliability_support import s3_url

pytestmark = pytest.mark.asyncio

#: Generous bound on one row: a row that hangs fails instead of stalling the run.
ROW_LIMIT_S = 120


@dataclass(frozen=True)
class Row:
    """One fault on one backend and the class it must raise."""

    backend: str
    fault: str
    expected: type[StoreError]

    def __str__(self) -> str:
        return f"{self.backend}: {self.fault} -> {self.expected.__name__}"


UNREACHABLE = {
    "server refusing connections": "refuse",
    "connection reset mid-operation": "after_next_request",
    "server stalled": "stall",
}

ROWS = [
    Row("sqlite", "read-only database file", StoreError),
    Row("sqlite", "locked past the busy timeout", StoreUnavailableError),
    Row("sqlite", "condition failed", StoreConflictError),
    *(Row("redis", fault, StoreUnavailableError) for fault in UNREACHABLE),
    Row("redis", "wrong password (ACL user)", StoreError),
    Row("redis", "ACL user without the command", StoreError),
    Row("redis", "condition failed", StoreConflictError),
    *(Row("mongodb", fault, StoreUnavailableError) for fault in UNREACHABLE),
    Row("mongodb", "wrong password", StoreError),
    Row("mongodb", "condition failed", StoreConflictError),
    *(Row("s3", fault, StoreUnavailableError) for fault in UNREACHABLE),
    Row("s3", "wrong secret key", StoreError),
    Row("s3", "condition failed", StoreConflictError),
    Row("fsspec (local folder)", "read-only folder", StoreError),
    Row("fsspec (local folder)", "condition failed", StoreConflictError),
    *(Row("fsspec (SFTP)", fault, StoreUnavailableError) for fault in UNREACHABLE),
    Row("fsspec (SFTP)", "key the server does not accept", StoreError),
    Row("fsspec (SFTP)", "read-only folder on the server", StoreError),
    Row("fsspec (SFTP)", "condition failed", StoreConflictError),
    *(Row("postgresql", fault, StoreUnavailableError) for fault in UNREACHABLE),
    Row("postgresql", "wrong password", StoreError),
    Row("postgresql", "role without rights on the tables", StoreError),
    Row("postgresql", "read-only database", StoreError),
    Row("postgresql", "condition failed", StoreConflictError),
]

#: Rows a server cannot run, with the reason (a strict xfail: the row must still fail there).
STAND_IN_DIVERGENCES = {
    ("mongodb", "wrong password"): (
        "the nx-27017 stand-in implements no authentication: pymongo's SCRAM handshake fails on its "
        "answer with a KeyError, which propagates as the bug it is; real MongoDB answers code 18"
    ),
}


# -- servers ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sftp_for_errors() -> Iterator[Server]:
    with sftp_server() as server:
        yield server


@pytest.fixture(scope="module")
def postgresql_for_errors() -> Iterator[Server]:
    with postgresql_server() as server:
        yield server


def with_query(url: str, **options: Any) -> str:
    """``url`` with ``options`` added to (or replacing those in) its query."""
    parts = urlsplit(url)
    query = dict(parse_qsl(parts.query, keep_blank_values=True)) | {k: str(v) for k, v in options.items()}
    return urlunsplit(parts._replace(query=urlencode(query, quote_via=quote, safe="/:")))


def with_user(url: str, user: str, password: str) -> str:
    """``url`` with ``user:password@`` as its user part."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{quote(user, safe='')}:{quote(password, safe='')}@{host}"))


@dataclass
class Case:
    """What one row needs: its servers, a proxy to cut, stores it opens, and what to undo afterwards."""

    request: pytest.FixtureRequest
    tmp_path: Path
    monkeypatch: pytest.MonkeyPatch
    exits: contextlib.AsyncExitStack

    def proxy(self, address_url: str, default_port: int | None = None) -> OutageProxy:
        return self.exits.enter_context(OutageProxy.for_url(address_url, default_port=default_port))

    def server(self, fixture: str) -> Any:
        found = self.request.getfixturevalue(fixture)
        server: Server = found[0] if isinstance(found, tuple) else found
        announce(f"error policy: {server.store} on {server.description}")
        return found

    async def stores(self, url: str, **options: Any) -> Stores:
        stores = open_stores(url, **options)
        self.exits.push_async_callback(stores.aclose)
        return stores


async def failure(work: Awaitable[Any]) -> BaseException:
    """The exception ``work`` raises (the row fails when it raises none)."""
    try:
        await work
    except Exception as err:
        return err
    pytest.fail("the operation succeeded; the fault was not felt")


async def save(stores: Stores) -> None:
    """Write a new session snapshot and read it back (what every fault row does)."""
    session_id = f"s{uuid.uuid4().hex[:8]}"
    sessions = stores.session_store()
    await sessions.set(session_id, AgentSession(session_id=session_id))
    assert await sessions.get(session_id) is not None


async def cut_while_saving(stores: Stores, proxy: OutageProxy, mode: OutageMode) -> BaseException:
    """Save once (the connection opens), cut the server off in ``mode``, and return what the next save raises."""
    await save(stores)
    proxy.cut(mode)
    try:
        return await failure(save(stores))
    finally:
        proxy.restore()


async def condition_failed(stores: Stores) -> BaseException:
    """A conditional put that cannot hold: the key exists, so ``if_absent`` fails."""
    driver = stores.object_driver()
    key = f"conditions/{uuid.uuid4().hex}"
    first = await driver.put(key, b"first", if_absent=True)
    err = await failure(driver.put(key, b"second", if_absent=True))
    assert isinstance(err, StoreConflictError), err
    stale = await failure(driver.put(key, b"third", if_version=f"not-{first}"))
    assert isinstance(stale, StoreConflictError), stale
    return err


@contextlib.contextmanager
def read_only(paths: list[Path]) -> Iterator[None]:
    """Make ``paths`` read-only for this process: mode bits, or ``chattr +i`` where those do not bind (root)."""
    modes = {path: path.stat().st_mode for path in paths}
    for path in paths:
        path.chmod(modes[path] & ~0o222)
    immutable: list[Path] = []
    try:
        for path in paths:
            if not os.access(path, os.W_OK):
                continue
            if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(path)], check=False).returncode:
                pytest.skip(f"cannot make {path} read-only here: mode bits do not bind this user and chattr +i failed")
            immutable.append(path)
        yield
    finally:
        for path in immutable:
            subprocess.run(["chattr", "-i", str(path)], check=True)
        for path, mode in modes.items():
            path.chmod(mode)


def tree(root: Path) -> list[Path]:
    """``root`` and every folder and file below it."""
    return [root, *sorted(root.rglob("*"))]


# -- the faults, per backend ------------------------------------------------------------------------


async def sqlite_fault(case: Case, fault: str) -> BaseException:
    path = case.tmp_path / "agent.db"
    url = f"sqlite:///{path}"
    if fault == "condition failed":
        return await condition_failed(await case.stores(url))
    async with open_stores(url) as stores:
        await save(stores)
    if fault == "read-only database file":
        with read_only([path]):
            return await failure(save(await case.stores(url)))
    assert fault == "locked past the busy timeout"
    stores = await case.stores(f"{url}?busy_timeout=0.2")
    await save(stores)
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as other:
        other.execute("BEGIN EXCLUSIVE")
        try:
            return await failure(save(stores))
        finally:
            other.execute("ROLLBACK")


async def redis_fault(case: Case, fault: str) -> BaseException:
    server: Server = case.server("redis_for_reliability")
    url = with_query(server.url, key_prefix=f"e{uuid.uuid4().hex[:12]}:", socket_timeout=1, socket_connect_timeout=1)
    if fault in UNREACHABLE:
        proxy = case.proxy(server.url, default_port=6379)
        return await cut_while_saving(await case.stores(proxy.url(url)), proxy, UNREACHABLE[fault])
    if fault == "condition failed":
        return await condition_failed(await case.stores(url))
    user = f"agent-{uuid.uuid4().hex[:12]}"
    rules = ["on", ">right-password", "~*", "+@all"]
    if fault == "ACL user without the command":
        rules += ["-@write", "-@scripting"]
    admin = Redis.from_url(server.url)
    case.exits.push_async_callback(admin.aclose)
    await admin.execute_command("ACL", "SETUSER", user, *rules)
    case.exits.push_async_callback(admin.execute_command, "ACL", "DELUSER", user)
    password = "wrong-password" if fault == "wrong password (ACL user)" else "right-password"
    return await failure(save(await case.stores(with_user(url, user, password))))


async def mongodb_fault(case: Case, fault: str) -> BaseException:
    server: Server = case.server("mongodb_for_reliability")
    if ("mongodb", fault) in STAND_IN_DIVERGENCES and is_stand_in(server.url):
        reason = STAND_IN_DIVERGENCES["mongodb", fault]
        case.request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    base = server.url.partition("?")[0].rsplit("/", 1)[0]
    url = with_query(
        f"{base}/e{uuid.uuid4().hex[:12]}",
        directConnection="true",
        serverSelectionTimeoutMS=2000,
        connectTimeoutMS=2000,
        socketTimeoutMS=2000,
    )
    if fault in UNREACHABLE:
        proxy = case.proxy(server.url, default_port=27017)
        return await cut_while_saving(await case.stores(proxy.url(url)), proxy, UNREACHABLE[fault])
    if fault == "condition failed":
        return await condition_failed(await case.stores(url))
    assert fault == "wrong password"
    return await failure(save(await case.stores(with_user(url, "agent", "wrong-password"))))


async def s3_fault(case: Case, fault: str) -> BaseException:
    server, bucket = case.server("seaweedfs_for_reliability")
    target = s3_url(server, bucket, f"e{uuid.uuid4().hex[:12]}")
    for name, value in target.env.items():
        case.monkeypatch.setenv(name, value)
    url = with_query(target.url, max_attempts=1, connect_timeout=3, read_timeout=3)
    if fault in UNREACHABLE:
        endpoint = dict(parse_qsl(urlsplit(url).query))["endpoint_url"]
        proxy = case.proxy(endpoint)
        stores = await case.stores(with_query(url, endpoint_url=proxy.url(endpoint)))
        return await cut_while_saving(stores, proxy, UNREACHABLE[fault])
    if fault == "condition failed":
        return await condition_failed(await case.stores(url))
    assert fault == "wrong secret key"
    session = boto3.Session(aws_access_key_id=target.env["AWS_ACCESS_KEY_ID"], aws_secret_access_key="wrong-secret-key")
    return await failure(save(await case.stores(url, session=session)))


async def local_folder_fault(case: Case, fault: str) -> BaseException:
    root = case.tmp_path / "stores"
    url = f"file://{root}"
    if fault == "condition failed":
        return await condition_failed(await case.stores(url))
    assert fault == "read-only folder"
    stores = await case.stores(url)
    await save(stores)
    with read_only([path for path in tree(root) if path.is_dir()]):
        return await failure(save(stores))


async def sftp_fault(case: Case, fault: str) -> BaseException:
    server: Server = case.server("sftp_for_errors")
    url = with_query(with_path(server.url, f"errors-{uuid.uuid4().hex[:12]}"), timeout=2)
    if fault in UNREACHABLE:
        proxy = case.proxy(server.url)
        return await cut_while_saving(await case.stores(proxy.url(url)), proxy, UNREACHABLE[fault])
    if fault == "condition failed":
        return await condition_failed(await case.stores(url))
    if fault == "key the server does not accept":
        key = case.tmp_path / "unknown_key"
        keygen = ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)]
        await asyncio.to_thread(subprocess.run, keygen, check=True, timeout=30)
        return await failure(save(await case.stores(with_query(url, key_filename=str(key)))))
    assert fault == "read-only folder on the server"
    stores = await case.stores(url)
    await save(stores)
    root = Path(parse_url(url).root)  # the server runs on this machine: its folder is ours to lock
    with read_only([path for path in tree(root) if path.is_dir()]):
        return await failure(save(stores))


async def postgresql_fault(case: Case, fault: str) -> BaseException:
    server: Server = case.server("postgresql_for_errors")
    name = f"e{uuid.uuid4().hex[:12]}"
    admin = await psycopg.AsyncConnection.connect(server.url, autocommit=True)
    case.exits.push_async_callback(admin.close)
    await admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')  # pyright: ignore[reportArgumentType]
    case.exits.push_async_callback(admin.execute, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    url = with_query(
        urlunsplit(urlsplit(server.url)._replace(path=f"/{name}")), connect_timeout=2, pool_timeout=3, read_timeout=3
    )
    if fault in UNREACHABLE:
        proxy = case.proxy(server.url, default_port=5432)
        return await cut_while_saving(await case.stores(proxy.url(url)), proxy, UNREACHABLE[fault])
    if fault == "condition failed":
        return await condition_failed(await case.stores(url))
    async with open_stores(url) as stores:
        await save(stores)  # the schema exists: what a role without DDL rights meets
    role = f"agent_{uuid.uuid4().hex[:12]}"
    await admin.execute(f"CREATE ROLE {role} LOGIN PASSWORD 'right-password'")  # pyright: ignore[reportArgumentType]
    case.exits.push_async_callback(admin.execute, f"DROP ROLE IF EXISTS {role}")
    if fault == "wrong password":
        return await failure(save(await case.stores(with_user(url, role, "wrong-password"))))
    if fault == "role without rights on the tables":
        return await failure(save(await case.stores(with_user(url, role, "right-password"))))
    assert fault == "read-only database"
    await admin.execute(f'ALTER DATABASE "{name}" SET default_transaction_read_only = on')  # pyright: ignore[reportArgumentType]
    return await failure(save(await case.stores(url)))


FAULTS: dict[str, Callable[[Case, str], Awaitable[BaseException]]] = {
    "sqlite": sqlite_fault,
    "redis": redis_fault,
    "mongodb": mongodb_fault,
    "s3": s3_fault,
    "fsspec (local folder)": local_folder_fault,
    "fsspec (SFTP)": sftp_fault,
    "postgresql": postgresql_fault,
}


@pytest.mark.parametrize("row", ROWS, ids=str)
async def test_each_fault_raises_its_class(
    row: Row, request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with contextlib.AsyncExitStack() as exits, asyncio.timeout(ROW_LIMIT_S):
        err = await FAULTS[row.backend](Case(request, tmp_path, monkeypatch, exits), row.fault)
    assert type(err) is row.expected, f"{row}: got {type(err).__module__}.{type(err).__name__}: {err}"
    if row.expected is not StoreConflictError:  # a condition a driver checked itself has no client error
        assert err.__cause__ is not None, f"{row}: the client's own error is not chained"
    if row.expected is StoreError:
        assert "check" in str(err), f"{row}: the message does not say what to check: {err}"
