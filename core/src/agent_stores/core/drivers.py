r"""The two driver shapes a backend implements: an append-only log and an object store.

A driver stores and fetches opaque bytes under keys the core derives; every rule (codec,
keys, de-duplication, path rules, windowing) stays in the core adapters.

Keys
    Keys, prefixes and ``after`` bounds are ``str``. A driver addresses every key verbatim: no
    case folding, no Unicode normalisation, no trimming, no collapsing of ``//``, and no
    character is a pattern (``* ? [ ] % _ \ . ^ $ { } +`` are literal). It must accept every
    non-empty key of Unicode characters other than NUL (U+0000) and lone surrogates — spaces,
    control characters such as U+007F, ``/``, and characters outside the Basic Multilingual
    Plane included — up to a length: 600 UTF-8 bytes for a :class:`LogDriver` (the core's log
    keys stay under about 550 ASCII characters), and the ``max_key_bytes`` an
    :class:`ObjectDriver` declares to its suite (1,024 by default, S3's limit). ``prefix`` and
    ``after`` only compare: any string of such characters is accepted, even one no key equals.

    A driver may refuse with ``ValueError``, before writing anything: a key, prefix or
    ``after`` holding NUL (a SQL ``text`` column cannot hold it), a key longer than it can
    hold (never cut one: two keys would become one), and the empty key. A backend that cannot
    hold some other keys verbatim (a file system's ``..`` segments) refuses them with
    ``ValueError`` too, and declares the divergence in its suite.

Order
    Keys compare in code-point order (for ``str``, Python's ``<``; the same as UTF-8 byte
    order): listings return keys that order, and ``after=`` keeps what sorts strictly after
    it. A database comparing text under a locale collation (PostgreSQL with ICU ``en-US``,
    MySQL's ``utf8mb4_0900_ai_ci``) sorts ``"a"`` before ``"B"`` and may skip punctuation, so
    ``WHERE key > :after ORDER BY key`` pages wrongly there: compare and order the key column
    under a binary collation (``COLLATE "C"``, or store the key as bytes). Prove it on a
    database whose default collation is not C; on a C database the mistake passes every clause.

Ownership
    The core's adapters (``LogHistoryProvider``, ``ObjectAgentFileStore``,
    ``ObjectSessionStore``) borrow a driver unless given ``owns_driver=True``; then their
    ``aclose()`` closes it. A factory making a driver per store passes ``owns_driver=True``,
    or each store leaves its connection pool open.

Errors
    Each backend translates its client library's exceptions in one place (a pure
    ``translate()``), by error class or code, never message text, chaining the client's own
    exception (``raise ... from err``). The rule is the same on every backend; anything it does
    not name propagates unchanged: a bug stays a bug.

    ``ValueError``
        The call itself is wrong, and repeating it fails again: a refused key, an empty
        batch, a ``limit`` that is not positive, a value past a backend limit (a document or
        item size). Nothing was written.
    :class:`~agent_stores.core.errors.StoreConflictError`
        A condition does not hold: ``expected_version``, ``if_absent``, ``if_version``
        (a conditional write or delete of an absent key included, since it has no version).
        Nothing was written; the caller reads again and decides.
    :class:`~agent_stores.core.errors.StoreUnavailableError`
        The server could not be reached or did not answer within the driver's timeout
        (refused, reset, timed out, failing over, busy or locked past its timeout). Never for
        a server that answered with an error about the call. A write interrupted this way is
        applied whole or not at all, and the same driver object works again once the server
        is back (reconnecting itself). ``agent_stores.testing.outage`` checks exactly this,
        through a proxy it cuts.
    :class:`~agent_stores.core.errors.StoreError` (not one of the above)
        The server or the system refused the client: its credentials, a permission (an ACL, a
        policy, a read-only file or folder), the TLS verification or handshake; or the client
        cannot be used as configured (no credentials, a missing bucket). Retrying never helps;
        the message says what to check and never carries a secret.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import NamedTuple, Protocol, TypeVar, cast, runtime_checkable

__all__ = [
    "ConditionalLogDelete",
    "CreateLog",
    "Listing",
    "LogDriver",
    "LogInfo",
    "LogRecord",
    "LogTail",
    "LogVersion",
    "ObjectDriver",
    "OrderedPut",
    "OrderedPutDriver",
    "ReadMany",
    "StoredObject",
    "UnseenAppend",
    "UnseenAppendDriver",
    "check_distinct_keys",
    "conditional_delete",
    "create_of",
    "deletes_conditionally",
    "offered",
    "prefix_bounds",
    "put_in_order",
    "read_many_of",
]


def prefix_bounds(prefix: str) -> tuple[str, str | None]:
    """Return ``(low, high)`` with ``low <= key < high`` exactly when ``key`` starts with ``prefix``.

    For a backend that answers a prefix with a range query on keys compared in code-point order
    (UTF-8 bytes, a binary collation): ``high`` is the prefix with its last character
    incremented, surrogates stepped over (``None``: no upper bound).
    """
    head = prefix
    while head:
        code = ord(head[-1]) + 1
        if 0xD800 <= code <= 0xDFFF:  # surrogates cannot be encoded: step over them
            code = 0xE000
        if code <= 0x10FFFF:
            return prefix, head[:-1] + chr(code)
        head = head[:-1]
    return prefix, None


class LogRecord(NamedTuple):
    """One stored message: its identity digest and its encoded payload."""

    digest: str
    payload: bytes


#: Opaque position of a log; ``None`` when the log is absent (never written, deleted or expired).
#: It changes on every append and is never reused by a log deleted and written again, so a
#: writer holding an old version always conflicts.
LogVersion = int | str | None


class LogTail(NamedTuple):
    """The end of a log: its length, the digests of its last records (oldest first), and its version."""

    length: int
    digests: list[str]
    version: LogVersion


class LogInfo(NamedTuple):
    """One log as listed: its key and the session id it was created for."""

    key: str
    session_id: str


@runtime_checkable
class LogDriver(Protocol):
    """An append-only log of records per key, with optional expiry.

    An expired log is absent for every method: it reads as empty, has version ``None``, and
    appending to it with ``expected_version=None`` starts a new log (the expired records are
    removed first, atomically with the append).
    """

    async def tail(self, key: str, count: int) -> LogTail:
        """Return the log's length, version and the digests of its last ``min(length, count)`` records."""
        ...

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        """Append ``records`` in order, atomically, only if the log is still at ``expected_version``.

        ``session_id`` is recorded when the append creates the log (see :meth:`list_logs`).
        With ``ttl`` (seconds), the whole log expires ``ttl`` seconds after this append; with
        ``ttl=None`` the whole log no longer expires, even if an earlier append gave it a ttl.

        Returns:
            The log's new version.

        Raises:
            ValueError: ``records`` is empty (there is nothing to append; the core never sends an
                empty batch), or a key or value is refused (see the module's rules). Nothing
                was appended, whatever ``expected_version`` is.
            StoreConflictError: The log is no longer at ``expected_version``; nothing was appended.
                A driver may set its ``log_end`` to the log's end it found while losing (what
                ``tail`` would have returned then, with at least the winners' digests), which
                a retry may append at without reading; most leave it ``None``.
        """
        ...

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        """Return the payloads in append order; with ``last``, only the newest ``last`` of them."""
        ...

    async def length(self, key: str) -> int:
        """Return the number of records under ``key`` (0 when absent)."""
        ...

    async def delete(self, key: str) -> bool:
        """Remove the whole log; return whether it existed (an expired log did not).

        Nothing of it may remain: a log written afterwards under ``key`` (with
        ``expected_version=None``) holds only its own records. The same holds for a log
        removed by :meth:`purge_expired` or by the backend's own expiry.
        """
        ...

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        """Return the ``limit`` smallest live logs whose key starts with ``prefix`` and sorts after ``after``.

        Keys compare in code-point order, and ``after`` need not be a key; a page with fewer than
        ``limit`` logs is the last, and paging with ``after=<last key of the previous page>``
        returns every live log exactly once. (The core's ``ObjectLogDriver`` declares one
        divergence here: it orders by ``key + "/"``, see its documentation.)
        """
        ...

    async def purge_expired(self) -> int:
        """Remove every expired log now, records and all; return how many were removed."""
        ...

    async def aclose(self) -> None:
        """Release what the driver owns."""
        ...


class StoredObject(NamedTuple):
    """An object's bytes and the opaque version they were stored under."""

    data: bytes
    version: str


class Listing(NamedTuple):
    """One level of an object listing: full keys, and full common prefixes ending with the delimiter."""

    keys: list[str]
    prefixes: list[str]


@runtime_checkable
class ObjectDriver(Protocol):
    """A flat key → bytes store with conditional writes."""

    async def get(self, key: str) -> StoredObject | None:
        """Return the object, or ``None`` when absent."""
        ...

    async def head(self, key: str) -> str | None:
        """Return the object's version, or ``None`` when absent."""
        ...

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        """Store ``data`` under ``key`` and return its new version.

        Raises:
            StoreConflictError: ``if_absent`` and the key exists, or ``if_version`` is not the
                current version (including when the key is absent). Nothing was written.

        """
        ...

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        """Remove ``key``; return whether it existed.

        Raises:
            StoreConflictError: ``if_version`` is given and is not the current version, or the
                key is absent (an absent key has no version). Nothing was removed.

        """
        ...

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        """List keys under ``prefix`` in ascending code-point order (UTF-8 byte order, as S3 lists).

        With a ``delimiter``, every key with the delimiter after ``prefix`` folds into one
        common prefix (up to and including the delimiter's first occurrence). ``after`` keeps
        only the entries (keys and common prefixes alike) that sort strictly after it, and
        ``limit`` keeps the ``limit`` smallest of the entries left, keys and prefixes counted
        together. A listing with fewer than ``limit`` entries is the last page; the next page
        starts ``after`` the largest entry of this one.
        """
        ...

    async def aclose(self) -> None:
        """Release what the driver owns."""
        ...


class OrderedPut(NamedTuple):
    """One write of :func:`put_in_order`: ``put(key, data, if_absent=if_absent)``."""

    key: str
    data: bytes
    if_absent: bool = False


@runtime_checkable
class OrderedPutDriver(Protocol):
    """An object driver that writes several objects in order in one round trip (optional).

    What lets a checkpoint save of a new id (its record, then its index entry) cost one round
    trip instead of two. A driver without it is served by :func:`put_in_order`, which puts the
    items one after the other.
    """

    async def put_in_order(self, items: Sequence[OrderedPut]) -> list[str]:
        """Store each item as ``put(key, data, if_absent=...)`` would, in order, in one round trip.

        In order means: whatever happens (a refusal, an error, a killed process, a lost
        connection, a server that stops), the items stored by the call are a prefix of
        ``items`` (the first ``k`` of them, for some ``k``); a later item is never stored
        without every earlier one. A driver that stores the whole call in one transaction or one
        atomic script keeps this trivially.

        Returns:
            The new version of each item, in the order of ``items`` (what ``get`` and ``head``
            report until the object is written again). ``[]`` for no items.

        Raises:
            ValueError: Two items share a key (nothing was written), or a key or value is
                refused (see the module's rules): nothing was written where the driver checks
                every item first; the refused item and those after it are never written.
            StoreConflictError: An item's ``if_absent`` does not hold (its key exists). The items
                before it were written; it and every item after it were not.
        """
        ...


def check_distinct_keys(items: Sequence[OrderedPut]) -> None:
    """Refuse ``put_in_order`` items that share a key, before anything is sent (every driver's first check).

    Raises:
        ValueError: Two items share a key.
    """
    if len({item.key for item in items}) != len(items):
        raise ValueError("put_in_order writes each key at most once: two items share a key")


async def put_in_order(driver: ObjectDriver, items: Sequence[OrderedPut]) -> list[str]:
    """Store ``items`` in order on ``driver`` (the contract of :meth:`OrderedPutDriver.put_in_order`).

    One call of the driver's own ``put_in_order`` where it has one (one round trip); else one
    ``put`` after the other, each awaited before the next is sent (a round trip per item).

    Raises:
        ValueError: Two items share a key (checked before anything is sent), or the driver
            refuses a key or value (one after the other: the items before it stay written).
        StoreConflictError: An item's ``if_absent`` does not hold; the items before it were
            written, it and every item after it were not.
    """
    check_distinct_keys(items)
    if getattr(driver, "put_in_order", None) is not None:
        return await cast(OrderedPutDriver, driver).put_in_order(items)
    return [await driver.put(item.key, item.data, if_absent=item.if_absent) for item in items]


@runtime_checkable
class ConditionalLogDelete(Protocol):
    """A log driver that can remove a log only while it is still at a version (optional).

    What the retention sweeper uses to delete a history nobody wrote to since it looked. A
    driver without it is swept by reading the version, then deleting: an append landing
    between the two is deleted with the log (see ``docs/cli.md``, sweep).
    """

    async def delete_if_version(self, key: str, version: LogVersion) -> bool:
        """Remove the whole log if it is live and at ``version``; return ``True``.

        Raises:
            StoreConflictError: The log is absent or at another version; nothing was removed.
        """
        ...


class UnseenAppend(NamedTuple):
    """What :meth:`UnseenAppendDriver.append_unseen` did: whether it appended, and the log's end."""

    appended: bool
    tail: LogTail


@runtime_checkable
class UnseenAppendDriver(Protocol):
    """A log driver that can read a log's end and append to it in one atomic step (optional).

    What lets a save whose tail the provider does not remember cost one round trip: the core
    states the conditions under which its rules would append the batch unchanged, and the driver
    only evaluates them (``LogHistoryProvider`` falls back to reading the tail when they fail).
    """

    async def append_unseen(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        window: int,
        stop: Sequence[str],
        staging: str,
        read: int,
        session_id: str,
        ttl: float | None = None,
    ) -> UnseenAppend:
        """Append ``records`` atomically when the log's end allows it; otherwise write nothing.

        It appends exactly when, in one atomic step: the log is live and none of its last
        ``window`` records has the digest of one of ``records``, and none of its last
        ``max(window, 1)`` records has a digest in ``stop``; or the log is absent and the log
        ``staging`` is absent or empty (then the append starts the log, as
        ``append(expected_version=None)`` does). ``ttl`` and ``session_id`` as in ``append``.

        Returns:
            ``appended`` and the log's end: after an append, its new length and version and the
            digests of its last ``read`` records before the batch followed by the batch's;
            otherwise what ``tail(key, read)`` returns.

        Raises:
            ValueError: As ``append``; nothing was appended.
        """
        ...


def deletes_conditionally(driver: object) -> bool:
    """Whether ``driver`` offers :class:`ConditionalLogDelete`.

    A wrapper that forwards ``delete_if_version`` (a key-prefix view, a sealed driver) answers
    with a ``deletes_conditionally`` attribute for the driver it wraps; any other driver offers
    it when it has the method.
    """
    declared = getattr(driver, "deletes_conditionally", None)
    if isinstance(declared, bool):
        return declared
    return isinstance(driver, ConditionalLogDelete)


def conditional_delete(driver: object) -> ConditionalLogDelete:
    """``driver`` as a :class:`ConditionalLogDelete`.

    Raises:
        NotImplementedError: It does not offer one (see :func:`deletes_conditionally`).
    """
    if not deletes_conditionally(driver):
        raise NotImplementedError(f"{type(driver).__name__} cannot delete a log only at a version")
    return cast(ConditionalLogDelete, driver)


#: A log driver's optional ``create(key, records, *, session_id, ttl=None)``: start a log that
#: was never written, in one request; ``None`` when it was written before (nothing stored).
CreateLog = Callable[..., Awaitable["LogVersion | None"]]
#: A log driver's optional ``read_many(keys)``: the whole log of each key from one listing, in
#: order; ``None`` for a log to read alone.
ReadMany = Callable[[Sequence[str]], Awaitable[list[list[bytes] | None]]]

_Method = TypeVar("_Method", bound=Callable[..., object])


def create_of(driver: object) -> CreateLog | None:
    """``driver``'s ``create`` (the object-store log offers it), or ``None`` where it has none."""
    method = getattr(driver, "create", None)
    return cast(CreateLog, method) if callable(method) else None


def read_many_of(driver: object) -> ReadMany | None:
    """``driver``'s ``read_many`` (the object-store log offers it), or ``None`` where it has none."""
    method = getattr(driver, "read_many", None)
    return cast(ReadMany, method) if callable(method) else None


def offered(method: _Method | None, name: str) -> _Method:
    """``method``, a driver's optional ``name`` found by :func:`create_of` or :func:`read_many_of`, which must exist.

    A wrapping driver (a key-prefix view, a sealed driver) calls it in its own ``name``
    property, so that ``getattr(wrapper, name, None)`` is ``None`` exactly where the driver it
    wraps has no such method, through any stack of wrappers.

    Raises:
        AttributeError: ``method`` is ``None``: the driver has no ``name``.
    """
    if method is None:
        raise AttributeError(f"the driver has no {name}")
    return method
