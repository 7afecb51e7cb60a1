"""The checkpoint and todo suites on S3 through ``open_stores(url)``: SeaweedFS; moto with ``AGENT_STORES_HEAVY=1``.

Every store a factory opens in one clause has its own boto3 client (as separate processes
would), under a URL prefix of the clause's own, so the prefix of the URL is also checked.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_stores.testing import (
    FakeClock,
    ObjectCheckpointStorageConformance,
    ObjectTodoStoreConformance,
    checkpoint_storage_at,
    todo_store_at,
)
from s3_support import S3Target, every_store_suite


class _Checkpoints(ObjectCheckpointStorageConformance):
    target_fixture = ""
    fake_clock = True

    @pytest.fixture
    def checkpoint_storage_factory(self, request: pytest.FixtureRequest, s3_prefix: str, clock: FakeClock) -> Any:
        target: S3Target = request.getfixturevalue(self.target_fixture)
        backend = {"session": target.session()}
        return lambda **options: checkpoint_storage_at(target.url(s3_prefix), backend, clock=clock, **options)


class _Todos(ObjectTodoStoreConformance):
    target_fixture = ""

    @pytest.fixture
    def todo_store_factory(self, request: pytest.FixtureRequest, s3_prefix: str) -> Any:
        target: S3Target = request.getfixturevalue(self.target_fixture)
        backend = {"session": target.session()}
        return lambda **options: todo_store_at(target.url(s3_prefix), backend, **options)


class TestSeaweedFSCheckpoints(_Checkpoints):
    target_fixture = "seaweedfs"


class TestSeaweedFSTodos(_Todos):
    target_fixture = "seaweedfs"


@every_store_suite
class TestMotoCheckpoints(_Checkpoints):
    target_fixture = "moto_s3"


@every_store_suite
class TestMotoTodos(_Todos):
    target_fixture = "moto_s3"
