"""MongoDB servers for tests: a URL from the environment, testcontainers ``mongo:7``, or the stand-in.

In :func:`~agent_stores.testing.servers.provide_server` order:

1. ``$AGENT_STORES_MONGODB_URL`` (``mongodb://host:port/database``): always wins, never
   started or stopped here;
2. testcontainers, where a Docker engine answers: the image ``$AGENT_STORES_MONGODB_IMAGE``
   (default ``mongo:7``), never pulled when ``$AGENT_STORES_NO_PULL`` is set;
3. the wire-protocol server ``nx-27017`` (PyPI), started on a free loopback port with a data
   directory of its own. **It is not MongoDB**: a SQLite-backed reimplementation of the wire
   protocol that gets some operations wrong; every run that uses it says so.

Store name for ``AGENT_STORES_REQUIRE``: ``mongodb``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Generator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from . import Server, ServerUnavailable, free_port, provide_server, stop_process, wait_for_port

__all__ = [
    "IMAGE_ENV",
    "NO_PULL_ENV",
    "STAND_IN_NOTE",
    "STORE",
    "URL_ENV",
    "NX27017Process",
    "describe",
    "is_stand_in",
    "mongodb_container",
    "mongodb_server",
    "nx27017_server",
]

STORE = "mongodb"
URL_ENV = "AGENT_STORES_MONGODB_URL"
IMAGE_ENV = "AGENT_STORES_MONGODB_IMAGE"
#: When set, a missing image is never pulled: the container path is skipped at once (CI has no registry).
NO_PULL_ENV = "AGENT_STORES_NO_PULL"
DEFAULT_IMAGE = "mongo:7"
#: The database tests use on a server they did not start (each clause uses fresh ids within it).
TEST_DATABASE = "agent_stores_test"
STAND_IN_NOTE = "wire-protocol stand-in nx-27017, NOT MongoDB"


def _with_database(url: str, database: str) -> str:
    """``url`` with ``database`` as its path when it names none (query options kept)."""
    scheme, _, rest = url.partition("://")
    hosts, slash, tail = rest.partition("/")
    path, question, query = tail.partition("?")
    if slash and path:
        return url
    return f"{scheme}://{hosts}/{database}" + (f"?{query}" if question else "")


@contextlib.contextmanager
def mongodb_container() -> Generator[Server]:
    """Start ``$AGENT_STORES_MONGODB_IMAGE`` (default ``mongo:7``) with testcontainers; stop it afterwards.

    Raises:
        ServerUnavailable: testcontainers is not installed or no Docker engine answers.
    """
    try:
        import docker  # pyright: ignore[reportMissingTypeStubs]
        from testcontainers.community.mongodb import (  # pyright: ignore[reportMissingTypeStubs]
            MongoDbContainer,  # pyright: ignore[reportUnknownVariableType]
        )
    except ImportError as err:
        raise ServerUnavailable(f"testcontainers is not installed ({err})") from err
    try:
        docker.from_env().ping()  # pyright: ignore[reportUnknownMemberType]
    except Exception as err:  # docker raises several unrelated classes when no engine answers
        raise ServerUnavailable(f"no Docker engine answers ({type(err).__name__})") from err
    image = os.environ.get(IMAGE_ENV) or DEFAULT_IMAGE
    if os.environ.get(NO_PULL_ENV):
        try:
            docker.from_env().images.get(image)  # pyright: ignore[reportUnknownMemberType]
        except Exception as err:  # docker.errors.ImageNotFound, or the engine went away
            raise ServerUnavailable(f"{image} is not present locally and ${NO_PULL_ENV} forbids pulling") from err
    container: Any = MongoDbContainer(image)
    try:
        container.start()
    except Exception as err:
        raise ServerUnavailable(f"cannot start {image} ({type(err).__name__}: {err})") from err
    try:
        url = f"{container.get_connection_url()}/{TEST_DATABASE}?authSource=admin"
        yield Server(STORE, url, "testcontainers", f"MongoDB ({image}) in a container")
    finally:
        container.stop()


def _nx27017_binary() -> str:
    found = shutil.which("nx-27017") or str(Path(sys.executable).with_name("nx-27017"))
    if not Path(found).exists():
        raise ServerUnavailable("the nx-27017 stand-in is not installed (pip install nx-27017)")
    return found


def _nx27017_version() -> str:
    try:
        return version("nx-27017")
    except PackageNotFoundError:
        return "?"


class NX27017Process:
    """One nx-27017 stand-in on a loopback port with its own data directory; stoppable and restartable.

    Restarting keeps the port and the data directory, so a client sees the same server come
    back (what the fault tests need).
    """

    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.binary = _nx27017_binary()
        self.data_dir = data_dir
        self.port = port or free_port()
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        """A URL to the stand-in's test database."""
        return f"mongodb://127.0.0.1:{self.port}/{TEST_DATABASE}"

    @property
    def description(self) -> str:
        """What this server is, said plainly."""
        return f"nx-27017 {_nx27017_version()} ({STAND_IN_NOTE}) on 127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start the server and wait until it accepts connections.

        Raises:
            ServerUnavailable: It exited or did not listen within 20 s.
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.data_dir / "server.log", "ab")  # noqa: SIM115 - handed to the child process
        try:
            self._process = subprocess.Popen(
                [
                    self.binary,
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--data-dir",
                    str(self.data_dir / "data"),
                    "--log-file",
                    str(self.data_dir / "nx.log"),
                    "--pid-file",
                    str(self.data_dir / "nx.pid"),
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                cwd=self.data_dir,
            )
        finally:
            log.close()
        process = self._process
        try:
            wait_for_port("127.0.0.1", self.port, alive=lambda: process.poll() is None)
        except ServerUnavailable:
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the server (SIGTERM, then SIGKILL after 5 s); idempotent."""
        process, self._process = self._process, None
        stop_process(process, grace=5)


@contextlib.contextmanager
def nx27017_server() -> Generator[Server]:
    """Start the nx-27017 stand-in (not MongoDB) on a free loopback port; stop it and remove its data afterwards.

    Raises:
        ServerUnavailable: nx-27017 is not installed or did not start.
    """
    root = Path(tempfile.mkdtemp(prefix="agent-stores-nx27017-"))
    try:
        server = NX27017Process(root)
        server.start()
        try:
            yield Server(STORE, server.url, "local binary", server.description)
        finally:
            server.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextlib.contextmanager
def mongodb_server() -> Generator[Server]:
    """Yield a MongoDB server: ``$AGENT_STORES_MONGODB_URL``, else testcontainers, else the stand-in.

    The yielded URL always names a database (``agent_stores_test`` when the given URL names
    none). Skips (or fails, when ``AGENT_STORES_REQUIRE`` names ``mongodb``) when none works.
    """
    with provide_server(STORE, env_var=URL_ENV, container=mongodb_container, local=nx27017_server) as server:
        yield Server(server.store, _with_database(server.url, TEST_DATABASE), server.via, server.description)


def _build_info(url: str) -> dict[str, Any]:
    from pymongo import MongoClient

    client: MongoClient[dict[str, Any]] = MongoClient(url, serverSelectionTimeoutMS=5000)
    try:
        return client.admin.command("buildInfo")
    finally:
        client.close()


def is_stand_in(url: str) -> bool:
    """Whether the server at ``url`` is the nx-27017 stand-in rather than MongoDB (asks its ``buildInfo``)."""
    info = _build_info(url)
    return info.get("process") == "nx_27017" or "gitVersion" not in info


def describe(url: str) -> str:
    """What the server at ``url`` is, said plainly: ``MongoDB 7.0.14`` or the stand-in's note."""
    info = _build_info(url)
    if info.get("process") == "nx_27017" or "gitVersion" not in info:
        return f"{STAND_IN_NOTE} (it reports version {info.get('version', '?')})"
    return f"MongoDB {info.get('version', '?')}"
