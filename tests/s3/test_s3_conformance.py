"""The file and session conformance suites on S3: SeaweedFS (``s3``) and moto's server (``s3-moto``).

Each store a factory opens owns its own boto3 client, as separate processes would; every test
works under a prefix of its own in one bucket per server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agent_stores.s3 import S3AgentFileStore, S3SessionStore
from agent_stores.testing import (
    FileStoreCapabilities,
    FileStoreConformance,
    SessionStoreCapabilities,
    SessionStoreConformance,
    corrupt_object_session,
)
from s3_support import S3Target

# Keys are the exact normalized paths (case sensitive); create_directory stores a "<dir>/"
# marker; exclusive create is If-None-Match: *, decided by the server across processes; a
# path is at most S3's 1,024-byte key limit, so 4,000-character paths are refused.
S3_FILES = FileStoreCapabilities(
    case_sensitive=True,
    empty_directories=True,
    atomic_create_across_instances=True,
    rejects_file_directory_conflicts=False,
    long_names=False,
)


class _S3Files(FileStoreConformance):
    capabilities = S3_FILES
    target_fixture = ""

    @pytest.fixture
    def file_store_factory(self, request: pytest.FixtureRequest, s3_prefix: str) -> Callable[..., S3AgentFileStore]:
        target: S3Target = request.getfixturevalue(self.target_fixture)
        return lambda **options: target.files(s3_prefix, **options)


class _S3Sessions(SessionStoreConformance):
    capabilities = SessionStoreCapabilities(durable=True, corruptible=True)
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


class TestMotoFiles(_S3Files):
    target_fixture = "moto_s3"


class TestSeaweedFSSessions(_S3Sessions):
    target_fixture = "seaweedfs"


class TestMotoSessions(_S3Sessions):
    target_fixture = "moto_s3"
