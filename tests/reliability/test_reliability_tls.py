"""Encrypted transport for real: Redis, S3 and MongoDB stores over TLS to servers with TLS on.

A test CA is made at fixture start (``tls_support``). For each backend: verification is on by
default, a certificate from an unknown authority or for another host name is a clear
``StoreError`` naming the store and the option to check (not a ``StoreUnavailableError``: it
never heals by retrying), and a client certificate works where the server requires one.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

import pytest
from agent_framework import AgentSession, Message

from agent_stores.core import StoreError, StoreUnavailableError, open_stores
from agent_stores.testing.servers import ServerUnavailable, announce, is_required
from agent_stores.testing.servers.mongodb import mongodb_server
from agent_stores.testing.servers.s3 import moto_local, s3_endpoint
from tls_support import TlsFiles, make_tls_files, moto_tls, redis_cluster_tls, redis_tls, stunnel

pytestmark = pytest.mark.asyncio

T = TypeVar("T")


@contextlib.contextmanager
def tls_server(server: contextlib.AbstractContextManager[T], what: str) -> Iterator[T]:
    """Enter ``server``; skip (or fail, when ``AGENT_STORES_REQUIRE`` names ``tls``) when it cannot start here."""
    try:
        port = server.__enter__()
    except ServerUnavailable as err:
        if is_required("tls"):
            pytest.fail(f"{what}: {err} — and AGENT_STORES_REQUIRE requires tls", pytrace=False)
        pytest.skip(f"{what}: {err}")
    announce(f"tls: {what} on 127.0.0.1:{port} with a test CA")  # a port, or the cluster's ports
    try:
        yield port
    finally:
        server.__exit__(None, None, None)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TlsFiles:
    return make_tls_files(tmp_path_factory.mktemp("tls"))


async def round_trip(url: str, **options: Any) -> None:
    """Save and load a message and a session snapshot through stores opened on ``url``."""
    async with open_stores(url, **options) as stores:
        history = stores.history_provider()
        await history.save_messages("tls-session", [Message("user", ["over TLS"])])
        assert [m.text for m in await history.get_messages("tls-session")][-1] == "over TLS"
        await stores.session_store().set("tls-session", AgentSession(session_id="tls-session"))
        snapshot = await stores.session_store().get("tls-session")
        assert snapshot is not None and snapshot.session_id == "tls-session"


async def refused(url: str, **options: Any) -> StoreError:
    """The error a store on ``url`` raises on first use."""
    with pytest.raises(StoreError) as caught:
        await round_trip(url, **options)
    assert not isinstance(caught.value, StoreUnavailableError), f"a TLS failure reported as unavailable: {caught.value}"
    return caught.value


# -- Redis: TLS served by redis-server itself --------------------------------------------------------


@pytest.fixture
def redis_port(tls: TlsFiles, tmp_path: Path) -> Iterator[int]:
    with tls_server(redis_tls(tls, tmp_path), "redis-server --tls-port") as port:
        yield port


@pytest.fixture
def redis_mutual_port(tls: TlsFiles, tmp_path: Path) -> Iterator[int]:
    with tls_server(redis_tls(tls, tmp_path, client_certificates=True), "redis-server --tls-auth-clients yes") as port:
        yield port


async def test_redis_over_tls_with_the_ca(tls: TlsFiles, redis_port: int) -> None:
    await round_trip(f"rediss://localhost:{redis_port}/0?ssl_ca_certs={tls.ca}")


async def test_redis_verifies_by_default(tls: TlsFiles, redis_port: int) -> None:
    for query in ("", f"?ssl_ca_certs={tls.other_ca}"):
        error = await refused(f"rediss://localhost:{redis_port}/0{query}")
        assert f"Redis at localhost:{redis_port}" in str(error)
        assert "certificate verification failed" in str(error) and "ssl_ca_certs" in str(error)


async def test_redis_checks_the_host_name(tls: TlsFiles, redis_port: int) -> None:
    error = await refused(f"rediss://127.0.0.1:{redis_port}/0?ssl_ca_certs={tls.ca}")
    assert "certificate verification failed" in str(error) and "127.0.0.1" in str(error)


async def test_redis_host_name_checking_takes_only_known_spellings(tls: TlsFiles, redis_port: int) -> None:
    """``ssl_check_hostname=required`` once read as *false*: a certificate for another host was accepted."""
    for spelling in ("required", "enabled", "t", ""):
        with pytest.raises(ValueError, match="option ssl_check_hostname takes"):
            open_stores(f"rediss://127.0.0.1:{redis_port}/0?ssl_ca_certs={tls.ca}&ssl_check_hostname={spelling}")
    for spelling in ("1", "TRUE", "yes", "On"):
        error = await refused(f"rediss://127.0.0.1:{redis_port}/0?ssl_ca_certs={tls.ca}&ssl_check_hostname={spelling}")
        assert "certificate verification failed" in str(error) and "127.0.0.1" in str(error)


async def test_redis_tls_options_on_a_plaintext_url_are_refused(tls: TlsFiles, redis_port: int) -> None:
    """``redis://`` ignores ``ssl_*`` options: it would connect in plaintext and send the password in clear."""
    with pytest.raises(ValueError, match="use rediss://"):
        open_stores(f"redis://:pw@localhost:{redis_port}/0?ssl_ca_certs={tls.ca}&ssl_cert_reqs=required")
    with pytest.raises(ValueError, match="use rediss://"):
        open_stores(f"redis://localhost:{redis_port}/0", ssl_ca_certs=str(tls.ca))
    with pytest.raises(ValueError, match="ssl=False contradicts"):
        open_stores(f"rediss://localhost:{redis_port}/0?ssl_ca_certs={tls.ca}", ssl=False)


async def test_redis_client_certificate(tls: TlsFiles, redis_mutual_port: int) -> None:
    url = f"rediss://localhost:{redis_mutual_port}/0?ssl_ca_certs={tls.ca}"
    error = await refused(url)
    assert "TLS handshake failed" in str(error) and "ssl_certfile" in str(error)
    await round_trip(url, ssl_certfile=str(tls.client_cert), ssl_keyfile=str(tls.client_key))


async def test_redis_cluster_over_tls(tls: TlsFiles, tmp_path: Path) -> None:
    """Clients and the cluster bus on TLS; the client verifies every node it is redirected to."""
    with tls_server(redis_cluster_tls(tls, tmp_path), "a 3-primary Redis Cluster with --tls-cluster yes") as ports:
        nodes = ",".join(f"127.0.0.1:{port}" for port in ports)
        await round_trip(f"rediss+cluster://{nodes}?ssl_ca_certs={tls.ca}")
        error = await refused(f"rediss+cluster://{nodes}")
        assert "certificate verification failed" in str(error) and "ssl_ca_certs" in str(error)


# -- S3: moto's server on HTTPS; stunnel in front of it for client certificates ---------------------


@pytest.fixture(autouse=True)
def _s3_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {
        "AWS_ACCESS_KEY_ID": "tls",
        "AWS_SECRET_ACCESS_KEY": "tls",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("AWS_CA_BUNDLE", raising=False)


@pytest.fixture(scope="module")
def moto_port(tls: TlsFiles, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    with tls_server(moto_tls(tls, tmp_path_factory.mktemp("moto")), "moto_server --ssl-cert") as port:
        yield port


def s3_url(host: str, port: int, scheme: str = "https", **query: str) -> str:
    options = {"create_bucket": "true", "max_attempts": "1", "endpoint_url": f"{scheme}://{host}:{port}", **query}
    return "s3://tls-bucket/p?" + "&".join(f"{k}={quote(v, safe='/:')}" for k, v in options.items())


async def test_s3_over_https_with_the_ca(tls: TlsFiles, moto_port: int) -> None:
    await round_trip(s3_url("localhost", moto_port, ca_bundle=str(tls.ca)))


async def test_s3_verifies_by_default(tls: TlsFiles, moto_port: int) -> None:
    for query in ({}, {"ca_bundle": str(tls.other_ca)}):
        error = await refused(s3_url("localhost", moto_port, **query))
        assert "s3://tls-bucket" in str(error)
        assert "certificate verification failed" in str(error) and "ca_bundle" in str(error)


async def test_s3_checks_the_host_name(tls: TlsFiles, moto_port: int) -> None:
    error = await refused(s3_url("127.0.0.1", moto_port, ca_bundle=str(tls.ca)))
    assert "certificate verification failed" in str(error) and "127.0.0.1" in str(error)


async def test_s3_has_no_option_that_turns_verification_off() -> None:
    for option in ("verify", "verify_ssl", "use_ssl", "ssl_cert_reqs"):
        with pytest.raises(ValueError, match="unknown S3 option"):
            async with open_stores(s3_url("localhost", 443, **{option: "false"})):
                pass


async def test_s3_tls_options_with_a_plain_http_endpoint_are_refused(tls: TlsFiles) -> None:
    """An ``http://`` endpoint ignores ``ca_bundle`` and client certificates: refused, not ignored."""
    for options in ({"ca_bundle": str(tls.ca)}, {"client_cert": str(tls.client_cert)}):
        with pytest.raises(ValueError, match="not https://"):
            open_stores(s3_url("localhost", 443, scheme="http", **options))


async def test_s3_client_certificate(tls: TlsFiles, tmp_path: Path) -> None:
    """An HTTPS endpoint that requires a client certificate (stunnel in front of moto's plain listener)."""
    with moto_local() as moto:
        moto_port = int(s3_endpoint(moto).endpoint_url.rstrip("/").rsplit(":", 1)[1])
        with tls_server(stunnel(tls, tmp_path, moto_port, client_certificates=True), "stunnel before moto") as port:
            url = s3_url("localhost", port, ca_bundle=str(tls.ca))
            error = await refused(url)
            assert "TLS handshake failed" in str(error) and "client_cert" in str(error)
            await round_trip(
                s3_url(
                    "localhost",
                    port,
                    ca_bundle=str(tls.ca),
                    client_cert=str(tls.client_cert),
                    client_key=str(tls.client_key),
                )
            )


# -- MongoDB: the server behind stunnel (the stand-in speaks no TLS) ---------------------------------


@pytest.fixture(scope="module")
def mongodb_port() -> Iterator[int]:
    with mongodb_server() as server:
        hosts = server.url.split("://", 1)[1].split("/", 1)[0].rsplit("@", 1)[-1]
        yield int(hosts.split(",")[0].rsplit(":", 1)[1])


def mongodb_url(host: str, port: int, **query: str) -> str:
    options = {"tls": "true", "serverSelectionTimeoutMS": "800", **query}
    return f"mongodb://{host}:{port}/tls_{os.getpid()}?" + "&".join(f"{k}={v}" for k, v in options.items())


async def test_mongodb_over_tls(tls: TlsFiles, tmp_path: Path, mongodb_port: int) -> None:
    with tls_server(stunnel(tls, tmp_path, mongodb_port), "stunnel in front of the MongoDB server") as port:
        await round_trip(mongodb_url("localhost", port, tlsCAFile=str(tls.ca)))
        for url in (mongodb_url("localhost", port), mongodb_url("localhost", port, tlsCAFile=str(tls.other_ca))):
            error = await refused(url)
            assert "certificate verification failed" in str(error) and "tlsCAFile" in str(error)
        error = await refused(mongodb_url("127.0.0.1", port, tlsCAFile=str(tls.ca)))
        assert "certificate verification failed" in str(error) and "127.0.0.1" in str(error)


async def test_mongodb_tls_yes_turns_tls_on(tls: TlsFiles, tmp_path: Path, mongodb_port: int) -> None:
    """pymongo alone warns about ``tls=yes`` and drops it (plaintext); the store reads it as TLS on."""
    with tls_server(stunnel(tls, tmp_path, mongodb_port), "stunnel in front of the MongoDB server") as port:
        await round_trip(mongodb_url("localhost", port, tls="yes", tlsCAFile=str(tls.ca)))
        error = await refused(
            mongodb_url("127.0.0.1", port, tls="On", tlsAllowInvalidHostnames="no", tlsCAFile=str(tls.ca))
        )
        assert "certificate verification failed" in str(error) and "127.0.0.1" in str(error)
    for spelling in ("required", "enabled", ""):
        with pytest.raises(ValueError, match="option tls takes"):
            open_stores(mongodb_url("localhost", 1, tls=spelling))
    with pytest.raises(ValueError, match=r"TLS options \(tlsCAFile\) with tls=false"):
        open_stores(mongodb_url("localhost", 1, tls="false", tlsCAFile=str(tls.ca)))


async def test_mongodb_client_certificate(tls: TlsFiles, tmp_path: Path, mongodb_port: int) -> None:
    mutual = stunnel(tls, tmp_path, mongodb_port, client_certificates=True)
    with tls_server(mutual, "stunnel requiring client certificates") as port:
        error = await refused(mongodb_url("localhost", port, tlsCAFile=str(tls.ca)))
        assert "TLS handshake failed" in str(error) and "tlsCertificateKeyFile" in str(error)
        await round_trip(
            mongodb_url("localhost", port, tlsCAFile=str(tls.ca), tlsCertificateKeyFile=str(tls.client_pem))
        )
