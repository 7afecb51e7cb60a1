"""The outage clauses against the fsspec stores over SFTP (OpenSSH sshd), through a proxy the test cuts.

Each store owns its SSH connection, opened at the proxy's address with a 1 s timeout. Local
filesystems have no server to lose: the outage clauses do not apply to them (nor to SQLite).

The store reopens a dropped SSH connection on its next call and bounds every request by the
URL's ``timeout``; one clause is declared below with its reason (strict xfail). The class runs
behind ``AGENT_STORES_HEAVY=1``.
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


@pytest.mark.skipif(os.environ.get("AGENT_STORES_HEAVY") != "1", reason="the SFTP run: set AGENT_STORES_HEAVY=1")
class TestSftpOutages(OutageConformance):
    capabilities = OutageCapabilities(history=True, files=True, sessions=True)
    unavailable_within = 3.0
    divergences = {
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
