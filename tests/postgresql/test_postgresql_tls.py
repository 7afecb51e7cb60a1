"""PostgreSQL over TLS: ``sslmode=verify-full`` against a test CA, the host name checked, a client certificate.

A server of its own (Debian's binaries) with ``ssl=on``, a certificate for ``localhost`` from a
``trustme`` CA, and a ``pg_hba.conf`` that accepts only TLS connections: the fixture's role
trusted, the role ``agent-stores-client`` only with a client certificate of that name (``cert``).
"""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import trustme
from agent_framework import Message

from agent_stores.core import StoreError, open_stores
from agent_stores.testing.servers import ServerUnavailable, announce, is_required
from agent_stores.testing.servers.postgresql import LocalPostgreSQL, postgresql_binaries

pytestmark = pytest.mark.asyncio

CLIENT = "agent-stores-client"
HBA = f"""local all all trust
hostssl all agent_stores 127.0.0.1/32 trust
hostssl all agent_stores ::1/128 trust
hostssl all {CLIENT} 127.0.0.1/32 cert
hostssl all {CLIENT} ::1/128 cert
"""


@dataclass(frozen=True)
class TlsServer:
    port: int
    folder: Path

    def url(self, host: str = "localhost", user: str = "agent_stores", **query: str) -> str:
        options = "&".join(f"{k}={v}" for k, v in query.items())
        return f"postgresql://{user}@{host}:{self.port}/agent_stores?connect_timeout=5&{options}"


@pytest.fixture(scope="module")
def tls_server() -> Iterator[TlsServer]:
    bindir = postgresql_binaries()
    if bindir is None:
        if is_required("postgresql"):
            pytest.fail("no PostgreSQL server binaries, and AGENT_STORES_REQUIRE requires postgresql")
        pytest.skip("no PostgreSQL server binaries (apt-get install postgresql)")
    with tempfile.TemporaryDirectory(prefix="agent-stores-postgresql-tls-") as directory:
        folder = Path(directory)
        ca, other = trustme.CA(), trustme.CA()
        server_cert = ca.issue_cert("localhost")
        client_cert = ca.issue_cert(CLIENT, common_name=CLIENT)
        ca.cert_pem.write_to_path(str(folder / "ca.pem"))
        other.cert_pem.write_to_path(str(folder / "other-ca.pem"))
        client_cert.cert_chain_pems[0].write_to_path(str(folder / "client.pem"))
        client_cert.private_key_pem.write_to_path(str(folder / "client.key"))
        (folder / "client.key").chmod(0o600)
        settings = [
            "ssl=on",
            f"ssl_cert_file={folder / 'server.pem'}",
            f"ssl_key_file={folder / 'server.key'}",
            f"ssl_ca_file={folder / 'server-ca.pem'}",
        ]
        server = LocalPostgreSQL(bindir, folder / "server", settings=settings, hba=HBA)
        server.directory.mkdir()
        server_cert.cert_chain_pems[0].write_to_path(str(folder / "server.pem"))
        server_cert.private_key_pem.write_to_path(str(folder / "server.key"))
        ca.cert_pem.write_to_path(str(folder / "server-ca.pem"))
        for name in ("server.pem", "server.key", "server-ca.pem"):
            server.give(folder / name)
        folder.chmod(0o755)
        try:
            server.init()
            server.start()
        except ServerUnavailable as err:
            if is_required("postgresql"):
                pytest.fail(str(err))
            pytest.skip(str(err))
        try:
            server._run(  # pyright: ignore[reportPrivateUsage]
                str(bindir / "psql"),
                "-h",
                str(server.directory),
                "-p",
                str(server.port),
                "-U",
                "agent_stores",
                "-d",
                "agent_stores",
                "-c",
                f'CREATE ROLE "{CLIENT}" LOGIN SUPERUSER',
            )
            announce(f"postgresql-tls: TLS server (trustme CA, cert for localhost) on 127.0.0.1:{server.port}")
            yield TlsServer(server.port, folder)
        finally:
            server.stop()


async def _round_trip(url: str) -> list[str]:
    async with open_stores(url) as stores:
        history = stores.history_provider()
        session_id = uuid.uuid4().hex
        await history.save_messages(session_id, [Message("user", ["over TLS"])])
        return [m.text for m in await history.get_messages(session_id)]


async def test_verify_full_with_the_ca_works(tls_server: TlsServer) -> None:
    ca = tls_server.folder / "ca.pem"
    assert await _round_trip(tls_server.url(sslmode="verify-full", sslrootcert=str(ca))) == ["over TLS"]


async def test_a_server_signed_by_another_ca_is_refused(tls_server: TlsServer) -> None:
    other = tls_server.folder / "other-ca.pem"
    with pytest.raises(StoreError):
        await _round_trip(tls_server.url(sslmode="verify-full", sslrootcert=str(other)))


async def test_the_host_name_is_checked(tls_server: TlsServer) -> None:
    ca = tls_server.folder / "ca.pem"
    with pytest.raises(StoreError):  # the certificate names localhost, not 127.0.0.1
        await _round_trip(tls_server.url(host="127.0.0.1", sslmode="verify-full", sslrootcert=str(ca)))


async def test_a_client_certificate_authenticates_its_role(tls_server: TlsServer) -> None:
    folder = tls_server.folder
    tls = {"sslmode": "verify-full", "sslrootcert": str(folder / "ca.pem")}
    with_cert = tls_server.url(
        user=CLIENT, sslcert=str(folder / "client.pem"), sslkey=str(folder / "client.key"), **tls
    )
    assert await _round_trip(with_cert) == ["over TLS"]
    with pytest.raises(StoreError):  # the same role without its certificate
        await _round_trip(tls_server.url(user=CLIENT, sslcert="/nonexistent", sslkey="/nonexistent", **tls))
