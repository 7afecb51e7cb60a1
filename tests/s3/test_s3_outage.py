"""The outage clauses against the S3 stores, on SeaweedFS and on moto, through a proxy the test cuts.

Each store owns its client, pointed at the proxy's address. On moto the client has 0.5 s
connect and read timeouts and one attempt per request, and the stalled-server clauses run
there (how a client gives up on a silent server is botocore's, the same for every server);
on SeaweedFS the client keeps a 5 s read timeout, which a 17 MiB upload needs on a busy
machine, and only the refused and lost-answer outages run (about 15 s: behind
``AGENT_STORES_HEAVY=1``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest

from agent_stores.s3 import S3AgentFileStore, S3HistoryProvider, S3SessionStore
from agent_stores.testing.outage import OutageCapabilities, OutageConformance, OutageProxy
from s3_support import S3Target


class _Outages(OutageConformance):
    unavailable_within = 10.0
    refusal_options: ClassVar[dict[str, Any]] = {"read_timeout": "30"}
    target_fixture: ClassVar[str] = ""
    timeouts: ClassVar[dict[str, str]] = {}

    @pytest.fixture
    def target(self, request: pytest.FixtureRequest) -> S3Target:
        return request.getfixturevalue(self.target_fixture)

    @pytest.fixture
    def outage(self, target: S3Target) -> Iterator[OutageProxy]:
        assert target.endpoint.endpoint_url is not None
        with OutageProxy.for_url(target.endpoint.endpoint_url) as proxy:
            yield proxy

    @pytest.fixture
    def url(self, target: S3Target, outage: OutageProxy, s3_prefix: str) -> str:
        assert target.endpoint.endpoint_url is not None
        return target.url(s3_prefix, endpoint_url=outage.url(target.endpoint.endpoint_url))

    @pytest.fixture
    def history_factory(self, target: S3Target, url: str) -> Callable[..., S3HistoryProvider]:
        return lambda **options: S3HistoryProvider.from_url(
            url, session=target.session(), **{**self.timeouts, **options}
        )

    @pytest.fixture
    def file_store_factory(self, target: S3Target, url: str) -> Callable[..., Any]:
        return lambda **options: S3AgentFileStore.from_url(
            url, session=target.session(), **{**self.timeouts, **options}
        )

    @pytest.fixture
    def session_store_factory(self, target: S3Target, url: str) -> Callable[[], S3SessionStore]:
        return lambda: S3SessionStore.from_url(url, session=target.session(), **self.timeouts)


class TestMotoOutages(_Outages):
    capabilities = OutageCapabilities(history=True, files=True, sessions=True)
    target_fixture = "moto_s3"
    timeouts: ClassVar[dict[str, str]] = {"connect_timeout": "0.5", "read_timeout": "0.5", "max_attempts": "1"}


@pytest.mark.skipif(os.environ.get("AGENT_STORES_HEAVY") != "1", reason="the SeaweedFS run: set AGENT_STORES_HEAVY=1")
class TestSeaweedFSOutages(_Outages):
    capabilities = OutageCapabilities(history=True, files=True, sessions=True, stall=False)
    target_fixture = "seaweedfs"
    timeouts: ClassVar[dict[str, str]] = {"connect_timeout": "0.5", "read_timeout": "5", "max_attempts": "2"}
