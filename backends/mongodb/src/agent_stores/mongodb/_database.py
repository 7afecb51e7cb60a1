"""``MongoDBDatabase``: the client, database and collections the MongoDB stores share, and the funnel every call takes.

Every driver call of the backend passes through :meth:`MongoDBDatabase.run`, which makes sure
the indexes exist, logs the call and translates pymongo's exceptions by class and server error
code (``_errors.translate``, never message text) into the store error family, chained with ``from``. Indexes are
created lazily on first use by a numbered list of idempotent migrations, recorded in the
migrations collection; ``create_index`` with an identical specification is a no-op on the
server, so processes starting at the same time are safe.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, NamedTuple, TypeVar
from urllib.parse import unquote, unquote_plus, urlsplit

from pymongo import ASCENDING, AsyncMongoClient, ReadPreference
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.database import AsyncDatabase
from pymongo.common import URI_OPTIONS_VALIDATOR_MAP, validate_boolean_or_string
from pymongo.errors import DuplicateKeyError, PyMongoError
from pymongo.uri_parser import split_hosts, split_options

from agent_stores.core import StoreNotFoundError, StoreUnavailableError, redact_url
from agent_stores.core.urls import check_user_part, parse_bool

from ._errors import translate

__all__ = [
    "DEFAULT_DATABASE",
    "DEFAULT_PREFIX",
    "SCHEMA_VERSION",
    "CollectionNames",
    "Document",
    "MongoDBDatabase",
    "MongoDBURL",
    "parse_mongodb_url",
    "utc_from_timestamp",
]

logger = logging.getLogger("agent_stores.mongodb")

Document = dict[str, Any]
T = TypeVar("T")

#: Database used when neither the URL nor the caller names one.
DEFAULT_DATABASE: Final = "agent_stores"
#: Prefix of every collection name the stores use.
DEFAULT_PREFIX: Final = "agent_stores_"

_SCHEMES = ("mongodb", "mongodb+srv")


@dataclass(frozen=True, slots=True)
class CollectionNames:
    """The collections the stores use; every name is configurable.

    Attributes:
        history: Every history log: one head document per log (its current incarnation,
            session id and expiry; the TTL index lives here) and one batch document per
            appended batch of messages, all claimed by one unique index on (log key,
            incarnation, sequence number). Heads and batches share the collection so that a
            save is one write command and a load one query.
        objects: One document per file or session snapshot, keyed by ``_id``.
        migrations: One document per applied index migration.
    """

    history: str = f"{DEFAULT_PREFIX}history"
    objects: str = f"{DEFAULT_PREFIX}objects"
    migrations: str = f"{DEFAULT_PREFIX}migrations"

    @classmethod
    def with_prefix(cls, prefix: str) -> CollectionNames:
        """Return the default names under ``prefix`` (``"agent_stores_"`` gives the defaults).

        Raises:
            ValueError: ``prefix`` would make an invalid collection name.
        """
        if not isinstance(prefix, str) or "$" in prefix or "\x00" in prefix or prefix.startswith("system."):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"invalid collection prefix {prefix!r}")
        return cls(f"{prefix}history", f"{prefix}objects", f"{prefix}migrations")


# -- indexes -------------------------------------------------------------------------------------
#
# Numbered, idempotent migrations: (number, description, [(collection attribute, keys, options)]).
# History lives in one collection. A head (``_id`` = the log key, ``s`` = 2**62) and the batches
# of its incarnation (``s`` = first sequence number) share the unique (k, x, s) index: log key,
# incarnation epoch, sequence number; so a backward scan of one (k, x) returns the head first,
# then the newest batches. Heads are keyed by the log key (``_id``), so listing sessions is a
# range query on the ``_id`` index (batch ids are ObjectIds, outside every string range). A
# head's expiry is kept twice: ``e``, a date, for the server's TTL monitor (which removes
# expired heads about once a minute), and ``t``, integer milliseconds (2**62 without a ttl),
# which every read compares exactly; ``t`` on batches lets ``purge_expired`` find the batches of
# logs the TTL monitor removed. Objects are keyed by ``_id`` (the unique path index).
#
# Migration 1 created the first layout (heads and batches in two collections, ``…logs`` and
# ``…batches``); it is superseded by migration 2 and creates nothing any more. Histories stored
# in that layout are not read by this release (see the backend documentation).

_Index = tuple[str, list[tuple[str, int]], dict[str, Any]]

_MIGRATIONS: Final[tuple[tuple[int, str, tuple[_Index, ...]], ...]] = (
    (1, "history heads and batches in two collections (superseded by migration 2)", ()),
    (
        2,
        "history in one collection: heads and batches claimed by (log, epoch, seq), TTL expiry on heads, expiry index",
        (
            (
                "history",
                [("k", ASCENDING), ("x", ASCENDING), ("s", ASCENDING)],
                {"name": "agent_stores_log_seq", "unique": True},
            ),
            ("history", [("e", ASCENDING)], {"name": "agent_stores_ttl", "expireAfterSeconds": 0}),
            ("history", [("t", ASCENDING)], {"name": "agent_stores_expiry"}),
        ),
    ),
)

#: The schema version this release writes: the number of the last migration.
SCHEMA_VERSION: Final = _MIGRATIONS[-1][0]


#: pymongo's boolean URI options (lower-cased): read with :func:`parse_bool`, handed on as ``true``/``false``.
_BOOLEAN_OPTIONS: Final = frozenset(
    name for name, validator in URI_OPTIONS_VALIDATOR_MAP.items() if validator is validate_boolean_or_string
)
#: Options that configure TLS (lower-cased): refused with ``tls=false``, which would ignore them
#: (pymongo complains only once the client is made, and only about some).
_TLS_OPTIONS: Final = frozenset(
    {"tlscafile", "tlscertificatekeyfile", "tlscertificatekeyfilepassword", "tlscrlfile", "tlsinsecure"}
    | {"tlsallowinvalidcertificates", "tlsallowinvalidhostnames", "tlsdisableocspendpointcheck"}
)


class MongoDBURL(NamedTuple):
    """A checked MongoDB URL: what to hand pymongo, and the database it names.

    Attributes:
        url: The URL with each boolean option spelled ``true`` or ``false``.
        database: The database the URL's path names, or ``None``.
    """

    url: str
    database: str | None


def parse_mongodb_url(url: str) -> MongoDBURL:
    """Check a ``mongodb://`` or ``mongodb+srv://`` URL as pymongo would, strictly, before any client exists.

    pymongo's own client only warns about an option it cannot read and drops it (``tls=yes``
    would connect in plaintext); here every option is validated with pymongo's validators and
    an invalid one is an error. Boolean options take ``1/true/yes/on`` and ``0/false/no/off``
    (any case; see :func:`~agent_stores.core.urls.parse_bool`). No DNS lookup is made (a
    ``mongodb+srv://`` host is resolved by the client).

    Raises:
        ValueError: Not a MongoDB URL, a user part holding an unescaped ``/ ? # %``, a
            malformed host list or option, or ``tls=false`` with ``tls*`` options. The message
            never quotes the user part or an option's value.
    """
    if not isinstance(url, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"expected a mongodb:// URL string, got {type(url).__name__}")
    parts = urlsplit(url)
    if parts.scheme.lower() not in _SCHEMES or not parts.netloc or "://" not in url:
        raise ValueError(
            f"not a MongoDB URL (expected mongodb://host/db or mongodb+srv://host/db): {redact_url(url)!r}"
        )
    check_user_part(url, what="MongoDB URL")
    if parts.fragment:
        raise ValueError("malformed MongoDB URL: it takes no fragment; write a '#' in an option as %23")
    query = _normalize_booleans(parts.query)
    given: dict[str, str] = {}
    for piece in re.split("[&;]", query):
        if piece:
            name, _, value = piece.partition("=")
            given[name] = value
    if "false" in (given.get("tls"), given.get("ssl")):
        tls_options = sorted(name for name in given if unquote_plus(name).lower() in _TLS_OPTIONS)
        if tls_options:
            raise ValueError(
                f"MongoDB URL: TLS options ({', '.join(tls_options)}) with tls=false would be ignored; "
                "drop tls=false (any tls* option turns TLS on) or the options"
            )
    try:
        if query:
            split_options(query, validate=True, warn=False)
        if parts.scheme.lower() == "mongodb":
            split_hosts(parts.netloc.rpartition("@")[2])
    except (PyMongoError, ValueError, TypeError, OSError) as err:
        # pymongo's messages name the option, never its value (it parses with from_uri=True).
        raise ValueError(f"malformed MongoDB URL ({redact_url(url)!r}): {err}") from err
    checked = url if query == parts.query else url.split("?", 1)[0] + "?" + query
    return MongoDBURL(checked, unquote(parts.path.lstrip("/")) or None)


def _normalize_booleans(query: str) -> str:
    """``query`` with every boolean option's value read strictly and spelled ``true``/``false``."""
    if not query:
        return query
    separator = ";" if ";" in query and "&" not in query else "&"
    pieces: list[str] = []
    for piece in query.split(separator):
        name, equals, value = piece.partition("=")
        if equals and unquote_plus(name).lower() in _BOOLEAN_OPTIONS:
            option = unquote_plus(name)
            piece = f"{name}={'true' if parse_bool(unquote_plus(value), option=option) else 'false'}"
        pieces.append(piece)
    return separator.join(pieces)


@contextlib.contextmanager
def _translating(what: str) -> Generator[None]:
    """Raise what ``translate`` makes of a pymongo error in the block (``what`` names it), else the error itself."""
    try:
        yield
    except PyMongoError as err:
        translated = translate(err, what)
        if translated is None:
            raise
        raise translated from err


def utc_from_timestamp(seconds: float) -> datetime:
    """Return ``seconds`` since the epoch as an aware UTC datetime (BSON dates keep milliseconds)."""
    return datetime.fromtimestamp(seconds, UTC)


class MongoDBDatabase:
    """One MongoDB database and the collections every MongoDB store built on it shares.

    Borrowed (``MongoDBDatabase(client)`` or ``MongoDBDatabase(database)``): the client is
    never closed, and nothing but our own collections' indexes is created. Owned
    (:meth:`from_url`): the ``AsyncMongoClient`` is created on first use and closed by
    :meth:`aclose`. Retryable writes and reads are pymongo's defaults (on); server selection
    gives up after the client's ``serverSelectionTimeoutMS`` (pymongo's default: 30 s), and a
    server that cannot be reached is a ``StoreUnavailableError``. The same database works again
    once the server is back.

    Args:
        connection: A pymongo ``AsyncMongoClient`` (its default database is used, else
            ``database``, else ``"agent_stores"``) or an ``AsyncDatabase``.
        database: Database name, when ``connection`` is a client.
        collections: Collection names (default: :class:`CollectionNames`).

    Raises:
        TypeError: ``connection`` is neither an ``AsyncMongoClient`` nor an ``AsyncDatabase``
            (a Motor client is refused: see the README).
    """

    def __init__(
        self,
        connection: AsyncMongoClient[Document] | AsyncDatabase[Document],
        *,
        database: str | None = None,
        collections: CollectionNames | None = None,
    ) -> None:
        if isinstance(connection, AsyncDatabase):
            self._database: AsyncDatabase[Document] | None = connection
            self._client: AsyncMongoClient[Document] | None = connection.client
        elif isinstance(connection, AsyncMongoClient):  # pyright: ignore[reportUnnecessaryIsInstance]
            self._client = connection
            self._database = connection.get_default_database(database or DEFAULT_DATABASE)
            if database is not None:
                self._database = connection[database]
        else:
            raise TypeError(
                "expected a pymongo AsyncMongoClient or AsyncDatabase, got "
                f"{type(connection).__module__}.{type(connection).__name__}"
            )
        self._owned = False
        self._url: str | None = None
        self._client_options: dict[str, Any] = {}
        self._database_name = self._database.name
        self._init_state(collections)

    def _init_state(self, collections: CollectionNames | None) -> None:
        self.collections = collections or CollectionNames()
        # Collection objects by attribute name, made once per database object (building one
        # costs pymongo more than a small write's own client work).
        self._collections: dict[str, AsyncCollection[Document]] = {}
        self._ready_event = False
        self._setup_lock = asyncio.Lock()
        self._closed = False
        #: Open only a database that holds the stores' collections, and create none: a database
        #: without them is a ``StoreNotFoundError`` on first use (``must_exist``).
        self.must_exist = False

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        database: str | None = None,
        collections: CollectionNames | None = None,
        client_options: dict[str, Any] | None = None,
    ) -> MongoDBDatabase:
        """Return an owned database for ``url``; the client is created on first use (no I/O here).

        Args:
            url: ``mongodb://[user:password@]host[:port][,host...]/[database][?options]`` or
                ``mongodb+srv://[user:password@]host/[database][?options]``; the query carries
                pymongo's URI options (``tls``, ``authSource``, ``replicaSet``,
                ``serverSelectionTimeoutMS``, ...).
            database: Database name; overrides the URL's. Default ``"agent_stores"``.
            collections: Collection names (default: :class:`CollectionNames`).
            client_options: Keyword arguments for ``AsyncMongoClient`` (they override the URL's).

        Raises:
            ValueError: ``url`` is not a MongoDB URL or is malformed (see :func:`parse_mongodb_url`).
        """
        checked = parse_mongodb_url(url)
        name = database or checked.database or DEFAULT_DATABASE
        self = cls.__new__(cls)
        self._client = None
        self._database = None
        self._owned = True
        self._url = checked.url
        self._client_options = dict(client_options or {})
        self._database_name = name
        self._init_state(collections)
        return self

    @property
    def owned(self) -> bool:
        """Whether :meth:`aclose` closes the client (it was created here)."""
        return self._owned

    @property
    def name(self) -> str:
        """The database name."""
        return self._database_name

    def collection(self, which: str) -> AsyncCollection[Document]:
        """Return one of our collections by attribute name of :class:`CollectionNames` (no I/O)."""
        found = self._collections.get(which)
        if found is not None and self._database is not None:
            return found
        # Conditional writes decide on what the primary holds: reads go to the primary too,
        # whatever read preference a borrowed client was configured with.
        made = self._open().get_collection(getattr(self.collections, which), read_preference=ReadPreference.PRIMARY)
        self._collections[which] = made
        return made

    def _open(self) -> AsyncDatabase[Document]:
        """The database; an owned client is created here on first use (pymongo connects lazily)."""
        if self._database is not None:
            return self._database
        if self._closed:
            raise StoreUnavailableError("the MongoDB database was closed")
        assert self._url is not None  # owned databases always have a URL
        with _translating("cannot create the MongoDB client"):
            client: AsyncMongoClient[Document] = AsyncMongoClient(self._url, **self._client_options)
        self._client = client
        self._database = client[self._database_name]
        return self._database

    # -- the funnel --------------------------------------------------------------------------

    async def run(self, what: str, operation: Callable[..., Awaitable[T]], *args: Any, **kwargs: Any) -> T:
        """Run ``operation(*args, **kwargs)``: ensure the indexes, log, translate errors (``what`` names it)."""
        if not self._ready_event:
            await self.ready()
        if logger.isEnabledFor(logging.DEBUG):
            logger.debug("mongodb: %s", what)
        with _translating(f"MongoDB {what} failed"):
            return await operation(*args, **kwargs)

    async def ready(self) -> None:
        """Open the client (when owned) and apply the index migrations once."""
        async with self._setup_lock:
            if self._ready_event:
                return
            if self._closed:
                raise StoreUnavailableError("the MongoDB database was closed")
            database = self._open()
            if self.must_exist:
                with _translating("MongoDB listCollections failed"):
                    found = await database.list_collection_names(filter={"name": self.collections.migrations})
                if not found:
                    raise StoreNotFoundError(
                        f"the MongoDB database {self._database_name!r} holds no agent-stores collections "
                        f"(no {self.collections.migrations!r})"
                    )
            with _translating("MongoDB index setup failed"):
                await self._migrate()
            self._ready_event = True

    async def _migrate(self) -> None:
        migrations = self.collection("migrations")
        applied = {doc["_id"] async for doc in migrations.find({}, {"_id": 1})}
        for number, description, indexes in _MIGRATIONS:
            if number in applied:
                continue
            for which, keys, options in indexes:
                await self.collection(which).create_index(keys, **options)
            record = {"_id": number, "description": description, "applied_at": datetime.now(UTC)}
            with contextlib.suppress(DuplicateKeyError):  # another process recorded the same migration first
                await migrations.insert_one(record)
            logger.info("mongodb: applied migration %d (%s) in %s", number, description, self._database_name)

    async def aclose(self) -> None:
        """Close the client if it was created here; idempotent. A borrowed client stays open."""
        self._closed = True
        self._ready_event = False
        if self._owned and self._client is not None:
            client, self._client, self._database = self._client, None, None
            self._collections.clear()
            await client.close()

    def __repr__(self) -> str:
        where = f" at {redact_url(self._url)!r}" if self._url else ""
        return f"MongoDBDatabase({self._database_name!r}{where}, owned={self._owned})"
