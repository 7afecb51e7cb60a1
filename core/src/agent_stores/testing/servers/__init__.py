"""Real servers for tests, found or started in one order for every store.

A fixture asks :func:`provide_server` for a store's server, which takes the first path that
works:

1. an explicit URL from the environment (``env_var``), never started or stopped by us;
2. testcontainers, where a Docker engine answers;
3. a local server binary, started on a free loopback port;
4. otherwise the test is skipped with every reason, or fails when ``AGENT_STORES_REQUIRE``
   names the store (a comma-separated list of store names, or ``all``).

Every server a fixture starts listens on loopback, on a free port, in a directory of its own,
and is stopped when the fixture ends; nothing touches a server the fixture did not start.
Each :class:`Server` says which server and which path a run used, and fixtures print it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
from collections.abc import Callable, Generator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import pytest

from agent_stores.core.redaction import redact_url as redact

__all__ = [
    "NO_PULL_ENV",
    "REQUIRE_ENV",
    "Server",
    "ServerUnavailable",
    "announce",
    "announced",
    "container_image",
    "docker_engine",
    "free_port",
    "is_required",
    "provide_server",
    "redact",
    "run_container",
    "stop_process",
    "wait_for_port",
]

REQUIRE_ENV = "AGENT_STORES_REQUIRE"

#: The paths :func:`provide_server` tries, in order.
VIA_URL = "url"
VIA_CONTAINER = "testcontainers"
VIA_LOCAL = "local binary"


class ServerUnavailable(Exception):
    """One path cannot provide the server here (no engine, no binary); the message says why."""


@dataclass(frozen=True)
class Server:
    """A running server a test may use.

    Attributes:
        store: The store name ``AGENT_STORES_REQUIRE`` uses (``redis``, ``s3``, ``mongodb``, ...).
        url: How clients reach it.
        via: The path that provided it: ``url``, ``testcontainers`` or ``local binary``.
        description: Which server it is, e.g. ``redis-server 7.0.15 on 127.0.0.1:40123``.
    """

    store: str
    url: str
    via: str
    description: str

    def __str__(self) -> str:
        return f"{self.store}: {self.description} via {self.via} ({redact(self.url)})"


def is_required(store: str) -> bool:
    """Whether ``AGENT_STORES_REQUIRE`` names ``store`` (or ``all``): then a missing server fails."""
    names = {n.strip().lower() for n in os.environ.get(REQUIRE_ENV, "").split(",") if n.strip()}
    return "all" in names or store.lower() in names


def free_port(host: str = "127.0.0.1") -> int:
    """Return a TCP port that was free on ``host`` a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def stop_process(process: subprocess.Popen[bytes] | None, *, grace: float = 10.0) -> None:
    """Stop a server process we started: SIGTERM, then SIGKILL after ``grace`` seconds; nothing if it has exited."""
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(grace)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)


def wait_for_port(host: str, port: int, *, timeout: float = 20.0, alive: Callable[[], bool] | None = None) -> None:
    """Wait until ``host:port`` accepts a TCP connection.

    Raises:
        ServerUnavailable: Nothing listened within ``timeout`` seconds, or ``alive()`` turned false
            (the process we started exited).
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if alive is not None and not alive():
            raise ServerUnavailable(f"the server for {host}:{port} exited before it listened")
        with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=0.5):
            return
        time.sleep(0.05)
    raise ServerUnavailable(f"nothing listened on {host}:{port} within {timeout:.0f} s")


_announced: list[str] = []


def announce(line: str) -> None:
    """Record one line for the run's summary (the plugin prints them under "agent-stores servers")."""
    if line not in _announced:
        _announced.append(line)


def announced() -> list[str]:
    """Return every line recorded with :func:`announce`, in order."""
    return list(_announced)


ServerPath = Callable[[], AbstractContextManager[Server]]


@contextlib.contextmanager
def provide_server(
    store: str,
    *,
    env_var: str,
    container: ServerPath | None = None,
    local: ServerPath | None = None,
) -> Generator[Server]:
    """Yield the first server that the environment, testcontainers or a local binary provides.

    Args:
        store: The store name (what ``AGENT_STORES_REQUIRE`` lists).
        env_var: Environment variable holding an explicit URL; it always wins.
        container: Starts the server through testcontainers; raises :class:`ServerUnavailable`
            when it cannot here. Its context manager stops the container.
        local: Starts a local binary; same contract.

    Skips the test (or fails it when ``store`` is required) when no path works.
    """
    url = os.environ.get(env_var)
    if url:
        server = Server(store, url, VIA_URL, f"the server at ${env_var}")
        announce(str(server))
        yield server
        return
    reasons: list[str] = []
    for via, start in ((VIA_CONTAINER, container), (VIA_LOCAL, local)):
        if start is None:
            continue
        with contextlib.ExitStack() as stack:
            try:
                server = stack.enter_context(start())
            except ServerUnavailable as err:
                reasons.append(f"{via}: {err}")
                continue
            announce(str(server))
            yield server
            return
    message = f"no {store} server (set ${env_var} to a URL); " + "; ".join(reasons or ["no path configured"])
    if is_required(store):
        announce(f"{store}: MISSING, and {REQUIRE_ENV} requires it — {message}")
        pytest.fail(f"{message} — and {REQUIRE_ENV} requires {store}", pytrace=False)
    announce(f"{store}: skipped — {message}")
    pytest.skip(message)


# ---------------------------------------------------------------------------------------------- containers
#
# The testcontainers path, shared by every store: find a Docker engine fast, name the image
# from the environment (defaulting to the official one), refuse to pull when told to, and
# reach published ports through 127.0.0.1 only.

#: When set (``1``/``true``), nothing contacts an image registry: a missing local image fails the
#: test clearly instead of being pulled, and the testcontainers reaper (an image of its own) is off.
NO_PULL_ENV = "AGENT_STORES_NO_PULL"

_ENGINE_TIMEOUT_S = 3


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in {"1", "true", "yes", "on"}


def container_image(env_var: str, default: str) -> str:
    """Return the image a container fixture runs: ``$env_var`` when set, else the official ``default``.

    CI points the variable at an image built locally (``agent-stores/redis:local``); users with a
    registry run the official image unchanged.
    """
    return os.environ.get(env_var, "").strip() or default


def docker_engine() -> Any:
    """Return a ``docker`` client whose engine answered a ping, configuring testcontainers for it.

    Fast: the ping times out after 3 s. Connections go to ``127.0.0.1`` when the engine is local
    (``TESTCONTAINERS_CONNECTION_MODE=docker_host``, ``TC_HOST=127.0.0.1`` unless set), and the
    reaper is disabled under ``AGENT_STORES_NO_PULL`` (its image cannot be pulled then).

    Raises:
        ServerUnavailable: testcontainers is not installed or no engine answers.
    """
    try:
        import docker
        from testcontainers.core.config import ConnectionMode, testcontainers_config
    except ImportError as err:
        raise ServerUnavailable(f"testcontainers is not installed ({err.name})") from err
    try:
        client = docker.from_env(timeout=_ENGINE_TIMEOUT_S)
        client.ping()  # pyright: ignore[reportUnknownMemberType]
    except Exception as err:  # docker raises DockerException, requests' and OS errors alike
        raise ServerUnavailable(f"no Docker engine answers ({type(err).__name__})") from err
    local = urlsplit(str(client.api.base_url)).scheme in {"http+unix", "unix", "http+docker", ""}
    if local and not os.environ.get("TC_HOST") and not os.environ.get("TESTCONTAINERS_HOST_OVERRIDE"):
        testcontainers_config.tc_host_override = "127.0.0.1"
    if local and not os.environ.get("TESTCONTAINERS_CONNECTION_MODE"):
        testcontainers_config.connection_mode_override = ConnectionMode.docker_host
    if _env_flag(NO_PULL_ENV):
        testcontainers_config.ryuk_disabled = True
    return client


def _ensure_image(client: Any, image: str) -> None:
    """Fail the test when ``image`` is not present locally and pulling is forbidden."""
    if not _env_flag(NO_PULL_ENV):
        return  # testcontainers pulls a missing image
    import docker.errors

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        pytest.fail(
            f"container image {image!r} is not present locally and {NO_PULL_ENV} forbids pulling it; "
            "build it (see .ci/images/build.sh) or point the image variable at a local tag",
            pytrace=False,
        )


@contextlib.contextmanager
def run_container(
    image: str,
    port: int,
    *,
    command: str | list[str] | None = None,
    environment: dict[str, str] | None = None,
    ready: Callable[[str, int], bool] | None = None,
    timeout: float = 30.0,
) -> Generator[tuple[str, int]]:
    """Run ``image`` through testcontainers and yield ``(host, port)`` where its ``port`` is published.

    The port is published on the loopback interface only, on a free port; the container is
    stopped and removed on exit. ``ready(host, port)`` (optional) is polled after the port
    accepts connections until it returns true.

    Raises:
        ServerUnavailable: No engine answers, or the container did not become ready.
    """
    client = docker_engine()
    _ensure_image(client, image)
    from testcontainers.core.container import DockerContainer

    container = DockerContainer(image)
    container.ports[port] = ("127.0.0.1", None)  # type: ignore[assignment]  # loopback only, random port
    if command is not None:
        container.with_command(command)
    for name, value in (environment or {}).items():
        container.with_env(name, value)
    try:
        container.start()
    except Exception as err:
        with contextlib.suppress(Exception):
            container.stop()
        raise ServerUnavailable(f"{image} did not start ({type(err).__name__}: {err})") from err
    try:
        host = container.get_container_host_ip()
        mapped = int(container.get_exposed_port(port))
        wait_for_port(host, mapped, timeout=timeout)
        deadline = time.monotonic() + timeout
        while ready is not None and not ready(host, mapped):
            if time.monotonic() > deadline:
                raise ServerUnavailable(f"{image} on {host}:{mapped} was not ready within {timeout:.0f} s")
            time.sleep(0.05)
        yield host, mapped
    finally:
        with contextlib.suppress(Exception):
            container.stop()
