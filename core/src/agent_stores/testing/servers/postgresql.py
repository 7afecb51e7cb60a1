"""Real PostgreSQL servers for tests: Debian's server binaries started in a temporary directory.

:func:`postgresql_server` is a context manager for a fixture; it yields a
:class:`~agent_stores.testing.servers.Server` through :func:`provide_server`, in the order URL
from the environment → testcontainers → local binary → skip (or fail when
``AGENT_STORES_REQUIRE`` names ``postgresql``)::

    @pytest.fixture(scope="session")
    def postgresql_url():
        with postgresql_server() as server:
            yield server.url

==============  ================================  ==================================  =========================
store name      URL variable                      image variable (default)            local binary
==============  ================================  ==================================  =========================
``postgresql``  ``AGENT_STORES_POSTGRESQL_URL``   ``AGENT_STORES_POSTGRESQL_IMAGE``   ``initdb`` + ``postgres``
                                                  (``postgres:16``)                   (``pg_config --bindir``, else
                                                                                      ``/usr/lib/postgresql/*/bin``)
==============  ================================  ==================================  =========================

A local server is a new cluster made by ``initdb`` in a temporary directory, owned by an
unprivileged user (the ``postgres`` OS user when the tests run as root: PostgreSQL refuses to
run as root), trusting its role ``agent_stores`` on loopback and asking every other role for a
password (SCRAM), listening on 127.0.0.1 on a free port with its unix socket in that directory,
and stopped and removed on exit. Its default collation is ICU ``en-US``, not C, so a store
that compares keys under the database's collation instead of ``COLLATE "C"`` fails its
ordering clauses. The machine's own server (5432) is never used.
"""

from __future__ import annotations

import contextlib
import glob
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Generator, Sequence
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

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
    "DEFAULT_POSTGRESQL_IMAGE",
    "POSTGRESQL_IMAGE_ENV",
    "POSTGRESQL_URL_ENV",
    "LocalPostgreSQL",
    "local_postgresql",
    "pgbouncer",
    "postgresql_binaries",
    "postgresql_container",
    "postgresql_server",
]

POSTGRESQL_URL_ENV = "AGENT_STORES_POSTGRESQL_URL"
POSTGRESQL_IMAGE_ENV = "AGENT_STORES_POSTGRESQL_IMAGE"
DEFAULT_POSTGRESQL_IMAGE = "postgres:16"

#: The role and database a local server is made with (a superuser, trusted on loopback only).
USER = "agent_stores"
DATABASE = "agent_stores"

# A test server keeps nothing worth an fsync: a crash of the machine loses the temp dir anyway.
# (A killed server process loses nothing committed: the WAL is written, only not flushed.)
_SETTINGS = ("fsync=off", "full_page_writes=off", "max_connections=200", "shared_buffers=32MB")


_HBA = f"""local all all trust
host all {USER} 127.0.0.1/32 trust
host all {USER} ::1/128 trust
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
"""


def postgresql_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``postgres``: ``pg_config --bindir``, else the newest Debian one."""
    candidates: list[str] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, timeout=10).stdout
            candidates.append(out.strip())
    candidates.extend(
        sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(Path(p).parent.name or 0), reverse=True)
    )
    for candidate in candidates:
        folder = Path(candidate)
        if candidate and all(os.access(folder / name, os.X_OK) for name in ("initdb", "postgres", "pg_isready")):
            return folder
    return None


def _version(postgres: Path) -> str:
    try:
        out = subprocess.run([str(postgres), "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "postgres"
    # "postgres (PostgreSQL) 15.20 (Debian 15.20-0+deb12u1)" -> "PostgreSQL 15.20"
    words = out.split()
    return f"PostgreSQL {words[2]}" if len(words) >= 3 else out.strip() or "postgres"


class LocalPostgreSQL:
    """One PostgreSQL cluster in ``directory``, run by an unprivileged user on 127.0.0.1; restartable on its port.

    Attributes:
        bindir: The folder of the server binaries.
        directory: The cluster's private folder (``data/``, the unix socket, the log).
        port: Its TCP port (kept across :meth:`restart`).
    """

    def __init__(
        self,
        bindir: Path,
        directory: Path,
        *,
        port: int | None = None,
        settings: Sequence[str] = (),
        hba: str | None = None,
    ) -> None:
        self.bindir = bindir
        self.directory = directory
        self.port = port or free_port()
        #: Extra ``name=value`` server settings (``ssl=on``, ``ssl_cert_file=...``).
        self.settings = list(settings)
        #: The ``pg_hba.conf`` to write instead of the default (trust our role, SCRAM for others).
        self.hba = hba
        self.process: subprocess.Popen[bytes] | None = None
        # PostgreSQL refuses to run as root: run it as the postgres OS user then.
        self._user = "postgres" if os.geteuid() == 0 else None

    @property
    def data(self) -> Path:
        """The data directory."""
        return self.directory / "data"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            list(args), capture_output=True, text=True, timeout=120, user=self._user, stdin=subprocess.DEVNULL
        )

    def init(self) -> None:
        """Make the cluster with ``initdb`` (role and database ``agent_stores``, ICU ``en-US`` collation).

        Raises:
            ServerUnavailable: ``initdb`` failed (its output says why).
        """
        if self._user is not None:
            shutil.chown(self.directory, self._user, self._user)
        base = [str(self.bindir / "initdb"), "-D", str(self.data), "-U", USER, "--auth=trust", "--encoding=UTF8"]
        made = self._run(*base, "--locale=C.UTF-8", "--locale-provider=icu", "--icu-locale=en-US")
        if made.returncode != 0:  # a server built without ICU: the libc default collation
            shutil.rmtree(self.data, ignore_errors=True)
            made = self._run(*base)
        if made.returncode != 0:
            raise ServerUnavailable(f"initdb failed: {(made.stdout + made.stderr)[-400:]}")
        # The fixture's own role is trusted on loopback; every other role must give a password
        # (SCRAM), so tests can see the server refuse credentials.
        (self.data / "pg_hba.conf").write_text(self.hba or _HBA)

    def start(self) -> None:
        """Start the server and wait until it accepts connections.

        Raises:
            ServerUnavailable: It exited or was not ready within 30 s.
        """
        settings = [f"-c{setting}" for setting in (*_SETTINGS, *self.settings)]
        args = [
            str(self.bindir / "postgres"),
            "-D",
            str(self.data),
            "-p",
            str(self.port),
            "-h",
            "127.0.0.1",
            "-k",
            str(self.directory),
            *settings,
        ]
        log = (self.directory / "server.log").open("ab")
        self.process = subprocess.Popen(
            args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, user=self._user
        )
        log.close()
        deadline = time.monotonic() + 30
        while True:
            if self.process.poll() is not None:
                tail = (self.directory / "server.log").read_text(errors="replace")[-400:]
                self.process = None
                raise ServerUnavailable(f"postgres exited before it was ready: {tail}")
            ready = subprocess.run(
                [str(self.bindir / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port), "-U", USER],
                timeout=10,
                check=False,
            )
            if ready.returncode == 0:
                break
            if time.monotonic() > deadline:
                self.stop()
                raise ServerUnavailable(f"postgres on 127.0.0.1:{self.port} was not ready within 30 s")
            time.sleep(0.05)
        created = self._run(
            str(self.bindir / "psql"),
            "-h",
            str(self.directory),
            "-p",
            str(self.port),
            "-U",
            USER,
            "-d",
            "postgres",
            "-qAtc",
            f"SELECT 1 FROM pg_database WHERE datname = '{DATABASE}'",
        )
        if created.stdout.strip() != "1":
            made = self._run(
                str(self.bindir / "createdb"), "-h", str(self.directory), "-p", str(self.port), "-U", USER, DATABASE
            )
            if made.returncode != 0:
                self.stop()
                raise ServerUnavailable(f"createdb failed: {(made.stdout + made.stderr)[-400:]}")

    def stop(self) -> None:
        """Stop the server (SIGTERM: a smart shutdown, then SIGKILL after 10 s)."""
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.send_signal(2)  # SIGINT: fast shutdown (SIGTERM waits for clients to leave)
        stop_process(process)

    def restart(self) -> None:
        """Stop and start again on the same port; the data is kept."""
        self.stop()
        self.start()

    def give(self, path: Path) -> None:
        """Hand ``path`` (a file the server must read, such as its TLS key) to the server's user, mode 0600."""
        path.chmod(0o600)
        if self._user is not None:
            shutil.chown(path, self._user, self._user)

    @property
    def url(self) -> str:
        """``postgresql://agent_stores@127.0.0.1:<port>/agent_stores``."""
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{DATABASE}"


@contextlib.contextmanager
def local_postgresql() -> Generator[Server]:
    """A new local cluster (Debian's ``postgresql`` package) on a free loopback port, removed on exit.

    Raises:
        ServerUnavailable: No server binaries, or the cluster did not start.
    """
    bindir = postgresql_binaries()
    if bindir is None:
        raise ServerUnavailable("no PostgreSQL server binaries (apt-get install postgresql)")
    with tempfile.TemporaryDirectory(prefix="agent-stores-postgresql-") as directory:
        server = LocalPostgreSQL(bindir, Path(directory))
        server.init()
        server.start()
        try:
            description = f"{_version(bindir / 'postgres')} on 127.0.0.1:{server.port}"
            yield Server("postgresql", server.url, VIA_LOCAL, description)
        finally:
            server.stop()


@contextlib.contextmanager
def postgresql_container() -> Generator[Server]:
    """PostgreSQL in a container: image ``$AGENT_STORES_POSTGRESQL_IMAGE`` (default ``postgres:16``).

    Raises:
        ServerUnavailable: No engine answers or the container did not become ready.
    """
    image = container_image(POSTGRESQL_IMAGE_ENV, DEFAULT_POSTGRESQL_IMAGE)
    environment = {"POSTGRES_USER": USER, "POSTGRES_DB": DATABASE, "POSTGRES_HOST_AUTH_METHOD": "trust"}
    bindir = postgresql_binaries()

    def ready(host: str, port: int) -> bool:
        if bindir is None:
            return True
        probe = [str(bindir / "pg_isready"), "-q", "-h", host, "-p", str(port), "-U", USER, "-d", DATABASE]
        return subprocess.run(probe, timeout=10, check=False).returncode == 0

    with run_container(image, 5432, environment=environment, ready=ready) as (host, port):
        url = f"postgresql://{USER}@{host}:{port}/{DATABASE}"
        yield Server("postgresql", url, VIA_CONTAINER, f"{image} container on {host}:{port}")


def postgresql_server(*, container: bool | None = None) -> contextlib.AbstractContextManager[Server]:
    """PostgreSQL: ``$AGENT_STORES_POSTGRESQL_URL``, else a container, else a local cluster, else skip.

    The container path is taken only when ``$AGENT_STORES_POSTGRESQL_IMAGE`` names an image
    (``container=None``, the default) or ``container=True``: Debian's binaries start faster and
    need no image, so they are the usual path.
    """
    if container is None:
        container = bool(os.environ.get(POSTGRESQL_IMAGE_ENV, "").strip())
    return provide_server(
        "postgresql",
        env_var=POSTGRESQL_URL_ENV,
        container=postgresql_container if container else None,
        local=local_postgresql,
    )


_PGBOUNCER_INI = """[databases]
* = host={host} port={port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {listen}
unix_socket_dir = {directory}
auth_type = trust
auth_file = {directory}/userlist.txt
pool_mode = transaction
max_client_conn = 500
default_pool_size = 20
server_reset_query =
logfile = {directory}/pgbouncer.log
pidfile = {directory}/pgbouncer.pid
"""


@contextlib.contextmanager
def pgbouncer(server: Server) -> Generator[Server]:
    """Debian's PgBouncer in transaction mode in front of ``server``, on a free loopback port.

    Every database of ``server`` is reached by its own name through the pooler, as the role
    ``server``'s URL names (trusted: the pooler listens on loopback only). A client there gets
    a server connection per transaction, so a session's state or a named prepared statement
    does not survive from one transaction to the next.

    Raises:
        ServerUnavailable: No ``pgbouncer`` binary, or it did not listen within 20 s.
    """
    binary = shutil.which("pgbouncer") or ("/usr/sbin/pgbouncer" if os.access("/usr/sbin/pgbouncer", os.X_OK) else None)
    if binary is None:
        raise ServerUnavailable("no pgbouncer binary (apt-get install pgbouncer)")
    parts = urlsplit(server.url)
    user = parts.username or USER
    user_id = "postgres" if os.geteuid() == 0 else None
    with tempfile.TemporaryDirectory(prefix="agent-stores-pgbouncer-") as directory:
        folder = Path(directory)
        listen = free_port()
        ini = _PGBOUNCER_INI.format(
            host=parts.hostname or "127.0.0.1", port=parts.port or 5432, listen=listen, directory=folder
        )
        (folder / "pgbouncer.ini").write_text(ini)
        (folder / "userlist.txt").write_text(f'"{user}" ""\n')
        if user_id is not None:
            for path in (folder, folder / "pgbouncer.ini", folder / "userlist.txt"):
                shutil.chown(path, user_id, user_id)
        process = subprocess.Popen(
            [binary, str(folder / "pgbouncer.ini")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            user=user_id,
        )
        try:
            wait_for_port("127.0.0.1", listen, alive=lambda: process.poll() is None)
            netloc = parts.netloc.rpartition("@")[0] + f"@127.0.0.1:{listen}"
            url = urlunsplit(parts._replace(netloc=netloc))
            version = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10).stdout
            description = f"{(version.splitlines() or ['PgBouncer'])[0]} (transaction mode) on 127.0.0.1:{listen}"
            yield Server("pgbouncer", url, VIA_LOCAL, f"{description} in front of {server.description}")
        finally:
            stop_process(process)
