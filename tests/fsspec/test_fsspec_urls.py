"""fsspec URLs: no password in what ``agent-stores check`` shows, strict booleans, percent-encoded credentials."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from agent_stores.core.sealing import Keyring
from agent_stores.fsspec import parse_url
from agent_stores.testing.servers import Server
from agent_stores.testing.servers.sftp import sftp_server
from agent_stores.testing.urls import SECRET, VALUE, StoreURLCapabilities, StoreURLConformance


@pytest.fixture(scope="module")
def sftp() -> Iterator[Server]:
    with sftp_server() as server:
        yield server


class TestSftpURLs(StoreURLConformance):
    """OpenSSH's sshd (public keys only, so it refuses any password), a closed port; SSH has no TLS."""

    capabilities = StoreURLCapabilities(unreachable=True, refused=True, malformed=True, boolean_options=True)
    time_limit = 120.0

    @pytest.fixture
    def store_urls(self, sftp: Server) -> Mapping[str, Sequence[str]]:
        parts = urlsplit(sftp.url)
        user, port = parts.username, parts.port
        no_keys = "timeout=5&look_for_keys=false&allow_agent=false"
        return {
            "unreachable": [
                f"fsspec+sftp://{user}:{SECRET}@127.0.0.1:1{parts.path}?timeout=2",
                f"fsspec+sftp://{user}@127.0.0.1:1{parts.path}?timeout=2&connection_string="
                f"DefaultEndpointsProtocol=https;AccountName=agent;AccountKey={SECRET}",
            ],
            "refused": [f"fsspec+sftp://{user}:{SECRET}@127.0.0.1:{port}{parts.path}?{no_keys}"],
            "malformed": [
                f"fsspec+sftp://{user}:{SECRET}@127.0.0.1:port{parts.path}",
                f"fsspec+sftp://{user}:{SECRET}@127.0.0.1:{port}{parts.path}?look_for_keys=maybe",
                f"fsspec+sftp://{user}:{SECRET}@127.0.0.1:{port}{parts.path}#fragment",
            ],
        }

    @pytest.fixture
    def boolean_url_options(self, tmp_path: Path) -> Mapping[str, Sequence[str]]:
        keyring = tmp_path / "keyring.json"
        Keyring.create(keyring)
        return {
            "plaintext_reads": [f"file://{tmp_path}/sealed?keyring={keyring}&plaintext_reads={VALUE}"],
            "adopt_plaintext": [f"file://{tmp_path}/sealed?keyring={keyring}&adopt_plaintext={VALUE}"],
            "look_for_keys": [f"fsspec+sftp://agent@127.0.0.1:1/data?look_for_keys={VALUE}"],
            "auto_mkdir": [f"file://{tmp_path}?auto_mkdir={VALUE}"],
            "fair_claims": [f"file://{tmp_path}?fair_claims={VALUE}", f"fsspec+memory://root?fair_claims={VALUE}"],
            "anon": [f"fsspec+s3://bucket/root?anon={VALUE}"],
            "use_ssl": [f"fsspec+s3://bucket/root?endpoint_url=https://s3.example&use_ssl={VALUE}"],
        }


@pytest.mark.parametrize(
    ("query", "options"),
    [
        (
            "look_for_keys=False&allow_agent=OFF&compress=yes",
            {"look_for_keys": False, "allow_agent": False, "compress": True},
        ),
        ("timeout=2&port=2222", {"timeout": 2, "port": 2222}),  # other options: JSON literals, as before
    ],
)
def test_the_filesystems_boolean_options_are_read_strictly(query: str, options: dict[str, object]) -> None:
    spec = parse_url(f"fsspec+sftp://agent@h/data?{query}")
    assert {k: spec.options[k] for k in options} == options


def test_a_boolean_keyword_given_as_text_is_read_strictly_too() -> None:
    assert parse_url("fsspec+sftp://agent@h/data", look_for_keys="no").options["look_for_keys"] is False
    with pytest.raises(ValueError, match="option look_for_keys takes"):
        parse_url("fsspec+sftp://agent@h/data", look_for_keys="required")


def test_percent_encoded_credentials_reach_paramiko_decoded() -> None:
    spec = parse_url("fsspec+sftp://a%40b:Pw%23%3F%2F%25x@h/data")
    assert (spec.options["username"], spec.options["password"]) == ("a@b", "Pw#?/%x")


@pytest.mark.parametrize("password", ["Pw#Leak", "Pw?Leak", "Pw/Leak", "Pw%zzLeak"])
def test_a_password_holding_an_unescaped_delimiter_is_refused_without_showing_it(password: str) -> None:
    with pytest.raises(ValueError, match="malformed fsspec store URL") as caught:
        parse_url(f"fsspec+sftp://agent:{password}@h/data")
    assert "Leak" not in str(caught.value)


def test_an_at_in_a_path_is_written_percent_encoded_where_the_url_names_a_host(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="%40"):
        parse_url("fsspec+sftp://agent@h/data@2024")
    assert parse_url(f"file://{tmp_path}/a@b").root.endswith("/a@b")  # no host: the path is the path
