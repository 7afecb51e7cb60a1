"""``s3://bucket/prefix?...`` URLs, the boto3 client they describe, and the borrow-or-own rules.

A store takes a ready boto3 S3 client (borrowed, never closed), a shared :class:`S3ObjectDriver`
or :class:`S3Bucket`, or a URL (``from_url``: a client is made from the standard credential chain
or a ``boto3.Session`` and owned). Retries, timeouts and checksums live in botocore's ``Config``.
"""

from __future__ import annotations

import platform
import string
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, ClassVar, Final, cast
from urllib.parse import parse_qsl, unquote, urlsplit

import boto3
from botocore.config import Config

from agent_stores.core import MUST_EXIST, ConnectedStore, Connector, redact_url
from agent_stores.core.codec import validate_cache_bytes, validate_cache_idle
from agent_stores.core.lifecycle import CACHE_BYTES, CACHE_IDLE
from agent_stores.core.objectlog import LOG_OPTIONS
from agent_stores.core.urls import check_user_part, parse_bool, parse_count, parse_seconds

from ._answers import skip_last_modified
from ._driver import S3ObjectDriver, check_key
from ._listing import skim_listings

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client

__all__ = [
    "CONNECTOR",
    "LOCATION_OPTIONS",
    "S3Bucket",
    "S3Connector",
    "S3Location",
    "S3Store",
    "client_config",
    "join_prefix",
    "lean_client",
    "open_driver",
    "parse_s3_url",
    "user_agent",
]


#: Options that configure TLS: an ``http://`` ``endpoint_url`` would ignore them.
_TLS_OPTIONS: Final = ("ca_bundle", "client_cert", "client_key")
#: botocore's checksum settings (``Config`` options of the same names) and the values they take.
_CHECKSUM_OPTIONS: Final = ("request_checksum_calculation", "response_checksum_validation")
_CHECKSUM_VALUES: Final = ("when_supported", "when_required")


def join_prefix(prefix: str, *parts: str) -> str:
    """Return ``prefix`` (normalized to end with ``/`` unless empty) followed by ``parts``, each ending with ``/``."""
    head = prefix.strip("/")
    segments = [s for s in (head, *(p.strip("/") for p in parts)) if s]
    return "".join(f"{s}/" for s in segments)


@dataclass(frozen=True)
class S3Location:
    """Where a backend's objects live and how to reach them.

    Attributes:
        bucket: The bucket.
        prefix: Key prefix of every object (``""`` or ending with ``/``); tenants sharing a
            bucket use distinct prefixes.
        endpoint_url: An S3-compatible endpoint (SeaweedFS, MinIO, ...); ``None`` for AWS.
        region: The AWS region; ``None``: from the standard configuration.
        profile: A named profile of the AWS config files.
        addressing_style: ``path``, ``virtual`` or ``auto``; ``None``: ``path`` with an
            ``endpoint_url``, else botocore's default.
        create_bucket: Create the bucket on first use when it does not exist.
        conditional_delete: The server honours ``If-Match`` on DELETE (see ``S3ObjectDriver``).
        ordered_listing: The server lists in S3's byte order (``False`` for SeaweedFS; see
            ``S3ObjectDriver``).
        path_keys: The server stores keys as file paths (``True`` for SeaweedFS; see
            ``S3ObjectDriver``).
        max_attempts: botocore retry attempts, first try included ("standard" mode: exponential
            backoff with jitter on throttling, 5xx answers and connection errors).
        connect_timeout: Seconds to wait for a connection.
        read_timeout: Seconds to wait for an answer.
        max_concurrency: Requests in flight at once (worker threads and pooled connections).
        ca_bundle: A PEM file of the certificate authorities an ``https`` endpoint's certificate
            must chain to (default: botocore's, or ``AWS_CA_BUNDLE``). Verification is always on.
        client_cert: A PEM file of the client certificate for endpoints that require one.
        client_key: The client certificate's key, when ``client_cert`` does not hold it.
        request_checksum_calculation: botocore's setting of that name: ``when_supported``
            (every upload carries a CRC32 of its body the server checks) or ``when_required``
            (only where the operation requires one: a plain ``PutObject`` then carries none,
            and the body is guarded by SigV4's signed SHA-256 of it, which botocore computes
            instead, and TLS). ``None``: botocore's own (``AWS_REQUEST_CHECKSUM_CALCULATION``,
            the profile's ``request_checksum_calculation``, else ``when_supported``). Needs
            boto3 1.36 or later when set.
        response_checksum_validation: botocore's setting of that name: ``when_supported``
            (GETs ask for the object's checksum and botocore checks the bytes against it when
            the server sends one) or ``when_required`` (no check unless asked per request: the
            bytes are then guarded by TLS only). ``None``: botocore's own
            (``AWS_RESPONSE_CHECKSUM_VALIDATION``, the profile's, else ``when_supported``).
            Needs boto3 1.36 or later when set.
    """

    bucket: str
    prefix: str = ""
    endpoint_url: str | None = None
    region: str | None = None
    profile: str | None = None
    addressing_style: str | None = None
    create_bucket: bool = False
    conditional_delete: bool = True
    ordered_listing: bool = True
    path_keys: bool = False
    max_attempts: int = 4
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    max_concurrency: int = 32
    ca_bundle: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    request_checksum_calculation: str | None = None
    response_checksum_validation: str | None = None

    def with_options(self, **options: Any) -> S3Location:
        """Return a copy with ``options`` applied (query-string spellings accepted).

        Raises:
            ValueError: An option is unknown or malformed (a boolean other than
                ``1/true/yes/on``, ``0/false/no/off``, a count that is not a whole positive
                number, a timeout that is not a positive finite number of seconds, a checksum setting other than
                ``when_supported``/``when_required``, naming it), ``endpoint_url`` holds
                credentials, or ``ca_bundle``/``client_cert``/``client_key`` come with a
                non-``https`` endpoint.
        """
        changes: dict[str, Any] = {}
        for name, value in options.items():
            if name in {
                "endpoint_url",
                "region",
                "profile",
                "addressing_style",
                "ca_bundle",
                "client_cert",
                "client_key",
            }:
                changes[name] = None if value in (None, "") else str(value)
            elif name in {"create_bucket", "conditional_delete", "ordered_listing", "path_keys"}:
                changes[name] = parse_bool(value, option=name)
            elif name in {"max_attempts", "max_concurrency"}:
                changes[name] = parse_count(value, option=name)
            elif name in {"connect_timeout", "read_timeout"}:
                changes[name] = parse_seconds(value, option=name)
            elif name in _CHECKSUM_OPTIONS:
                changes[name] = _parse_checksum_setting(value, option=name)
            elif name == "prefix":
                changes[name] = join_prefix(str(value))
            else:
                raise ValueError(f"unknown S3 option {name!r}")
        location = replace(self, **changes)
        if location.addressing_style not in {None, "path", "virtual", "auto"}:
            raise ValueError(f"addressing_style must be path, virtual or auto, got {location.addressing_style!r}")
        if location.client_key and not location.client_cert:
            raise ValueError("client_key needs client_cert")
        if location.endpoint_url is not None:
            endpoint = urlsplit(location.endpoint_url)
            if "@" in endpoint.netloc:
                raise ValueError("endpoint_url takes no credentials: use the standard AWS credential chain")
            tls_options = [name for name in _TLS_OPTIONS if getattr(location, name)]
            if tls_options and endpoint.scheme.lower() != "https":
                raise ValueError(
                    f"TLS options ({', '.join(tls_options)}) with an endpoint_url that is not https:// "
                    "would be ignored: use https://"
                )
        if location.max_attempts < 1 or location.max_concurrency < 1:
            raise ValueError("max_attempts and max_concurrency must be positive")
        if location.prefix:
            check_key(location.prefix, what="prefix", path_keys=True)
        return location


def _parse_checksum_setting(value: object, *, option: str) -> str | None:
    """Read ``when_supported`` or ``when_required`` (any case); ``None`` or ``""``: botocore's own."""
    if value is None or value == "":
        return None
    text = value.lower() if isinstance(value, str) else None
    if text not in _CHECKSUM_VALUES:
        shown = repr(value[:40]) if isinstance(value, str) else f"a {type(value).__name__}"
        raise ValueError(f"option {option} takes when_supported or when_required, got {shown}")
    return text


def parse_s3_url(url: str, **options: Any) -> S3Location:
    """Parse ``s3://bucket/prefix?endpoint_url=...&region=...`` (query options as :class:`S3Location`).

    Credentials never come from the URL: they come from the standard chain (environment,
    config files, instance or task roles) or from a ``boto3.Session`` the caller passes.

    Boolean options take ``1/true/yes/on`` and ``0/false/no/off`` (any case); ``ca_bundle``,
    ``client_cert`` and ``client_key`` need an ``https://`` ``endpoint_url`` (or none: AWS).

    Raises:
        ValueError: Not an ``s3://`` URL, no bucket, credentials in the URL or in
            ``endpoint_url``, an unknown or malformed option, or TLS options for a plain
            ``http://`` endpoint.
    """
    parts = urlsplit(url)
    if parts.scheme.lower() != "s3":
        raise ValueError(f"not an s3:// URL: {redact_url(url)!r}")
    check_user_part(url, what="S3 URL")
    if parts.username is not None or parts.password is not None:
        raise ValueError("S3 URLs take no credentials: use the standard AWS credential chain or pass a session")
    bucket = parts.hostname or ""
    if not bucket:
        raise ValueError(f"the S3 URL names no bucket: {redact_url(url)!r}")
    query = dict(parse_qsl(parts.query, keep_blank_values=True))
    location = S3Location(bucket=bucket, prefix=join_prefix(unquote(parts.path)))
    return location.with_options(**query, **options)


def _user_agent() -> str:
    try:
        ours = version("agent-stores-s3")
    except PackageNotFoundError:  # pragma: no cover - run from a source tree without metadata
        ours = "unknown"
    return (
        f"Boto3/{boto3.__version__} ua/2.1 "
        f"os/{platform.system().lower()}#{platform.release()} lang/python#{platform.python_version()} "
        f"lib/agent-stores-s3#{ours}"
    )


#: The ``User-Agent`` of the clients the stores make, built once per process (see :func:`client_config`).
USER_AGENT: Final = _user_agent()
#: The characters botocore keeps of an app id (``Config.user_agent_appid``); any other becomes ``-``.
_APP_ID_CHARACTERS: Final = frozenset(string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~")


def user_agent(app_id: str | None = None) -> str:
    """The fixed ``User-Agent`` (:data:`USER_AGENT`), ending with ``app/<app_id>`` when an app id is given.

    ``app_id`` as botocore writes it: a character outside ASCII letters, digits and
    ``!#$%&'*+-.^_`|~`` becomes ``-``.
    """
    if not app_id:
        return USER_AGENT
    return f"{USER_AGENT} app/{''.join(c if c in _APP_ID_CHARACTERS else '-' for c in app_id)}"


def client_config(location: S3Location, *, app_id: str | None = None) -> Config:
    """Return the botocore ``Config`` of the clients the stores make for ``location``.

    Standard-mode retries, timeouts, pool size, addressing style, TLS client certificate, and
    the checksum settings ``location`` names (none named: botocore's own). Two settings cut
    botocore's CPU per request and change nothing S3 checks:

    * ``parameter_validation=False``: botocore does not check each call's parameters against
      the service model. Every call the stores make is built by the driver from values it
      checked itself (keys and prefixes by :func:`check_key`, the bucket, bytes bodies, its own
      metadata); botocore's S3-specific checks (bucket names, ASCII metadata) still run, and
      the server still refuses what it does not accept.
    * ``user_agent``: a fixed ``User-Agent`` (:data:`USER_AGENT`), where botocore's own is
      rebuilt twice per request. It is not signed and the server does not act on it; the
      session's ``user_agent_extra`` (boto3 puts botocore's version there) and the
      ``Config``'s are still appended. ``app_id`` ends it with ``app/<app_id>``
      (:func:`user_agent`); :func:`client_factory` passes the one botocore resolves.
    """
    style = location.addressing_style or ("path" if location.endpoint_url else None)
    checksums = {name: value for name in _CHECKSUM_OPTIONS if (value := getattr(location, name)) is not None}
    return Config(
        retries={"max_attempts": location.max_attempts, "mode": "standard"},
        connect_timeout=location.connect_timeout,
        read_timeout=location.read_timeout,
        max_pool_connections=location.max_concurrency,
        s3={"addressing_style": style} if style else None,  # pyright: ignore[reportArgumentType]
        region_name=location.region,
        client_cert=(
            (location.client_cert, location.client_key)
            if location.client_cert is not None and location.client_key
            else location.client_cert
        ),
        parameter_validation=False,
        user_agent=user_agent(app_id),
        **checksums,
    )


#: One boto3 session per profile for clients made from the standard chain: a new session
#: re-reads the service model (about 0.2 s); a session's second client takes about 10 ms.
_SESSIONS: dict[str | None, boto3.Session] = {}
#: boto3 sessions are not thread-safe; clients are made in worker threads, one at a time.
_CLIENT_LOCK = threading.Lock()


def client_factory(location: S3Location, session: boto3.Session | None = None) -> Callable[[], S3Client]:
    """Return a callable making the S3 client ``location`` describes (from ``session`` or the standard chain).

    Clients made from the standard chain share one ``boto3.Session`` per profile per process
    (credentials are resolved once, and refreshed by botocore when they are temporary). The
    client is configured by :func:`client_config` and made lean by :func:`lean_client`. Its
    fixed ``User-Agent`` carries ``app/<id>`` when botocore resolves an app id for it (the
    ``AWS_SDK_UA_APP_ID`` environment variable or the profile's ``sdk_ua_app_id``), read from
    the client botocore makes (``client.meta.config.user_agent_appid``); the client is then
    made again with it (about 10 ms once, nothing per request).
    """

    def make() -> S3Client:
        with _CLIENT_LOCK:
            source = session
            if source is None:
                source = _SESSIONS.get(location.profile)
                if source is None:
                    source = _SESSIONS[location.profile] = boto3.Session(profile_name=location.profile)
            # The stubs type every service's overload; only S3's is installed, so go through Any.
            make_client: Any = getattr(source, "client")  # noqa: B009
            client = cast("S3Client", make_client("s3", **_client_kwargs(location, client_config(location))))
            # botocore's own resolution (Config, environment, profile); the stubs lack the field
            app_id: str | None = getattr(client.meta.config, "user_agent_appid", None)
            if app_id:
                client.close()
                config = client_config(location, app_id=app_id)
                client = cast("S3Client", make_client("s3", **_client_kwargs(location, config)))
        return lean_client(client)

    return make


def _client_kwargs(location: S3Location, config: Config) -> dict[str, Any]:
    return {"endpoint_url": location.endpoint_url, "config": config, "verify": location.ca_bundle}


def lean_client(client: S3Client) -> S3Client:
    """Return ``client`` with its answers made lean (its own event hooks only), for a client the stores own.

    Listings carry their keys as a plain list (:func:`skim_listings`), and ``GetObject`` and
    ``HeadObject`` answers carry no ``LastModified`` (:func:`skip_last_modified`): the stores
    read neither the parsed listing entries nor the dates. A borrowed client is never changed.
    """
    skim_listings(client)
    skip_last_modified(client)
    return client


def open_driver(
    location: S3Location, *, client: S3Client | None = None, session: boto3.Session | None = None
) -> S3ObjectDriver:
    """Return a driver for ``location``: borrowing ``client``, or owning one made from ``session`` / the chain.

    Raises:
        ValueError: Both ``client`` and ``session`` are given.
    """
    if client is not None and session is not None:
        raise ValueError("pass a client or a session, not both")
    return S3ObjectDriver(
        client if client is not None else client_factory(location, session),
        location.bucket,
        owns_client=client is None,
        create_bucket=location.create_bucket,
        conditional_delete=location.conditional_delete,
        max_concurrency=location.max_concurrency,
        ordered_listing=location.ordered_listing,
        path_keys=location.path_keys,
    )


#: Options that only make a client (its endpoint, credentials' profile, TLS, retries, timeouts,
#: checksums): refused beside a boto3 client passed in, which is used as it is.
_CLIENT_OPTIONS: Final = frozenset(
    {
        "endpoint_url",
        "region",
        "profile",
        "addressing_style",
        "max_attempts",
        "connect_timeout",
        "read_timeout",
        *_TLS_OPTIONS,
        *_CHECKSUM_OPTIONS,
    }
)

#: Options of the S3 handle: where the objects live, how the client is made, its boto3 session,
#: and ``must_exist`` (the bucket must exist: never created, whatever ``create_bucket`` says).
LOCATION_OPTIONS: Final = (frozenset(S3Location.__dataclass_fields__) - {"bucket"}) | {"session", MUST_EXIST}


class S3Bucket:
    """The handle every S3 store shares: one :class:`S3ObjectDriver` (client, bucket, threads) and a key prefix.

    Args:
        driver: The driver; closed by :meth:`aclose` only when ``owns_driver``.
        prefix: Key prefix of every object (``""`` or ending with ``/``).
        owns_driver: Close the driver on :meth:`aclose` (it stops its worker threads, and closes
            the client only when the driver made it).
    """

    def __init__(self, driver: S3ObjectDriver, prefix: str = "", *, owns_driver: bool = False) -> None:
        self.driver = driver
        self.prefix = prefix
        self.owns_driver = owns_driver

    def under(self, *parts: str) -> str:
        """The key prefix ``<prefix><part>/...``."""
        return join_prefix(self.prefix, *parts)

    async def aclose(self) -> None:
        """Close the driver when this handle made it."""
        if self.owns_driver:
            await self.driver.aclose()

    def __repr__(self) -> str:
        return f"S3Bucket({self.driver.bucket!r}, prefix={self.prefix!r})"


class S3Connector(Connector[S3Bucket]):
    """Opens :class:`S3Bucket` handles: owned from an ``s3://`` URL, or around a client or driver you keep."""

    handle_type = S3Bucket
    options = LOCATION_OPTIONS
    name = "S3"

    def open(self, url: str, **options: Any) -> S3Bucket:
        """A bucket handle whose driver owns a client for ``s3://bucket/prefix?...`` (made on first use).

        ``session``: a ``boto3.Session`` to make the client from (default: the standard chain).

        Raises:
            ValueError: The URL is malformed or an option is unknown.
        """
        session: boto3.Session | None = options.pop("session", None)
        must_exist = options.pop(MUST_EXIST, False)
        location = parse_s3_url(url, **options)
        if must_exist:
            location = replace(location, create_bucket=False)
        return S3Bucket(open_driver(location, session=session), location.prefix, owns_driver=True)

    def borrow(self, client: Any, **options: Any) -> S3Bucket:
        """A bucket handle around a boto3 S3 ``client`` (never closed) or a shared :class:`S3ObjectDriver`.

        Options: ``bucket`` (required with a client), ``prefix``, and with a client the
        driver's options (``create_bucket``, ``conditional_delete``, ``ordered_listing``,
        ``path_keys``, ``max_concurrency``).

        Raises:
            ValueError: A driver comes with a different bucket or with driver options (they
                belong to the driver), a client without a bucket or with an option that only
                makes a client (``endpoint_url``, ``region``, timeouts, retries, TLS, checksums:
                the client passed in is used as it is), or an unknown option.
        """
        bucket: str | None = options.pop("bucket", None)
        prefix = join_prefix(str(options.pop("prefix", "") or ""))
        must_exist = options.pop(MUST_EXIST, False)
        if "session" in options:
            raise ValueError("a session makes an owned client: use from_url, or pass the client")
        if isinstance(client, S3ObjectDriver):
            if (bucket is not None and bucket != client.bucket) or options:
                raise ValueError("a store built on an S3ObjectDriver takes its bucket and options from the driver")
            if must_exist and client.create_bucket:
                raise ValueError("must_exist: the S3ObjectDriver creates its bucket (create_bucket=True)")
            return S3Bucket(client, prefix)
        if not bucket:
            raise ValueError("an S3 store built on a boto3 client needs the bucket name")
        ignored = sorted(set(options) & _CLIENT_OPTIONS)
        if ignored:
            raise ValueError(
                f"{', '.join(ignored)} configure a client the store makes; a boto3 client passed in is "
                "used as it is: configure it before passing it, or open the store from a URL"
            )
        location = S3Location(bucket=bucket).with_options(**options)
        if must_exist:
            location = replace(location, create_bucket=False)
        return S3Bucket(open_driver(location, client=cast("S3Client", client)), prefix, owns_driver=True)


CONNECTOR: Final = S3Connector()


class S3Store(ConnectedStore[S3Bucket]):
    """Borrow-or-own for the S3 stores (``from_url`` from the core); the object log's options may come from a URL."""

    connector: ClassVar[Connector[Any]] = CONNECTOR
    url_options: ClassVar[Mapping[str, Callable[[Any], Any]]] = {
        CACHE_BYTES: validate_cache_bytes,
        CACHE_IDLE: validate_cache_idle,
        **LOG_OPTIONS,
    }
