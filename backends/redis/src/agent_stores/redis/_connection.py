"""``RedisConnection``: the client the Redis stores share, their key layout, and the funnel every command takes.

Every command of the backend passes through :meth:`RedisConnection.run`, which translates
redis-py's exceptions with ``_errors.translate`` (by class, and a server error by its code)
into the ``agent_stores.core`` errors, chained with ``from err``. Retries are the client's: an
owned client is built with ``Retry(ExponentialWithJitterBackoff(...))`` and a finite connect
timeout; a borrowed one keeps the configuration its owner gave it.

Timeouts: an owned client given no ``socket_timeout`` gets none at the socket, and every
command it sends has a deadline instead (:data:`DEFAULT_TIMEOUT`), kept once, by the
:class:`CommandBatcher` every command passes through: it bounds a server that does not answer,
from the moment the command (or the pipeline carrying it) is handed to the client to send until
its reply is read, the client's retries included. The time a command waits in the client behind
other agents' commands is not counted, nor the turns a busy event loop takes to read a reply
that has arrived (see :class:`Deadlines`; one timer serves every command in flight). redis-py's
``socket_timeout`` wraps each send in ``asyncio.wait_for`` (a task of its own and an extra turn
of the event loop on Python 3.11) and each read in a timer, which cost a save or a load more CPU
than the rest of the store's own work. A ``socket_timeout`` you give is redis-py's, per socket
operation, as you asked: a read that waits longer fails, whatever the reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import zlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final, cast
from urllib.parse import parse_qsl, unquote, urlsplit

from agent_stores.core import StoreUnavailableError, redact_url
from agent_stores.core.urls import check_user_part, parse_bool
from redis import exceptions as redis_errors
from redis.asyncio import Redis, RedisCluster
from redis.asyncio.cluster import ClusterNode
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialWithJitterBackoff

from . import _scripts
from ._batching import CommandBatcher
from ._deadlines import Deadlines
from ._errors import translate
from ._tuning import tune_cluster, tune_pool

__all__ = [
    "DEFAULT_KEY_PREFIX",
    "DEFAULT_SHARDS",
    "RedisClient",
    "RedisConnection",
    "RedisURL",
    "parse_redis_url",
]

logger = logging.getLogger("agent_stores.redis")

#: What a store borrows: a ``redis.asyncio`` client for one server or for a cluster.
RedisClient = Redis | RedisCluster

#: Prefix of every key the stores write (inside the hash tag).
DEFAULT_KEY_PREFIX: Final = "agent-stores:"
#: Index shards per kind (logs, objects); see :class:`RedisConnection`.
DEFAULT_SHARDS: Final = 16

#: Seconds an owned client waits to connect (per attempt), and the deadline of each command
#: of an owned client given no ``socket_timeout``: from its sending to its reply, the client's
#: retries included.
DEFAULT_TIMEOUT: Final = 5.0
#: Retries of an owned client after a connection error or timeout (backoff with jitter).
DEFAULT_RETRIES: Final = 3

_SCHEMES: Final = {
    "redis": (False, False),
    "rediss": (True, False),
    "valkey": (False, False),
    "valkeys": (True, False),
    "redis+cluster": (False, True),
    "rediss+cluster": (True, True),
    "valkey+cluster": (False, True),
    "valkeys+cluster": (True, True),
}
# Connection options accepted as URL query parameters, with their types.
_QUERY_OPTIONS: Final[dict[str, type]] = {
    "socket_timeout": float,
    "socket_connect_timeout": float,
    "health_check_interval": float,
    "max_connections": int,
    "client_name": str,
    "ssl_cert_reqs": str,
    "ssl_ca_certs": str,
    "ssl_certfile": str,
    "ssl_keyfile": str,
    "ssl_check_hostname": bool,
    "key_prefix": str,
    "shards": int,
}
#: What ``ssl_cert_reqs`` takes (as redis-py does); ``none`` turns certificate verification off.
_CERT_REQS: Final = ("none", "optional", "required")


@dataclass(frozen=True, slots=True)
class RedisURL:
    """A parsed store URL.

    Attributes:
        nodes: ``(host, port)`` of the server, or the cluster's startup nodes.
        cluster: Whether the URL names a Redis Cluster (``redis+cluster://``).
        tls: Whether connections use TLS (``rediss://``).
        username: ACL user, or ``None``.
        password: Password, or ``None`` (never shown by ``repr`` or in errors).
        db: Database number (single server only).
        options: Client options from the query string.
        key_prefix: Prefix of every key the stores write.
        shards: Index shards per kind.
    """

    nodes: tuple[tuple[str, int], ...]
    cluster: bool = False
    tls: bool = False
    username: str | None = None
    password: str | None = None
    db: int = 0
    options: tuple[tuple[str, Any], ...] = ()
    key_prefix: str = DEFAULT_KEY_PREFIX
    shards: int = DEFAULT_SHARDS

    def __repr__(self) -> str:
        password = "" if self.password is None else ", password='***'"
        return f"RedisURL(nodes={self.nodes!r}, cluster={self.cluster}, tls={self.tls}, db={self.db}{password})"

    @property
    def address(self) -> str:
        """``host:port[,host:port]``: where the server is, with no credentials."""
        return ",".join(f"{host}:{port}" for host, port in self.nodes)


def parse_redis_url(url: str) -> RedisURL:
    """Parse ``redis://``, ``rediss://``, ``valkey://`` and ``redis+cluster://`` URLs.

    Forms: ``redis://[[user]:password@]host[:port][/db][?option=value...]``; ``rediss://`` for
    TLS; ``valkey://`` is ``redis://``; ``redis+cluster://[[user]:password@]host:port[,host:port...]``
    names a cluster by its startup nodes (no db). Query options: ``socket_timeout``,
    ``socket_connect_timeout``, ``health_check_interval``, ``max_connections``,
    ``client_name``, ``ssl_*`` (TLS URLs only), and the stores' ``key_prefix`` and ``shards``.
    ``ssl_check_hostname`` is a strict boolean (``1/true/yes/on``, ``0/false/no/off``);
    ``ssl_cert_reqs`` is ``none``, ``optional`` or ``required``. A user name or password holding
    ``/``, ``?``, ``#`` or ``%`` must be percent-encoded.

    Raises:
        ValueError: The scheme, user part, host list, port, db or an option is malformed, or an
            ``ssl_*`` option is given without TLS (use ``rediss://``). The message never
            quotes the user part.
    """
    if not isinstance(url, str) or "://" not in url:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"not a Redis URL: {redact_url(url)!r}")
    check_user_part(url, what="Redis URL")
    scheme, rest = url.split("://", 1)
    kind = _SCHEMES.get(scheme.lower())
    if kind is None:
        raise ValueError(f"unsupported Redis URL scheme {scheme!r}; expected one of {', '.join(_SCHEMES)}")
    tls, cluster = kind
    parts = urlsplit("redis://" + rest)
    netloc = parts.netloc
    username = password = None
    if "@" in netloc:
        credentials, netloc = netloc.rsplit("@", 1)
        user, has_password, secret = credentials.partition(":")
        username = unquote(user) or None
        password = unquote(secret) if has_password else None
    nodes = tuple(_node(item) for item in netloc.split(",")) if netloc else (("127.0.0.1", 6379),)
    if not cluster and len(nodes) > 1:
        raise ValueError("several hosts need a cluster URL: redis+cluster://host:port,host:port")
    path = parts.path.strip("/")
    db = 0
    if path:
        if cluster:
            raise ValueError("a cluster has no database number; drop the path from the URL")
        if not path.isdigit():
            raise ValueError(f"the URL's path must be a database number, got {path!r}")
        db = int(path)
    options: dict[str, Any] = {}
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        kind_of = _QUERY_OPTIONS.get(name)
        if kind_of is None:
            raise ValueError(f"unknown Redis URL option {name!r}; known: {', '.join(sorted(_QUERY_OPTIONS))}")
        if name.startswith("ssl_"):
            options[name] = tls_option(name, value)
            continue
        try:
            options[name] = kind_of(value)
        except ValueError as err:
            raise ValueError(f"Redis URL option {name}={value!r} is not a valid {kind_of.__name__}") from err
    check_tls_options(tls, options)
    key_prefix = options.pop("key_prefix", DEFAULT_KEY_PREFIX)
    shards = options.pop("shards", DEFAULT_SHARDS)
    return RedisURL(nodes, cluster, tls, username, password, db, tuple(sorted(options.items())), key_prefix, shards)


def _node(text: str) -> tuple[str, int]:
    host, _, port = text.strip().rpartition(":") if text.count(":") == 1 or "]" in text else (text, "", "")
    if not host:
        host, port = text, ""
    host = host.strip("[]")
    if not host:
        raise ValueError(f"missing host in Redis URL node {text!r}")
    if not port:
        return host, 6379
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"invalid port in Redis URL node {text!r}")
    return host, int(port)


def tls_option(name: str, value: Any) -> Any:
    """A TLS option's value as the client takes it: strict booleans, and ``ssl_cert_reqs`` one of three words.

    Raises:
        ValueError: Another spelling (``ssl_check_hostname=required`` never reads as false).
    """
    if name in ("ssl", "ssl_check_hostname") and not isinstance(value, bool):
        return parse_bool(value, option=name)
    if name == "ssl_cert_reqs" and isinstance(value, str):
        if value.lower() not in _CERT_REQS:
            raise ValueError(f"option ssl_cert_reqs takes {', '.join(_CERT_REQS)}; got {value!r}")
        return value.lower()
    return value


def check_tls_options(tls: bool, options: dict[str, Any]) -> None:
    """Refuse ``ssl_*`` options on a connection without TLS, and ``ssl=False`` on a TLS URL.

    A client without TLS ignores its ``ssl_*`` options: ``redis://...?ssl_ca_certs=...`` would
    connect in plaintext and send the password in clear.

    Raises:
        ValueError: Naming the options and the scheme to use.
    """
    ssl = options.get("ssl")
    if tls and ssl is False:
        raise ValueError("ssl=False contradicts a TLS URL (rediss://); use redis:// for a plaintext connection")
    given = sorted(name for name, value in options.items() if name.startswith("ssl_") and value is not None)
    if given and not (tls or ssl):
        raise ValueError(
            f"TLS options ({', '.join(given)}) on a connection without TLS would be ignored: "
            "use rediss:// (rediss+cluster://, valkeys://)"
        )


def default_retry() -> Retry:
    """The retry policy of an owned client: 3 retries after connection errors and timeouts, with jittered backoff.

    The asyncio client's own ``Retry``: given a synchronous ``redis.retry.Retry``, redis-py 7
    retries nothing (its ``call_with_retry`` returns the command's coroutine, which then fails
    outside it) and redis-py 8 converts it with a ``UserWarning``.
    """
    return Retry(
        ExponentialWithJitterBackoff(base=0.05, cap=1.0),
        DEFAULT_RETRIES,
        # The built-in errors too, which redis-py's annotation (its own errors only) leaves out.
        supported_errors=(redis_errors.ConnectionError, redis_errors.TimeoutError, ConnectionError, TimeoutError),  # pyright: ignore[reportArgumentType]
    )


def open_client(parsed: RedisURL, **options: Any) -> RedisClient:
    """Create (without connecting) the client ``parsed`` names; ``options`` override the URL's and the defaults.

    The client has no ``socket_timeout`` unless ``options`` or the URL give one: see
    :func:`operation_timeout` for the deadline that replaces it.

    Raises:
        ValueError: The client does not take one of ``options``, a TLS option is malformed, or
            ``ssl_*`` options come without TLS (see :func:`check_tls_options`).
    """
    options = {name: tls_option(name, value) for name, value in options.items()}
    check_tls_options(parsed.tls, {**dict(parsed.options), **options})
    settings: dict[str, Any] = {
        # None, not redis-py's default (none in redis-py 7, 5 s in redis-py 8): the batcher keeps a
        # deadline of each command instead (see operation_timeout).
        "socket_timeout": None,
        "socket_connect_timeout": DEFAULT_TIMEOUT,
        "retry": default_retry(),
        **dict(parsed.options),
        **options,
    }
    if parsed.username is not None:
        settings.setdefault("username", parsed.username)
    if parsed.password is not None:
        settings.setdefault("password", parsed.password)
    if parsed.tls:
        settings.setdefault("ssl", True)
    try:
        if parsed.cluster:
            nodes = [ClusterNode(host, port) for host, port in parsed.nodes]
            cluster = RedisCluster(startup_nodes=nodes, **settings)
            tune_cluster(cluster)
            return cluster
        host, port = parsed.nodes[0]
        client = Redis(host=host, port=port, db=parsed.db, **settings)
    except TypeError as err:  # an option the client does not take
        raise ValueError(f"invalid Redis client option: {err}") from err
    tune_pool(client.connection_pool)
    return client


def operation_timeout(parsed: RedisURL, options: dict[str, Any]) -> float | None:
    """The deadline of each command of a client :func:`open_client` builds (see the module docstring).

    :data:`DEFAULT_TIMEOUT` when neither ``options`` nor the URL give ``socket_timeout``;
    ``None`` when one does (the client then times its socket operations itself).
    """
    return None if "socket_timeout" in options or "socket_timeout" in dict(parsed.options) else DEFAULT_TIMEOUT


def client_address(client: RedisClient) -> str:
    """``host:port`` (or the cluster's startup nodes) of a client, never with credentials."""
    if isinstance(client, RedisCluster):
        startup: Any = client.nodes_manager.startup_nodes
        nodes = cast(Sequence[ClusterNode], list(startup.values() if isinstance(startup, dict) else startup))  # pyright: ignore[reportUnknownArgumentType]
        return ",".join(node.name for node in nodes) or "the cluster"
    kwargs = cast(dict[str, Any], client.connection_pool.connection_kwargs)  # pyright: ignore[reportUnknownMemberType]
    if kwargs.get("path"):
        return f"unix:{kwargs['path']}"
    return f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"


def telemetry_attributes(client: RedisClient) -> dict[str, str | int]:
    """``server.address``, ``server.port`` and ``db.namespace`` (the database number) of a client, for spans.

    A cluster names its first startup node; a Unix socket its path.
    """
    if isinstance(client, RedisCluster):
        startup: Any = client.nodes_manager.startup_nodes
        nodes = cast(Sequence[ClusterNode], list(startup.values() if isinstance(startup, dict) else startup))  # pyright: ignore[reportUnknownArgumentType]
        return {"server.address": str(nodes[0].host), "server.port": int(nodes[0].port)} if nodes else {}
    kwargs = cast(dict[str, Any], client.connection_pool.connection_kwargs)  # pyright: ignore[reportUnknownMemberType]
    found: dict[str, str | int] = {"db.namespace": str(kwargs.get("db", 0))}
    if kwargs.get("path"):
        return found | {"server.address": str(kwargs["path"])}
    host, port = str(kwargs.get("host", "localhost")), int(kwargs.get("port", 6379))
    return found | {"server.address": host, "server.port": port}


def as_bytes(value: bytes | str) -> bytes:
    """A reply as bytes, whichever ``decode_responses`` the client uses."""
    return value.encode("utf-8") if isinstance(value, str) else value


def as_str(value: bytes | str) -> str:
    """A reply as str, whichever ``decode_responses`` the client uses."""
    return value.decode("utf-8") if isinstance(value, bytes) else value


class Script:
    """A Lua script run by ``EVALSHA``, loaded again when the server's script cache lost it.

    A restart, a failover or ``SCRIPT FLUSH`` empties the cache; on the ``NOSCRIPT`` reply the
    call is repeated as ``EVAL`` with the script's text, which runs it on the node that owns
    the keys and caches it there. (redis-py's ``register_script`` reloads with ``SCRIPT LOAD``
    and repeats the ``EVALSHA``; on a fresh asyncio cluster client that retry still failed with
    ``NOSCRIPT`` in our tests, while ``EVAL`` needs no cache at all.)
    """

    def __init__(self, send: Callable[..., Awaitable[Any]], source: str) -> None:
        self.send = send
        self.source = source
        self.sha = hashlib.sha1(source.encode("utf-8")).hexdigest()  # the server's name for the script

    async def __call__(self, keys: Sequence[str], args: Sequence[str | bytes | int]) -> Any:
        """Run the script on ``keys`` with ``args``; return its reply."""
        try:
            return await self.send("EVALSHA", self.sha, len(keys), *keys, *args)
        except redis_errors.NoScriptError:
            # EVAL runs the script on the node that owns the keys and caches it there.
            return await self.send("EVAL", self.source, len(keys), *keys, *args)


class RedisConnection:
    """One ``redis.asyncio`` client (a server or a cluster) shared by the Redis stores, with their key layout.

    Keys: every key starts with a hash tag ``{<key_prefix><kind><shard>}`` where ``kind`` is
    ``log`` or ``obj`` and ``shard`` is the CRC-32 of the core key modulo ``shards``. All keys
    of one log (its payloads, digests and epoch) share that tag with the shard's index, so
    every script runs on one cluster slot. Each shard keeps a sorted-set index of its keys
    (all scores 0, so ordered by bytes): listing is a ``ZRANGEBYLEX`` per shard and a merge,
    exact, ordered and paged, on a single server and on every primary of a cluster alike,
    with no ``KEYS`` or ``SCAN`` over the keyspace. ``shards`` spreads a store over that many
    cluster slots; every client of one store must use the same ``key_prefix`` and ``shards``.

    Args:
        client: A ``redis.asyncio.Redis`` or ``RedisCluster``, either ``decode_responses``;
            borrowed (never closed) unless ``owned``.
        key_prefix: Prefix of every key (no ``{`` or ``}``); stores with different prefixes
            share nothing.
        shards: Index shards per kind, 1 to 1024.
        owned: Close the client on :meth:`aclose`.
        address: How errors name the server (defaults to the client's host and port).
        timeout: Deadline in seconds of each command, from the moment it is handed to the
            client to send (the client's retries included; not the time it waits behind other
            commands), after which its operation fails with ``StoreUnavailableError``; ``None``
            (the default for a borrowed client): none beyond the client's own timeouts.

    Raises:
        TypeError: ``client`` is not a ``redis.asyncio`` client.
        ValueError: ``key_prefix`` holds a brace, ``shards`` is out of range, or ``timeout``
            is not positive.
    """

    def __init__(
        self,
        client: RedisClient,
        *,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        shards: int = DEFAULT_SHARDS,
        owned: bool = False,
        address: str | None = None,
        timeout: float | None = None,
    ) -> None:
        if not isinstance(client, Redis | RedisCluster):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"expected a redis.asyncio Redis or RedisCluster client, got {type(client).__name__}")
        if not isinstance(key_prefix, str) or "{" in key_prefix or "}" in key_prefix:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"key_prefix must be a string without braces, got {key_prefix!r}")
        if isinstance(shards, bool) or not isinstance(shards, int) or not 1 <= shards <= 1024:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"shards must be an int from 1 to 1024, got {shards!r}")
        self.client = client
        self.key_prefix = key_prefix
        self.shards = shards
        self.owned = owned
        self.address = address or client_address(client)
        self.timeout = timeout
        self.cluster = isinstance(client, RedisCluster)
        self._closed = False
        self._cluster_ready = False
        self._cluster_lock = asyncio.Lock()
        self._batcher = CommandBatcher(client, timeout=timeout, deadlines=Deadlines())
        send = self.send
        self.log_append = Script(send, _scripts.LOG_APPEND)
        self.log_tail = Script(send, _scripts.LOG_TAIL)
        self.log_delete = Script(send, _scripts.LOG_DELETE)
        self.log_delete_at = Script(send, _scripts.LOG_DELETE_AT)
        self.log_list = Script(send, _scripts.LOG_LIST)
        self.log_due = Script(send, _scripts.LOG_DUE)
        self.log_purge = Script(send, _scripts.LOG_PURGE)
        self.object_put = Script(send, _scripts.OBJECT_PUT)
        self.object_put_in_order = Script(send, _scripts.OBJECT_PUT_IN_ORDER)
        self.object_delete = Script(send, _scripts.OBJECT_DELETE)
        self.object_get_many = Script(send, _scripts.OBJECT_GET_MANY)
        self.object_list = Script(send, _scripts.OBJECT_LIST)
        self.object_find = Script(send, _scripts.OBJECT_FIND)
        self.object_match = Script(send, _scripts.OBJECT_MATCH)

    @classmethod
    def from_url(cls, url: str, **options: Any) -> RedisConnection:
        """Create a connection that owns a new client for ``url`` (see :func:`parse_redis_url`).

        ``options`` go to the client (``socket_timeout``, ``retry``, ``decode_responses``,
        ``ssl_ca_certs``, ...) except ``key_prefix`` and ``shards``. Nothing connects until
        first use. Without ``socket_timeout`` each command has a deadline of
        :data:`DEFAULT_TIMEOUT` seconds (see the module's documentation).

        Raises:
            ValueError: The URL or an option is malformed.
        """
        parsed = parse_redis_url(url)
        key_prefix = options.pop("key_prefix", parsed.key_prefix)
        shards = options.pop("shards", parsed.shards)
        client = open_client(parsed, **options)
        timeout = operation_timeout(parsed, options)
        return cls(client, key_prefix=key_prefix, shards=shards, owned=True, address=parsed.address, timeout=timeout)

    # -- keys ---------------------------------------------------------------------------------

    def _tag(self, kind: str, key: str) -> str:
        return f"{{{self.key_prefix}{kind}{zlib.crc32(key.encode('utf-8')) % self.shards}}}"

    def log_keys(self, key: str) -> list[str]:
        """The keys of one log and its shard: payloads, digests, epoch, then the shard's index, expiry and sessions."""
        tag = self._tag("log", key)
        return [f"{tag}m:{key}", f"{tag}d:{key}", f"{tag}v:{key}", f"{tag}index", f"{tag}expiry", f"{tag}sessions"]

    def log_payloads(self, key: str) -> str:
        """The list holding one log's payloads."""
        return f"{self._tag('log', key)}m:{key}"

    def log_shards(self) -> list[list[str]]:
        """Each log shard's index, expiry and sessions keys."""
        tags = [f"{{{self.key_prefix}log{n}}}" for n in range(self.shards)]
        return [[f"{tag}index", f"{tag}expiry", f"{tag}sessions"] for tag in tags]

    def log_epochs(self, shard: Sequence[str], keys: Sequence[str]) -> list[str]:
        """The epoch keys of the logs ``keys`` of one shard (``shard``: its keys, as :meth:`log_shards` gives them)."""
        tag = shard[0].removesuffix("index")
        return [f"{tag}v:{key}" for key in keys]

    def object_keys(self, key: str) -> list[str]:
        """One object's hash and its shard's index."""
        tag = self._tag("obj", key)
        return [f"{tag}o:{key}", f"{tag}index"]

    def object_shards(self) -> list[tuple[str, str]]:
        """Each object shard's index key and its objects' key prefix."""
        tags = [f"{{{self.key_prefix}obj{n}}}" for n in range(self.shards)]
        return [(f"{tag}index", f"{tag}o:") for tag in tags]

    # -- the funnel ---------------------------------------------------------------------------

    def send(self, *args: Any) -> Awaitable[Any]:
        """One command (``args`` as for ``execute_command``), to pass to :meth:`run`.

        Commands issued while others are in flight go together in one pipeline (see
        :class:`CommandBatcher`; on a cluster, one pipeline per primary).
        """
        return self._batcher.execute(*args)

    async def run(self, what: str, call: Any) -> Any:
        """Await one command or script (an awaitable), translating redis-py's errors (see the module docstring).

        redis-py types its replies loosely (a command may return an awaitable or a value
        depending on the client); the drivers check the shape of what comes back.

        Raises:
            StoreUnavailableError: The server could not be reached or answered that it cannot
                serve now (loading, failing over, cluster down), after the client's retries,
                or a command's deadline passed (a cancelled command leaves its
                connection closed, never half-read).
            CorruptRecordError: A key of ours holds another type (someone else wrote it);
                nothing was written.
            StoreError: The server refused the credentials, an ACL permission or the TLS
                handshake. Any other error propagates as redis-py raised it.
        """
        try:
            if self.cluster and not self._cluster_ready:
                try:
                    async with asyncio.timeout(self.timeout):
                        await self._initialize_cluster()
                except BaseException:
                    if inspect.iscoroutine(call):
                        call.close()  # never started: close it rather than leave it unawaited
                    raise
            return await call
        except Exception as err:
            translated = translate(err, what=what, address=self.address)
            if translated is None:
                raise
            if isinstance(translated, StoreUnavailableError):
                logger.debug("%s failed: Redis at %s unavailable", what, self.address, exc_info=True)
            raise translated from err

    async def _initialize_cluster(self) -> None:
        """Learn the cluster's slot map once, before the first command.

        redis-py's asyncio cluster client routes a command that arrives before it knows the
        map (several at once on a fresh client, as listing sends) to a random primary, and
        concurrent first commands then race on one connection; one ``initialize()`` up front
        avoids both (on a client that already knows the map, a borrowed one, it returns at once).
        """
        async with self._cluster_lock:
            if not self._cluster_ready:
                await cast(RedisCluster, self.client).initialize()
                self._cluster_ready = True

    async def aclose(self) -> None:
        """Close the client when owned; a borrowed client stays open. Idempotent."""
        if self._closed:
            return
        self._closed = True
        await self._batcher.aclose()
        if self.owned:
            await self.client.aclose()

    def __repr__(self) -> str:
        kind = "cluster" if self.cluster else "server"
        return f"RedisConnection({kind} at {self.address}, key_prefix={self.key_prefix!r}, shards={self.shards})"
