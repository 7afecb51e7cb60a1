"""Real servers with TLS on, for the encrypted-transport tests: a test CA made at fixture start.

``trustme`` makes the CA and the certificates (the server's for ``localhost`` only, so reaching
it as ``127.0.0.1`` is a hostname mismatch; a client certificate for mutual TLS). Redis serves
TLS itself (``--tls-port``), moto's S3 server takes the certificate (``--ssl-cert``), and the
MongoDB server (the nx-27017 stand-in speaks no TLS) sits behind ``stunnel``, a TLS server that
verifies client certificates like ``mongod --tlsMode requireTLS`` does.
"""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import trustme

from agent_stores.testing.servers import ServerUnavailable, free_port, stop_process, wait_for_port
from agent_stores.testing.servers.redis import cluster_port

__all__ = ["TlsFiles", "make_tls_files", "moto_tls", "redis_cluster_tls", "redis_tls", "stunnel"]


@dataclass(frozen=True)
class TlsFiles:
    """PEM files of a test CA, a server certificate for ``localhost``, and a client certificate."""

    ca: Path
    other_ca: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path
    #: The client certificate and its key in one file (pymongo's ``tlsCertificateKeyFile``).
    client_pem: Path
    #: A server certificate for ``localhost`` and ``127.0.0.1`` (cluster nodes announce addresses).
    node_cert: Path
    node_key: Path


def make_tls_files(folder: Path) -> TlsFiles:
    """Write a CA, a second unrelated CA, server certificates and a client certificate."""
    ca, other = trustme.CA(), trustme.CA()
    server = ca.issue_cert("localhost")
    client = ca.issue_cert("agent-stores-client")
    node = ca.issue_cert("localhost", "127.0.0.1")
    names = ["ca.pem", "other-ca.pem", "server.pem", "server.key", "client.pem", "client.key", "client-both.pem"]
    files = TlsFiles(*(folder / n for n in [*names, "node.pem", "node.key"]))
    ca.cert_pem.write_to_path(str(files.ca))
    other.cert_pem.write_to_path(str(files.other_ca))
    server.private_key_pem.write_to_path(str(files.server_key))
    server.cert_chain_pems[0].write_to_path(str(files.server_cert))
    client.private_key_pem.write_to_path(str(files.client_key))
    client.cert_chain_pems[0].write_to_path(str(files.client_cert))
    client.private_key_and_cert_chain_pem.write_to_path(str(files.client_pem))
    node.private_key_pem.write_to_path(str(files.node_key))
    node.cert_chain_pems[0].write_to_path(str(files.node_cert))
    return files


@contextlib.contextmanager
def _process(args: list[str], port: int, what: str, log: Path) -> Generator[None]:
    with log.open("wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
    try:
        try:
            wait_for_port("127.0.0.1", port, alive=lambda: process.poll() is None)
        except ServerUnavailable as err:
            raise ServerUnavailable(f"{what}: {err}: {log.read_text(errors='replace')[-2000:]}") from err
        yield
    finally:
        stop_process(process)


@contextlib.contextmanager
def redis_tls(files: TlsFiles, folder: Path, *, client_certificates: bool = False) -> Generator[int]:
    """A ``redis-server`` speaking only TLS on a free port; yields the port."""
    binary = shutil.which("redis-server")
    if binary is None:
        raise ServerUnavailable("redis-server is not installed (apt-get install redis-server)")
    port = free_port()
    args = [
        binary, "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
        "--tls-cert-file", str(files.server_cert), "--tls-key-file", str(files.server_key),
        "--tls-ca-cert-file", str(files.ca), "--tls-auth-clients", "yes" if client_certificates else "no",
        # TLS 1.2 when client certificates are required: 1.3 asks for them after the handshake,
        # so a client without one may see a closed connection instead of the server's alert.
        "--tls-protocols", "TLSv1.2" if client_certificates else "TLSv1.2 TLSv1.3",
        "--save", "", "--appendonly", "no", "--dir", str(folder),
    ]  # fmt: skip
    with _process(args, port, "redis-server with TLS", folder / "redis-tls.log"):
        yield port


@contextlib.contextmanager
def moto_tls(files: TlsFiles, folder: Path) -> Generator[int]:
    """moto's S3 server on HTTPS with the test certificate; yields the port."""
    binary = shutil.which("moto_server") or str(Path(sys.executable).with_name("moto_server"))
    if not Path(binary).exists():
        raise ServerUnavailable("moto's server is not installed (pip install 'moto[server]')")
    port = free_port()
    args = [binary, "-H", "127.0.0.1", "-p", str(port), "-c", str(files.server_cert), "-k", str(files.server_key)]
    with _process(args, port, "moto_server with TLS", folder / "moto-tls.log"):
        yield port


@contextlib.contextmanager
def stunnel(files: TlsFiles, folder: Path, backend_port: int, *, client_certificates: bool = False) -> Generator[int]:
    """A TLS server on a free port forwarding to ``127.0.0.1:backend_port``; yields its port."""
    binary = shutil.which("stunnel4") or shutil.which("stunnel")
    if binary is None:
        raise ServerUnavailable("stunnel is not installed (apt-get install stunnel4)")
    port = free_port()
    verify = f"verifyChain = yes\nCAfile = {files.ca}\nsslVersionMax = TLSv1.2\n" if client_certificates else ""
    config = folder / f"stunnel-{port}.conf"
    config.write_text(
        f"foreground = yes\npid =\n[tls]\naccept = 127.0.0.1:{port}\nconnect = 127.0.0.1:{backend_port}\n"
        f"cert = {files.server_cert}\nkey = {files.server_key}\n{verify}"
    )
    with _process([binary, str(config)], port, "stunnel", folder / f"stunnel-{port}.log"):
        yield port


@contextlib.contextmanager
def redis_cluster_tls(files: TlsFiles, folder: Path, primaries: int = 3) -> Generator[list[int]]:
    """A Redis Cluster whose clients and bus speak only TLS (``--tls-cluster yes``); yields the ports."""
    binary, cli = shutil.which("redis-server"), shutil.which("redis-cli")
    if binary is None or cli is None:
        raise ServerUnavailable("a TLS cluster needs redis-server and redis-cli (apt-get install redis-server)")
    ports = [cluster_port() for _ in range(primaries)]
    tls_cli = [cli, "--tls", "--cacert", str(files.ca)]
    with contextlib.ExitStack() as stack:
        for port in ports:
            node = folder / f"node-{port}"
            node.mkdir()
            args = [
                binary, "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1", "--dir", str(node),
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--tls-cluster", "yes",
                "--tls-cert-file", str(files.node_cert), "--tls-key-file", str(files.node_key),
                "--tls-ca-cert-file", str(files.ca), "--tls-auth-clients", "no", "--save", "", "--appendonly", "no",
            ]  # fmt: skip
            stack.enter_context(_process(args, port, "redis-server cluster node with TLS", node / "server.log"))
        addresses = [f"127.0.0.1:{port}" for port in ports]
        created = subprocess.run(
            [*tls_cli, "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        if created.returncode != 0:
            raise ServerUnavailable(f"redis-cli --cluster create failed: {(created.stdout + created.stderr)[-400:]}")
        deadline = time.monotonic() + 30
        while not all(
            "cluster_state:ok"
            in subprocess.run([*tls_cli, "-p", str(port), "CLUSTER", "INFO"], capture_output=True, text=True).stdout
            for port in ports
        ):
            if time.monotonic() > deadline:
                raise ServerUnavailable("the TLS cluster did not reach cluster_state:ok within 30 s")
            time.sleep(0.1)
        yield ports
