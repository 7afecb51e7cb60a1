"""The file and session suites on S3: SeaweedFS (``s3``); moto's server (``s3-moto``) with ``AGENT_STORES_HEAVY=1``.

Each store a factory opens owns its own boto3 client, as separate processes would; every test
works under a prefix of its own in one bucket per server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agent_stores.s3 import S3AgentFileStore, S3Backend, S3SessionStore
from agent_stores.testing import (
    FileStoreConformance,
    SessionStoreConformance,
    corrupt_object_session,
    declared,
)
from s3_support import S3Target, every_store_suite

S3_FILES = declared(S3Backend, "files")


class _S3Files(FileStoreConformance):
    capabilities = S3_FILES
    target_fixture = ""

    @pytest.fixture
    def file_store_factory(self, request: pytest.FixtureRequest, s3_prefix: str) -> Callable[..., S3AgentFileStore]:
        target: S3Target = request.getfixturevalue(self.target_fixture)
        return lambda **options: target.files(s3_prefix, **options)


class _S3Sessions(SessionStoreConformance):
    capabilities = declared(S3Backend, "sessions")
    target_fixture = ""

    @pytest.fixture
    def session_store_factory(self, request: pytest.FixtureRequest, s3_prefix: str) -> Callable[[], S3SessionStore]:
        target: S3Target = request.getfixturevalue(self.target_fixture)
        return lambda: target.sessions(s3_prefix)

    @pytest.fixture
    def corrupt_session(self) -> Any:
        return corrupt_object_session


class TestSeaweedFSFiles(_S3Files):
    target_fixture = "seaweedfs"


@every_store_suite
class TestMotoFiles(_S3Files):
    target_fixture = "moto_s3"


class TestSeaweedFSSessions(_S3Sessions):
    target_fixture = "seaweedfs"


@every_store_suite
class TestMotoSessions(_S3Sessions):
    target_fixture = "moto_s3"
