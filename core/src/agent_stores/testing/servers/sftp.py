"""An SFTP server for tests: OpenSSH's ``sshd`` on a free loopback port, with its own keys and config.

:func:`local_sshd` starts Debian's ``openssh-server`` binary (``/usr/sbin/sshd``) as the
current user, in a temporary directory holding its config, a fresh host key, a fresh
client key and the ``authorized_keys`` for it; password and PAM authentication are off,
and the SFTP subsystem is OpenSSH's ``internal-sftp``. The server is stopped and the
directory removed when the context ends. :func:`sftp_server` is the fixture-friendly path:
``$AGENT_STORES_SFTP_URL`` first, then the local binary, else skip (or fail when
``AGENT_STORES_REQUIRE`` names ``sftp``).

The URL a :class:`~agent_stores.testing.servers.Server` carries is an fsspec store URL,
``fsspec+sftp://user@127.0.0.1:PORT/DATA_DIR?key_filename=...``; tests append their own
subdirectory to the path.
"""

from __future__ import annotations

import contextlib
import getpass
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from . import VIA_LOCAL, Server, ServerUnavailable, free_port, provide_server, stop_process, wait_for_port

__all__ = [
    "ENV_VAR",
    "STORE",
    "PreparedSshd",
    "local_sshd",
    "prepare_sshd",
    "sftp_server",
    "sshd_config",
    "stop_sshd",
    "with_path",
]

STORE = "sftp"
ENV_VAR = "AGENT_STORES_SFTP_URL"

_SSHD_CANDIDATES = ("/usr/sbin/sshd", "/usr/local/sbin/sshd")


def _find_sshd() -> str:
    for candidate in (os.environ.get("AGENT_STORES_SSHD"), *_SSHD_CANDIDATES, shutil.which("sshd")):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise ServerUnavailable("no sshd binary (install Debian's openssh-server, or set $AGENT_STORES_SSHD)")


def _version(sshd: str) -> str:
    # ``sshd -V`` exists from OpenSSH 9.x; older ones print the version in their usage text.
    result = subprocess.run([sshd, "-V"], capture_output=True, text=True, timeout=10, check=False)
    text = (result.stderr or result.stdout).strip().splitlines()
    return text[0] if text else "OpenSSH sshd"


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "agent-stores-test", "-f", str(path)],
        check=True,
        capture_output=True,
        timeout=30,
    )


def _descendants(pid: int) -> list[int]:
    """Return the ids of every live descendant of process ``pid`` (from ``/proc``; empty elsewhere)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = entry.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry.parent.name))
    found: list[int] = []
    pending = [pid]
    while pending:
        for child in children.get(pending.pop(), []):
            found.append(child)
            pending.append(child)
    return found


def with_path(url: str, subpath: str) -> str:
    """Return the store URL ``url`` with ``/subpath`` appended to its path (the query kept)."""
    base, sep, query = url.partition("?")
    return f"{base.rstrip('/')}/{subpath.strip('/')}{sep}{query}"


@contextlib.contextmanager
def local_sshd() -> Generator[Server]:
    """Start ``sshd`` on a free loopback port as the current user; stop it and remove its files on exit.

    Raises:
        ServerUnavailable: No ``sshd`` or ``ssh-keygen`` binary, or it did not start listening.
    """
    with tempfile.TemporaryDirectory(prefix="agent-stores-sshd-") as raw:
        home = Path(raw)
        prepared = prepare_sshd(home)
        sshd, port = prepared.sshd, prepared.port
        log = (home / "sshd.log").open("w")
        process = subprocess.Popen(prepared.command(), stdout=log, stderr=subprocess.STDOUT)
        try:
            try:
                wait_for_port("127.0.0.1", port, timeout=20, alive=lambda: process.poll() is None)
            except ServerUnavailable as err:
                log.flush()
                detail = (home / "sshd.log").read_text().strip()[-500:]
                raise ServerUnavailable(f"{err}: {detail}") from err
            url = (
                f"fsspec+sftp://{quote(prepared.user)}@127.0.0.1:{port}{prepared.data}"
                f"?key_filename={quote(str(prepared.client_key))}"
            )
            yield Server(STORE, url, VIA_LOCAL, f"{_version(sshd)} on 127.0.0.1:{port} ({sshd}, internal-sftp)")
        finally:
            stop_sshd(process)
            log.close()


@contextlib.contextmanager
def sftp_server() -> Generator[Server]:
    """Yield an SFTP server: ``$AGENT_STORES_SFTP_URL``, else a local ``sshd``; skip (or fail) otherwise.

    There is no testcontainers path: the local binary is what Debian ships and starts in
    well under a second.
    """
    with provide_server(STORE, env_var=ENV_VAR, local=local_sshd) as server:
        yield server


def sshd_config(port: int, host_key: Path, pid_file: Path, authorized_keys: Path, user: str) -> str:
    """An ``sshd_config`` for a test server: loopback ``port``, key login of ``user`` only, ``internal-sftp``."""
    return "\n".join(
        [
            f"Port {port}",
            "ListenAddress 127.0.0.1",
            f"HostKey {host_key}",
            f"PidFile {pid_file}",
            f"AuthorizedKeysFile {authorized_keys}",
            f"AllowUsers {user}",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "UsePAM no",
            "StrictModes no",
            "Subsystem sftp internal-sftp",
            "LogLevel ERROR",
            "",
        ]
    )


@dataclass(frozen=True)
class PreparedSshd:
    """An sshd ready to start: its binary, port, config, and the client side (user, key, data folder)."""

    sshd: str
    port: int
    config: Path
    data: Path
    client_key: Path
    user: str

    def command(self) -> list[str]:
        """The command that runs this sshd in the foreground, logging to stderr."""
        return [self.sshd, "-D", "-e", "-f", str(self.config)]


def prepare_sshd(home: Path) -> PreparedSshd:
    """Write host and client keys, ``authorized_keys`` and an ``sshd_config`` (a free loopback port) into ``home``.

    Raises:
        ServerUnavailable: No ``sshd`` or ``ssh-keygen`` binary.
    """
    sshd = _find_sshd()
    if shutil.which("ssh-keygen") is None:
        raise ServerUnavailable("no ssh-keygen binary (install openssh-client)")
    user = getpass.getuser()
    data = home / "data"
    data.mkdir()
    host_key, client_key = home / "host_key", home / "client_key"
    _keygen(host_key)
    _keygen(client_key)
    authorized = home / "authorized_keys"
    authorized.write_text(client_key.with_suffix(".pub").read_text())
    authorized.chmod(0o600)
    port = free_port()
    config = home / "sshd_config"
    config.write_text(sshd_config(port, host_key, home / "sshd.pid", authorized, user))
    if os.geteuid() == 0:
        # Debian's sshd refuses to start without its privilege-separation directory.
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
    return PreparedSshd(sshd, port, config, data, client_key, user)


def signal_sshd(process: subprocess.Popen[Any], signum: int) -> None:
    """Send ``signum`` to an sshd we started and to every connection process it forked.

    Each connection runs in a process of its own session, so they are reached by pid: every
    live descendant of the server.
    """
    for pid in [process.pid, *_descendants(process.pid)]:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def stop_sshd(process: subprocess.Popen[Any], *, grace: float = 10.0) -> None:
    """Stop an sshd we started and its connection processes (SIGTERM, as a service manager does).

    Returns once the listener and every connection process have exited (a connection process
    still running after ``grace`` seconds is killed), so no client connection outlives the call.
    """
    connections = _descendants(process.pid)
    signal_sshd(process, signal.SIGTERM)
    stop_process(process, grace=grace)
    lingering = _wait_exited(connections, grace)
    for pid in lingering:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    _wait_exited(lingering, grace)


def _wait_exited(pids: list[int], timeout: float) -> list[int]:
    """Wait until every process in ``pids`` has exited (a pidfd turns readable); return those still running."""
    deadline = time.monotonic() + timeout
    running: list[int] = []
    for pid in pids:
        try:
            handle = os.pidfd_open(pid)
        except ProcessLookupError:
            continue  # exited already
        try:
            ready, _, _ = select.select([handle], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                running.append(pid)
        finally:
            os.close(handle)
    return running
