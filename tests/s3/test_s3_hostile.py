"""Hostile input and tenant isolation on S3 (SeaweedFS; moto with AGENT_STORES_HEAVY=1): a key prefix per tenant."""

from __future__ import annotations

import pytest

from agent_stores.core import open_stores
from agent_stores.testing.hostile import HostileInputSuite, TenantStores
from s3_support import S3Target


class TestS3Hostile(HostileInputSuite):
    default_examples = 20  # each example is about 20 requests; AGENT_STORES_HEAVY=1 runs 5,000

    @pytest.fixture
    def tenant_stores(self, s3_stores: S3Target, s3_prefix: str) -> TenantStores:
        return lambda tenant: (open_stores(s3_stores.url(f"{s3_prefix}/{tenant}"), session=s3_stores.session()), {})
