"""The outage clauses against the fsspec stores over SFTP (OpenSSH sshd), through a proxy the test cuts.

Each store owns its SSH connection, opened at the proxy's address with a 1 s timeout. Local
filesystems have no server to lose: the outage clauses do not apply to them (nor to SQLite).

SFTP fails most clauses, declared below with the reasons (strict xfail: the day the backend
reopens its connection, the run says so). Each failing clause waits out ``unavailable_within``
(3 s), so the class runs behind ``AGENT_STORES_HEAVY=1`` (about 35 s).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agent_stores.fsspec import FsspecAgentFileStore, FsspecHistoryProvider, FsspecSessionStore
from agent_stores.testing.outage import OutageCapabilities, OutageConformance, OutageProxy
from agent_stores.testing.servers.sftp import sftp_server, with_path


@pytest.fixture(scope="module")
def sftp_url() -> Iterator[str]:
    with sftp_server() as server:
        yield server.url


_NO_RECONNECT = (
    "an owned SSH connection that drops is never reopened: paramiko's SFTP client does not reconnect, "
    "so the same store stays unavailable after the server is back (a new store works)"
)
_NO_TIMEOUT = (
    "no timeout once connected: paramiko's timeout covers connecting only, so an SFTP request to a "
    "silent server waits until TCP gives up"
)


@pytest.mark.skipif(os.environ.get("AGENT_STORES_HEAVY") != "1", reason="the SFTP run: set AGENT_STORES_HEAVY=1")
class TestSftpOutages(OutageConformance):
    capabilities = OutageCapabilities(history=True, files=True, sessions=True)
    unavailable_within = 3.0
    divergences = {
        "test_history_refused_is_unavailable_and_the_same_provider_recovers": _NO_RECONNECT,
        "test_history_lost_answer_leaves_the_save_whole_or_absent": _NO_RECONNECT,
        "test_files_refused_is_unavailable_and_the_same_store_recovers": _NO_RECONNECT,
        "test_files_lost_answer_leaves_the_write_whole_or_absent": _NO_RECONNECT,
        "test_sessions_refused_is_unavailable_and_the_same_store_recovers": _NO_RECONNECT,
        "test_sessions_lost_answer_leaves_the_snapshot_whole_or_absent": _NO_RECONNECT,
        "test_history_stalled_is_unavailable_within_the_timeout": _NO_TIMEOUT,
        "test_files_stalled_is_unavailable_within_the_timeout": _NO_TIMEOUT,
        "test_sessions_stalled_is_unavailable_within_the_timeout": _NO_TIMEOUT,
        "test_files_refusals_are_not_unavailability": (
            "a path past the server's limits is answered with a bare SFTP failure status ('Bad message', "
            "no errno), which paramiko raises as the same OSError as a dropped connection: the funnel "
            "cannot tell the two apart"
        ),
    }

    @pytest.fixture
    def outage(self, sftp_url: str) -> Iterator[OutageProxy]:
        with OutageProxy.for_url(sftp_url) as proxy:
            yield proxy

    @pytest.fixture
    def url(self, sftp_url: str, outage: OutageProxy) -> str:
        url = outage.url(with_path(sftp_url, f"outage-{uuid.uuid4().hex}"))
        return url + ("&" if "?" in url else "?") + "timeout=1"

    @pytest.fixture
    def history_factory(self, url: str) -> Callable[..., FsspecHistoryProvider]:
        return lambda **options: FsspecHistoryProvider.from_url(url, **options)

    @pytest.fixture
    def file_store_factory(self, url: str) -> Callable[..., Any]:
        return lambda **options: FsspecAgentFileStore.from_url(url, **options)

    @pytest.fixture
    def session_store_factory(self, url: str) -> Callable[[], FsspecSessionStore]:
        return lambda: FsspecSessionStore.from_url(url)
