"""S3 URLs carry no credentials: one holding a password is malformed and never shown; booleans are strict."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from agent_stores.testing.urls import SECRET, VALUE, StoreURLCapabilities, StoreURLConformance


class TestS3URLs(StoreURLConformance):
    """An ``s3://`` URL holding a secret is refused before any request, so only the malformed path applies."""

    capabilities = StoreURLCapabilities(malformed=True, boolean_options=True)

    @pytest.fixture
    def store_urls(self) -> Mapping[str, Sequence[str]]:
        return {
            "malformed": [
                f"s3://agent:{SECRET}@bucket/prefix",
                f"s3://bucket/prefix?endpoint_url=http://agent:{SECRET}@127.0.0.1:1",
                f"s3://bucket/prefix?aws_secret_access_key={SECRET}",
            ],
        }

    @pytest.fixture
    def boolean_url_options(self) -> Mapping[str, str]:
        return {
            name: f"s3://bucket/prefix?endpoint_url=http://127.0.0.1:1&{name}={VALUE}"
            for name in ("create_bucket", "conditional_delete", "ordered_listing", "path_keys", "fair_claims")
        }
