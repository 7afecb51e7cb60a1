"""The object log's fault clauses on SeaweedFS and moto: interrupted erasure, lost answers, checkpoints, busy logs."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agent_stores.s3 import S3ObjectDriver
from agent_stores.testing.objectlog_faults import ObjectLogFaults
from s3_support import S3Target


class TestS3ObjectLogFaults(ObjectLogFaults):
    @pytest.fixture
    def objects_factory(self, s3: S3Target) -> Callable[[], S3ObjectDriver]:
        return s3.objects
