"""The driver conformance suites on S3: ``S3ObjectDriver`` and the core's ``ObjectLogDriver`` over it.

Both servers (SeaweedFS and moto); every driver a factory opens owns a boto3 client of its own,
as separate processes would, and works in one bucket per server under the suite's unique keys.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable

import pytest

from agent_stores.core import ObjectLogDriver
from agent_stores.s3 import S3Backend, S3ObjectDriver
from agent_stores.testing import (
    OBJECT_LOG_DIVERGENCES,
    FakeClock,
    LogDriverConformance,
    ObjectDriverConformance,
    declared,
)
from s3_support import S3Target


class _S3Objects(ObjectDriverConformance):
    capabilities = declared(S3Backend, "object_driver")
    target_fixture = ""

    @pytest.fixture
    def object_driver_factory(self, request: pytest.FixtureRequest) -> Callable[[], S3ObjectDriver]:
        target: S3Target = request.getfixturevalue(self.target_fixture)
        return target.objects


_SEAWEEDFS_TREE = (
    "SeaweedFS stores objects in a file-system tree: a key 'a' and keys under 'a/' cannot both be "
    "objects (ExistingObjectIsFile), 'a//b' would become 'a/b' (refused: path_keys), and a flat "
    "listing reports the directories it walks"
)


class TestSeaweedFSObjectDriver(_S3Objects):
    target_fixture = "seaweedfs"
    divergences = {
        "test_keys_are_exact": _SEAWEEDFS_TREE,
        "test_list_without_delimiter_returns_every_key_under_the_prefix": _SEAWEEDFS_TREE,
        "test_list_prefix_is_literal": _SEAWEEDFS_TREE,
        "test_paged_listing_equals_the_unpaged_listing": _SEAWEEDFS_TREE,
        "test_list_matches_the_specification": _SEAWEEDFS_TREE,
    }


class TestMotoObjectDriver(_S3Objects):
    target_fixture = "moto_s3"


class _S3Log(LogDriverConformance):
    # Expiry is recorded in the segments and applied by reads; segments are claimed with
    # If-None-Match: *, so appends racing from two clients have one winner.
    capabilities = declared(S3Backend, "log_driver")
    fake_clock = True
    target_fixture = ""

    @pytest.fixture
    def log_driver_factory(self, request: pytest.FixtureRequest, clock: FakeClock) -> Callable[[], ObjectLogDriver]:
        target: S3Target = request.getfixturevalue(self.target_fixture)
        prefix = f"log-{uuid.uuid4().hex[:12]}/"
        return lambda: ObjectLogDriver(target.objects(), prefix=prefix, owns_objects=True, clock=clock)


class TestSeaweedFSObjectLog(_S3Log):
    target_fixture = "seaweedfs"
    divergences = OBJECT_LOG_DIVERGENCES | {
        "test_logs_with_related_keys_are_independent": f"{_SEAWEEDFS_TREE}; log keys ending in '/' nest",
        "test_list_logs_prefix_is_literal": f"{_SEAWEEDFS_TREE}; log keys ending in '/' nest",
    }


class TestMotoObjectLog(_S3Log):
    target_fixture = "moto_s3"
    divergences = OBJECT_LOG_DIVERGENCES | {
        "test_list_logs_after_is_exclusive_and_need_not_be_a_key": (
            f"{OBJECT_LOG_DIVERGENCES['test_list_logs_after_is_exclusive_and_need_not_be_a_key']} On moto the "
            "clause stops before that: moto answers HTTP 500 to a ListObjectsV2 whose StartAfter holds a "
            "control character ('a\\x01'), after botocore's retries."
        ),
    }
