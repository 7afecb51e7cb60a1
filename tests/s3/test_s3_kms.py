"""``KMSKeyProvider`` against moto's KMS: the encryption clause set with AWS KMS as the key provider.

The sealed stores live in a SQLite file; the data keys are wrapped by KMS keys on moto's server.
A second moto server is another AWS account: its provider holds none of the first one's keys.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from typer.testing import CliRunner

from agent_stores.cli import app
from agent_stores.core import Stores, StoreUnavailableError, open_stores
from agent_stores.core.sealing import KEYRING_ENV, KMS_KEY_ENV, KeyProvider, SealedStoreError, SealedStores
from agent_stores.s3 import KMSKeyProvider
from agent_stores.testing import SealingCapabilities, SealingConformance
from agent_stores.testing.servers import free_port
from agent_stores.testing.servers.s3 import S3Endpoint, moto_local, s3_endpoint


@pytest.fixture(scope="module")
def kms_accounts() -> Iterator[tuple[S3Endpoint, S3Endpoint]]:
    """Two moto servers: two accounts whose KMS keys know nothing of each other."""
    with moto_local() as first, moto_local() as second:
        yield s3_endpoint(first), s3_endpoint(second)


def kms_client(endpoint: S3Endpoint) -> Any:
    return boto3.Session(**endpoint.client_kwargs()).client("kms", endpoint_url=endpoint.endpoint_url)  # pyright: ignore[reportUnknownMemberType]


def kms_provider(endpoint: S3Endpoint, key_id: str | None = None) -> KMSKeyProvider:
    client = kms_client(endpoint)
    key_id = key_id or client.create_key(Description="agent-stores test")["KeyMetadata"]["KeyId"]
    return KMSKeyProvider(key_id, client=client)


class TestSealingWithKMS(SealingConformance):
    capabilities = SealingCapabilities()

    @pytest.fixture
    def key_provider(self, kms_accounts: tuple[S3Endpoint, S3Endpoint]) -> KeyProvider:
        return kms_provider(kms_accounts[0])

    @pytest.fixture
    def other_key_provider(self, kms_accounts: tuple[S3Endpoint, S3Endpoint]) -> KeyProvider:
        return kms_provider(kms_accounts[1])

    @pytest.fixture
    def rotate(self, kms_accounts: tuple[S3Endpoint, S3Endpoint]) -> Callable[[KeyProvider], KeyProvider]:
        """A new KMS key of the same account: Decrypt still opens what the old key wrapped."""
        return lambda provider: kms_provider(kms_accounts[0])

    @pytest.fixture
    def sealed_stores_factory(self, tmp_path: Path) -> Callable[[KeyProvider | bool], Stores]:
        def open_sealed(provider: KeyProvider | bool) -> Stores:
            stores = open_stores(f"sqlite:///{tmp_path / 'agent.db'}", encryption=provider)
            assert isinstance(stores, SealedStores) is (provider is not False)
            return stores

        return open_sealed


@pytest.mark.asyncio
async def test_an_unreachable_kms_is_unavailable_and_nothing_is_written(tmp_path: Path) -> None:
    endpoint = S3Endpoint(f"http://127.0.0.1:{free_port()}", "test", "test")
    client = boto3.Session(**endpoint.client_kwargs()).client(  # pyright: ignore[reportUnknownMemberType]
        "kms", endpoint_url=endpoint.endpoint_url, config=Config(retries={"max_attempts": 1})
    )
    async with open_stores(
        f"sqlite:///{tmp_path / 'agent.db'}", encryption=KMSKeyProvider("k", client=client)
    ) as stores:
        assert isinstance(stores, SealedStores)
        with pytest.raises(StoreUnavailableError):
            await stores.tenant("acme").file_store().write("a.md", "never written")
        assert (await stores.raw_objects.list("", delimiter=None)).keys == []


@pytest.mark.asyncio
async def test_a_kms_key_named_in_the_url_or_the_environment_seals_without_code(
    tmp_path: Path, kms_accounts: tuple[S3Endpoint, S3Endpoint], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``?kms_key_id=`` and ``AGENT_STORES_KMS_KEY_ID`` seal with KMS; an open without it names the KMS key."""
    endpoint = kms_accounts[0]
    monkeypatch.setenv("AWS_ENDPOINT_URL_KMS", endpoint.endpoint_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", endpoint.access_key or "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", endpoint.secret_key or "test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", endpoint.region)
    monkeypatch.delenv(KEYRING_ENV, raising=False)
    key_arn = kms_client(endpoint).create_key()["KeyMetadata"]["Arn"]
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    async with open_stores(f"{url}?kms_key_id={key_arn}") as stores:
        assert isinstance(stores, SealedStores) and isinstance(stores.encryption.provider, KMSKeyProvider)
        await stores.tenant("acme").file_store().write("a.md", "kms-secret-1")
    assert b"kms-secret-1" not in (tmp_path / "agent.db").read_bytes()
    async with open_stores(url, encryption=False) as plain:
        with pytest.raises(SealedStoreError, match=f"kms_key_id={key_arn}") as refused:
            await plain.tenant("acme").file_store().read("a.md")
        assert refused.value.provider == "KMSKeyProvider"
    monkeypatch.setenv(KMS_KEY_ENV, key_arn)
    async with open_stores(url) as stores:
        assert await stores.tenant("acme").file_store().read("a.md") == "kms-secret-1"
    async with open_stores(url, kms_key_id=key_arn) as stores:
        assert await stores.tenant("acme").file_store().read("a.md") == "kms-secret-1"
    with pytest.raises(ValueError, match="not both"):
        open_stores(f"{url}?kms_key_id={key_arn}&keyring={tmp_path / 'k.json'}")


def test_check_runs_the_encryption_clause_set_with_the_urls_kms_key(
    tmp_path: Path, kms_accounts: tuple[S3Endpoint, S3Endpoint], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``agent-stores check URL?kms_key_id=`` seals its clauses with that KMS key; it makes no second key."""
    endpoint = kms_accounts[0]
    monkeypatch.setenv("AWS_ENDPOINT_URL_KMS", endpoint.endpoint_url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", endpoint.access_key or "test")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", endpoint.secret_key or "test")
    monkeypatch.setenv("AWS_DEFAULT_REGION", endpoint.region)
    monkeypatch.delenv(KEYRING_ENV, raising=False)
    monkeypatch.delenv(KMS_KEY_ENV, raising=False)
    client = kms_client(endpoint)
    key_arn = client.create_key()["KeyMetadata"]["Arn"]
    keys_before = client.list_keys()["Keys"]
    url = f"sqlite:///{tmp_path / 'agent.db'}?kms_key_id={key_arn}"
    result = CliRunner().invoke(app, ["check", url, "--suite", "sealing", "--json"])
    report = json.loads(result.stdout)
    outcomes = {c["clause"]: c["outcome"] for c in report["clauses"]}
    assert result.exit_code == 0, report
    assert outcomes.pop("test_rotation_keeps_old_records_readable") == "not-run"
    clauses = {name for name in dir(SealingConformance) if name.startswith("test_")}
    assert set(outcomes) == clauses - {"test_rotation_keeps_old_records_readable"}, outcomes
    assert set(outcomes.values()) == {"passed"}, outcomes
    assert client.list_keys()["Keys"] == keys_before
