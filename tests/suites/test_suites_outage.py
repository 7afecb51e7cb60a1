"""The outage clauses themselves: a correct store in the hook form passes them, each broken store fails its clause.

The stores are the core's in-process drivers behind a switch (``outage_switch.py``): no server,
so the clauses run in a fraction of a second. ``OutageProxy`` is checked on a plain TCP echo
server: each mode does to a connection what it promises.
"""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agent_stores.core import LogHistoryProvider, ObjectAgentFileStore, ObjectSessionStore
from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver
from agent_stores.testing.outage import OutageCapabilities, OutageConformance, OutageProxy
from outage_switch import Gated, Switch

pytest_plugins = ["pytester"]

HOOK = OutageCapabilities(history=True, files=True, sessions=True, stall=False, lost_answers=False)


class TestHookFormOutages(OutageConformance):
    """A correct store behind a switch: every clause the hook form can run passes."""

    capabilities = HOOK
    unavailable_within = 2.0

    @pytest.fixture
    def outage(self) -> Switch:
        return Switch()

    @pytest.fixture
    def history_factory(self, outage: Switch) -> Callable[..., LogHistoryProvider]:
        log = MemoryLogDriver()
        return lambda **options: LogHistoryProvider(Gated(log, outage), **options)  # pyright: ignore[reportArgumentType]

    @pytest.fixture
    def file_store_factory(self, outage: Switch) -> Callable[..., ObjectAgentFileStore]:
        objects = MemoryObjectDriver()
        return lambda **options: ObjectAgentFileStore(Gated(objects, outage), **options)  # pyright: ignore[reportArgumentType]

    @pytest.fixture
    def session_store_factory(self, outage: Switch) -> Callable[[], ObjectSessionStore]:
        objects = MemoryObjectDriver()
        return lambda: ObjectSessionStore(Gated(objects, outage))  # pyright: ignore[reportArgumentType]


_BROKEN = """
import pytest
from agent_stores.core import LogHistoryProvider, ObjectAgentFileStore, ObjectSessionStore
from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver
from agent_stores.testing.outage import OutageCapabilities, OutageConformance
import outage_switch
"""

_CLASS = """

class Test{switch}(OutageConformance):
    capabilities = OutageCapabilities(history=True, files=True, sessions=True, stall=False, lost_answers=False)
    unavailable_within = 0.5

    @pytest.fixture
    def outage(self):
        return outage_switch.{switch}()

    @pytest.fixture
    def history_factory(self, outage):
        log = MemoryLogDriver()
        return lambda **options: LogHistoryProvider(outage_switch.Gated(log, outage), **options)

    @pytest.fixture
    def file_store_factory(self, outage):
        objects = MemoryObjectDriver()
        return lambda **options: ObjectAgentFileStore(outage_switch.Gated(objects, outage), **options)

    @pytest.fixture
    def session_store_factory(self, outage):
        objects = MemoryObjectDriver()
        return lambda: ObjectSessionStore(outage_switch.Gated(objects, outage))
"""

#: Each broken store, the clauses it must fail, and a phrase of the failure.
_CASES: dict[str, tuple[list[str], str]] = {
    "RawConnectionError": (
        [
            "test_history_refused_is_unavailable_and_the_same_provider_recovers",
            "test_files_refused_is_unavailable_and_the_same_store_recovers",
            "test_sessions_refused_is_unavailable_and_the_same_store_recovers",
            "test_history_opened_during_an_outage_works_once_restored",
        ],
        "raised ConnectionRefusedError",
    ),
    "HalfWrites": (
        [
            "test_history_refused_is_unavailable_and_the_same_provider_recovers",
            "test_files_refused_is_unavailable_and_the_same_store_recovers",
            "test_sessions_refused_is_unavailable_and_the_same_store_recovers",
        ],
        "whole or not at all",
    ),
    "NeverRecovers": (
        [
            "test_history_refused_is_unavailable_and_the_same_provider_recovers",
            "test_files_refused_is_unavailable_and_the_same_store_recovers",
        ],
        "after the server came back still raised StoreUnavailableError",
    ),
    "WaitsForever": (
        ["test_history_refused_is_unavailable_and_the_same_provider_recovers"],
        "was still waiting after 0.5 s",
    ),
    "LimitAsUnavailable": (
        ["test_history_refusals_are_not_unavailability", "test_files_refusals_are_not_unavailability"],
        "raised StoreUnavailableError (",
    ),
}


def test_broken_stores_fail_the_outage_clauses_written_for_their_bugs(pytester: pytest.Pytester) -> None:
    pytester.syspathinsert(Path(__file__).parent)
    pytester.makepyfile(test_broken_outages=_BROKEN + "".join(_CLASS.format(switch=name) for name in _CASES))
    nodes = [
        f"test_broken_outages.py::Test{name}::{clause}" for name, (clauses, _) in _CASES.items() for clause in clauses
    ]
    recorder = pytester.inline_run(*nodes, "-p", "no:cacheprovider")
    reports = {
        "::".join(r.nodeid.split("::")[-2:]): r
        for r in recorder.getreports("pytest_runtest_logreport")
        if r.when == "call"
    }
    for name, (clauses, phrase) in _CASES.items():
        for clause in clauses:
            report = reports.get(f"Test{name}::{clause}")
            assert report is not None, f"Test{name}::{clause} did not run"
            assert report.failed, f"the broken store {name} passed {clause}"
            assert phrase in report.longreprtext, f"{name} / {clause}: {report.longreprtext[-1500:]}"


# -- the proxy itself ---------------------------------------------------------------------------------


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        try:
            while data := self.request.recv(65536):
                self.request.sendall(data)
        except OSError:  # reset by the proxy's cut
            pass


@pytest.fixture
def echo() -> Iterator[tuple[str, int]]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[0], server.server_address[1]  # pyright: ignore[reportReturnType]
    server.shutdown()
    server.server_close()


def _roundtrip(address: tuple[str, int], data: bytes = b"ping") -> bytes:
    with socket.create_connection(address, timeout=2) as conn:
        conn.sendall(data)
        return conn.recv(65536)


def test_the_proxy_forwards_refuses_stalls_and_comes_back_on_the_same_port(echo: tuple[str, int]) -> None:
    with OutageProxy(*echo) as proxy:
        port = proxy.port
        assert _roundtrip(proxy.address) == b"ping"
        held = socket.create_connection(proxy.address, timeout=2)
        proxy.cut()
        with pytest.raises(ConnectionRefusedError):
            _roundtrip(proxy.address)
        with pytest.raises(ConnectionResetError):  # the open connection was reset
            held.recv(10)
        held.close()
        proxy.restore()
        assert proxy.port == port and _roundtrip(proxy.address) == b"ping"
        proxy.cut("stall")
        with socket.create_connection(proxy.address, timeout=0.3) as conn:
            conn.sendall(b"ping")
            with pytest.raises(TimeoutError):  # accepted, but nothing answers
                conn.recv(10)
        proxy.restore()
        assert _roundtrip(proxy.address) == b"ping"
        proxy.cut("after_next_request")
        with socket.create_connection(proxy.address, timeout=2) as conn:
            conn.sendall(b"lost")
            with pytest.raises(ConnectionResetError):  # the answer never comes: the connection is reset
                conn.recv(10)
        with pytest.raises(ConnectionRefusedError):
            _roundtrip(proxy.address)
        proxy.restore()
        assert _roundtrip(proxy.address) == b"ping"


def test_the_proxy_rewrites_urls_keeping_user_path_and_query() -> None:
    proxy = OutageProxy("db.internal", 5432)
    proxy.port = 40001
    assert proxy.url("mongodb://u:p@db.internal:5432/x?tls=false") == "mongodb://u:p@127.0.0.1:40001/x?tls=false"
    assert OutageProxy.for_url("redis://h:6380/0").target == ("h", 6380)
    assert OutageProxy.for_url("redis://h/0", default_port=6379).target == ("h", 6379)
    with pytest.raises(ValueError, match="names no host and port"):
        OutageProxy.for_url("redis:///0")
    with pytest.raises(ValueError, match="unknown outage mode"):
        proxy.cut("flaky")  # pyright: ignore[reportArgumentType]
