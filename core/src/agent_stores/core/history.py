"""``LogHistoryProvider``: the framework's ``HistoryProvider`` over any :class:`LogDriver`."""

from __future__ import annotations

import asyncio
import copy
import random
import time
from collections.abc import AsyncIterator, Sequence
from datetime import timedelta
from typing import Any, TypedDict

from agent_framework import (
    AgentSession,
    CompactionStrategy,
    Content,
    HistoryProvider,
    Message,
    SessionContext,
    SupportsAgentRun,
    TokenizerProtocol,
)

from .bounded import run_bounded
from .cache import BoundedCache
from .codec import (
    DecodeCache,
    count_already_stored,
    decode_messages,
    encode_record,
    validate_cache_bytes,
    validate_cache_idle,
)
from .compaction import (
    COMPACTION_DIGEST,
    SEAL_DIGEST,
    CompactionRecord,
    compact_session,
    fold_records,
    has_compaction_records,
    is_compaction_record,
    message_digests_only,
)
from .drivers import LogDriver, LogRecord, LogTail, LogVersion, create_of, read_many_of
from .errors import StoreConflictError
from .foldcache import FoldCache
from .keys import KeySpace
from .lifecycle import OwnedResource
from .prefixed import within
from .retain import retain_session, staging_key, waits_for_retention
from .telemetry import note_conflict, store_operation
from .unseen import UnseenAppender

__all__ = [
    "HistoryOptions",
    "LogHistoryProvider",
    "hide_unanswered_calls",
    "trim_orphans",
    "window_cache_bytes",
    "window_cache_options",
]

DEFAULT_SOURCE_ID = "history"

# Optimistic-concurrency retries of one save against concurrent writers, with jittered backoff:
# at least this many attempts, and more while the save has spent less than the budget (a writer
# that keeps losing to others on a busy session keeps its place in the race that long).
_CONFLICT_ATTEMPTS = 32
_CONFLICT_BUDGET_S = 10.0
_BACKOFF_BASE_S = 0.001
_BACKOFF_CAP_S = 0.05

# The end of the last logs a provider wrote, so the next save needs no read: how many logs,
# how many digests each (enough for any ordinary save), and how many digests a fresh read asks for.
_TAIL_SESSIONS = 1024
_TAIL_KEEP = 64
_TAIL_READ = 16
# Sessions export_logs reads alone at once (those one listing cannot answer).
_EXPORT_ALONE = 16

# A message carrying one of these answers an earlier message; at the start of a window it is an orphan.
_ANSWER_CONTENT_TYPES = frozenset({"function_result", "function_approval_response"})


def _enough(tail: LogTail | None, wanted: int) -> LogTail | None:
    """``tail`` when it holds the digests of the last ``wanted`` messages (as a save's read would), else ``None``."""
    if tail is None or len(tail.digests) < min(tail.length, wanted):
        return None
    if COMPACTION_DIGEST in tail.digests and len(message_digests_only(tail.digests)) < wanted:
        return None
    return tail


def trim_orphans(window: list[Message]) -> list[Message]:
    """Drop leading messages that answer a message outside the window (tool results, approval responses)."""
    start = 0
    while start < len(window) and _is_answer(window[start]):
        start += 1
    return window[start:] if start else window


def _is_answer(message: Message) -> bool:
    return str(message.role) == "tool" or any(c.type in _ANSWER_CONTENT_TYPES for c in message.contents)


class _Turns:
    """First-come, first-served turns per key (FIFO ``asyncio.Lock``s, dropped when nobody waits)."""

    def __init__(self) -> None:
        self._locks: dict[str, tuple[asyncio.Lock, int]] = {}

    def turn(self, key: str) -> _Turn:
        """An async context manager holding ``key``'s turn (a class, not a generator: saves are hot)."""
        return _Turn(self._locks, key)


class _Turn:
    __slots__ = ("_key", "_lock", "_locks")

    def __init__(self, locks: dict[str, tuple[asyncio.Lock, int]], key: str) -> None:
        self._locks = locks
        self._key = key
        lock, users = locks.get(key) or (asyncio.Lock(), 0)
        locks[key] = (lock, users + 1)
        self._lock = lock

    async def __aenter__(self) -> None:
        try:
            await self._lock.acquire()
        except BaseException:
            self._leave()
            raise

    async def __aexit__(self, *exc: object) -> None:
        self._lock.release()
        self._leave()

    def _leave(self) -> None:
        lock, users = self._locks[self._key]
        if users == 1:
            del self._locks[self._key]
        else:
            self._locks[self._key] = (lock, users - 1)


# Contents that answer or hold a function call by its call id: the call is not left unanswered.
_CALL_ANSWERING_TYPES = frozenset({"function_result", "function_approval_request", "function_approval_response"})


def _answered_call_ids(messages: Sequence[Message]) -> set[str]:
    answered: set[str] = set()
    for message in messages:
        for content in message.contents:
            if content.type not in _CALL_ANSWERING_TYPES:
                continue
            if content.call_id:
                answered.add(content.call_id)
            call = content.function_call
            if call is not None and call.call_id:
                answered.add(call.call_id)
    return answered


def hide_unanswered_calls(messages: Sequence[Message], *, answered_by: Sequence[Message] = ()) -> list[Message]:
    """Return ``messages`` without the function calls that no result answers.

    A run that stopped between a model's function call and the tool's result (a crash, a
    kill, a lost connection) leaves a history that ends in a call without its result; model
    APIs reject such a conversation ("An assistant message with 'tool_calls' must be followed
    by tool messages ..."), so every later run of the session would fail. A call counts as
    answered when a ``function_result`` (or a pending approval request or response) with its
    ``call_id`` is in ``messages`` or in ``answered_by`` (the run's new input, which carries
    the results of the calls the current run made). Calls the service ran itself
    (``informational_only``) need no result and stay. A message left with no contents is
    dropped; the messages given are not changed (changed ones are copies).
    """
    answered = _answered_call_ids(messages) | _answered_call_ids(answered_by)
    kept: list[Message] = []
    for message in messages:
        contents = [c for c in message.contents if not _unanswered(c, answered)]
        if len(contents) == len(message.contents):
            kept.append(message)
        elif contents:
            partial = copy.copy(message)
            partial.contents = contents
            kept.append(partial)
    return kept


def _unanswered(content: Content, answered: set[str]) -> bool:
    return content.type == "function_call" and not content.informational_only and content.call_id not in answered


def validate_ttl(ttl: float | timedelta | None) -> float | None:
    """Return ``ttl`` in seconds or raise ``ValueError`` when it is not positive."""
    if ttl is None:
        return None
    seconds = ttl.total_seconds() if isinstance(ttl, timedelta) else ttl
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not seconds > 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"ttl must be a positive number of seconds or a timedelta, got {ttl!r}")
    return float(seconds)


def validate_max_messages(max_messages: int | None) -> int | None:
    """Return ``max_messages`` or raise ``ValueError`` when it is not a positive int."""
    if max_messages is None:
        return None
    if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages <= 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"max_messages must be a positive int or None, got {max_messages!r}")
    return max_messages


def window_cache_bytes(options: HistoryOptions) -> int:
    """The budget of an object-store log's remembered windows for a provider given ``options``: its decode cache's."""
    shared = options.get("decode_cache")
    if shared is not None:
        return shared.max_bytes
    return validate_cache_bytes(options.get("cache_bytes"))


def window_cache_options(options: HistoryOptions) -> dict[str, Any]:
    """``cache_bytes`` and ``cache_idle`` of an object-store log's remembered windows for a provider given ``options``.

    Its decode cache's: the shared one's, else those ``options`` give (each read strictly).
    """
    shared = options.get("decode_cache")
    idle = shared.max_idle if shared is not None else validate_cache_idle(options.get("cache_idle"))
    return {"cache_bytes": window_cache_bytes(options), "cache_idle": idle}


class HistoryOptions(TypedDict, total=False):
    """The options every history provider takes, on every backend (see :class:`LogHistoryProvider`)."""

    source_id: str
    namespace: str
    tenant: str | None
    max_messages: int | None
    ttl: float | timedelta | None
    skip_excluded: bool
    hide_unanswered_calls: bool
    cache_bytes: int | None
    cache_idle: float | None
    decode_cache: DecodeCache | None
    load_messages: bool
    store_inputs: bool
    store_context_messages: bool
    store_context_from: set[str] | None
    store_outputs: bool


class LogHistoryProvider(OwnedResource, HistoryProvider):
    """Chat history in an append-only log per (tenant, namespace, source_id, session_id).

    Stores every message verbatim as the JSON of ``Message.to_dict()``. A save stores exactly
    what the framework's ``InMemoryHistoryProvider`` would for the same sequence of saves (the
    framework's ``filter_new_messages`` decides) and is atomic across processes: it reads the
    digests of the last ``len(messages)`` stored messages, decides, and appends on the condition
    that the log is still at the version it read, retrying on conflict. Overlapping saves to one
    session through one provider take turns in call order, so they land in call order on every
    backend. The provider remembers
    the end of the logs it wrote last, so a steady conversation costs one conditional append
    per save; a stale memory only costs a conflict and a re-read.

    A load returns the ``Message`` objects an earlier load through this provider returned for
    the same stored records, while they still equal their records (checked on every load);
    only messages it has not built before (a new turn, a changed one) are built, so a steady
    conversation leaves Python's garbage collector little to do. A change a caller makes to a
    loaded message is never stored and never returned by a later load, and equal messages in
    one load are distinct objects; but two lists that loads returned may hold the same object,
    as with the framework's ``InMemoryHistoryProvider``: copy a loaded message before changing
    it if an earlier load's list must not see the change. ``cache_bytes=0`` gives every load
    new objects.

    Args:
        driver: The log driver; borrowed unless ``owns_driver``.
        source_id: Provider id; part of every key, so two providers never share history.
        namespace: Application prefix; isolation is total. ``tenants`` is reserved (see
            :mod:`agent_stores.core.keys`).
        tenant: Keep every log under ``tenants/<tenant>/`` (what a tenant view passes; see
            :class:`~agent_stores.core.tenants.TenantStores`).
        max_messages: Load only the newest N messages; the window never starts with a tool
            result or approval response whose request lies outside it.
        ttl: Sliding expiry: a session expires this long after the last save that stored
            messages, and then reads as empty. Seconds or a ``timedelta``.
        skip_excluded: Omit messages whose ``additional_properties["_excluded"]`` is truthy.
        hide_unanswered_calls: When loading history for a run, leave out function calls that
            no stored result answers (a run that died between a tool call and its result), so
            the session stays usable; the stored record keeps them verbatim (``get_messages``
            and ``export_messages`` return them). On by default.
        cache_bytes: Size of this provider's own :class:`~agent_stores.core.codec.DecodeCache`
            (default :data:`~agent_stores.core.codec.DEFAULT_CACHE_BYTES`, a 32nd of the memory
            the process may use, 16 to 256 MiB; ``0`` decodes every load afresh and shares no
            message between loads).
        cache_idle: Seconds that cache keeps what no load uses (default 300).
        decode_cache: A cache to share instead (what a backend passes to every provider it
            hands out); give ``cache_bytes`` / ``cache_idle`` or ``decode_cache``, not both.
        owns_driver: Close the driver on ``aclose()``.
        **kwargs: ``load_messages``, ``store_inputs``, ``store_context_messages``,
            ``store_context_from``, ``store_outputs`` as in ``HistoryProvider``.

    Raises:
        ValueError: ``source_id`` is empty, ``max_messages`` is not a positive int, ``ttl``
            is not positive, ``tenant`` is empty, ``namespace`` is reserved, ``cache_bytes``
            or ``cache_idle`` is invalid, or either is given with ``decode_cache``.
    """

    def __init__(
        self,
        driver: LogDriver,
        *,
        source_id: str = DEFAULT_SOURCE_ID,
        namespace: str = "",
        tenant: str | None = None,
        max_messages: int | None = None,
        ttl: float | timedelta | None = None,
        skip_excluded: bool = False,
        hide_unanswered_calls: bool = True,
        cache_bytes: int | None = None,
        cache_idle: float | None = None,
        decode_cache: DecodeCache | None = None,
        owns_driver: bool = False,
        **kwargs: Any,
    ) -> None:
        if not isinstance(source_id, str) or not source_id:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError("source_id must be a non-empty string")
        super().__init__(source_id, **kwargs)
        self.max_messages = validate_max_messages(max_messages)
        self.ttl = validate_ttl(ttl)
        self.skip_excluded = skip_excluded
        self.hide_unanswered_calls = hide_unanswered_calls
        self.keys = KeySpace(namespace, tenant)
        self.keys.check_history_namespace()
        if decode_cache is not None and (cache_bytes is not None or cache_idle is not None):
            raise ValueError(
                "give cache_bytes or cache_idle (a cache of this provider's own) or decode_cache (a shared one), "
                "not both"
            )
        self.decode_cache = (
            decode_cache
            if decode_cache is not None
            else DecodeCache(validate_cache_bytes(cache_bytes), max_idle=validate_cache_idle(cache_idle))
        )
        self._folds = FoldCache(
            self.decode_cache.max_bytes, max_idle=self.decode_cache.max_idle
        )  # compacted views, folded once (see foldcache)
        self.driver = within(driver, self.keys.root)
        # Each remembered end is a plain tuple of strings and numbers, which the collector stops tracking.
        self._tails: BoundedCache[str, tuple[int, tuple[str, ...], LogVersion]] = BoundedCache(
            max_entries=_TAIL_SESSIONS
        )
        self._turns = _Turns()
        self._scope = object()  # what keeps this provider's shared messages apart from any other's
        self._unseen = UnseenAppender(self.driver)
        self._adopt(driver, owned=owns_driver)

    @property
    def namespace(self) -> str:
        """The namespace every key of this provider lives in."""
        return self.keys.namespace

    @property
    def tenant(self) -> str | None:
        """The tenant whose root every key of this provider lies under, or ``None``."""
        return self.keys.tenant

    def _key(self, session_id: str | None) -> str:
        return self.keys.history(self.source_id, session_id)

    @store_operation("history", "get_messages", session=True)
    async def get_messages(
        self, session_id: str | None, *, state: dict[str, Any] | None = None, **kwargs: Any
    ) -> list[Message]:
        """Return the session's messages in save order (the newest ``max_messages`` when set).

        Messages an earlier load through this provider returned come back as the same
        objects while unchanged (see the class docstring).

        Raises:
            CorruptRecordError: A stored record cannot be decoded.
        """
        key = self._key(session_id)
        payloads = await self.driver.read(key, last=self.max_messages)
        if not payloads:  # absent, or swapped out by a retention that is putting it back (see retain)
            payloads = await self.driver.read(staging_key(self, session_id), last=self.max_messages)
        messages = self._view(key, payloads) if self.max_messages is None else await self._window(key, payloads)
        if self.max_messages is not None:
            messages = trim_orphans(messages)
        if self.skip_excluded:
            messages = [m for m in messages if not m.additional_properties.get("_excluded", False)]
        return messages

    async def before_run(
        self,
        *,
        agent: SupportsAgentRun,
        session: AgentSession,
        context: SessionContext,
        state: dict[str, Any],
    ) -> None:
        """Load the session's history into the run, without unanswered calls when ``hide_unanswered_calls``."""
        await super().before_run(agent=agent, session=session, context=context, state=state)
        loaded = context.context_messages.get(self.source_id)
        if self.hide_unanswered_calls and loaded:
            context.context_messages[self.source_id] = hide_unanswered_calls(loaded, answered_by=context.input_messages)

    @store_operation("history", "save_messages", session=True)
    async def save_messages(
        self,
        session_id: str | None,
        messages: Sequence[Message],
        *,
        state: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        """Append the messages not already stored, atomically.

        A save that loses to concurrent writers of the same session retries with jittered
        backoff: at least 32 attempts, and more until it has spent 10 seconds.

        Raises:
            StoreConflictError: Concurrent writers kept winning for every retry.
        """
        if messages:
            await self._append(session_id, [encode_record(m) for m in messages], deduplicate=True)

    async def _append(
        self, session_id: str | None, encoded: list[tuple[str, bytes]], *, deduplicate: bool, absent: bool = False
    ) -> None:
        key = self._key(session_id)
        # Saves to one session through this provider take turns in call order, so their order
        # in the log never depends on which request the store happens to serve first.
        async with self._turns.turn(key):
            if absent and self._tails.get(key) is None and await self._create(key, session_id, encoded):
                return
            await self._append_now(key, session_id or "", encoded, deduplicate=deduplicate)

    async def _create(self, key: str, session_id: str | None, encoded: list[tuple[str, bytes]]) -> bool:
        """Create the log with ``encoded`` if neither it nor a staged transcript exists; ``False`` if either does.

        The staging log is checked first, as a save to an absent log does (see
        ``waits_for_retention``): a staged transcript must be restored before anything is
        appended, which the ordinary path does. ``append(expected_version=None)`` then creates
        the log only if it is absent, atomically; a log that exists (or appears meanwhile)
        makes it conflict, and nothing is written. A driver with ``create`` (the object-store
        log) first tries to start a log that was never written, in one request and without the
        staging check: a transcript is only ever staged from a log that was written.
        """
        records = [LogRecord(digest, payload) for digest, payload in encoded]
        if await self._start(key, session_id or "", records):
            return True
        if await self.driver.length(staging_key(self, session_id)):
            return False
        try:
            version = await self.driver.append(
                key, records, expected_version=None, session_id=session_id or "", ttl=self.ttl
            )
        except StoreConflictError:
            return False
        self._remember(key, LogTail(len(records), [r.digest for r in records], version))
        return True

    async def _start(self, key: str, session_id: str, records: list[LogRecord]) -> bool:
        """Start a log that was never written with ``records``, where the driver can (``create``: one request)."""
        create = create_of(self.driver)
        if create is None:
            return False
        started = await create(key, records, session_id=session_id, ttl=self.ttl)
        if started is None:
            return False
        self._remember(key, LogTail(len(records), [r.digest for r in records], started))
        return True

    async def _append_now(
        self, key: str, session_id: str, encoded: list[tuple[str, bytes]], *, deduplicate: bool
    ) -> None:
        records = [LogRecord(digest, payload) for digest, payload in encoded]
        digests = [r.digest for r in records]
        wanted = len(digests)
        deadline = time.monotonic() + _CONFLICT_BUDGET_S
        attempt = -1
        learned: LogTail | None = None  # the end a lost append found (see StoreConflictError.log_end)
        while (attempt := attempt + 1) < _CONFLICT_ATTEMPTS or time.monotonic() < deadline:
            remembered = self._remembered(key, wanted) if attempt == 0 else None
            fetched, learned = _enough(learned, wanted), None  # a read, as a tail read would be
            if attempt == 0 and remembered is None and deduplicate and self._unseen.available:
                # One round trip when the driver can check the tail and append in one step (see unseen).
                outcome = await self._unseen(
                    key,
                    staging_key(self, session_id),
                    records,
                    read=max(wanted, _TAIL_READ),
                    session_id=session_id,
                    ttl=self.ttl,
                )
                if outcome is not None and outcome.appended:
                    self._remember(key, outcome.tail)
                    return
                fetched = None if outcome is None else outcome.tail
            tail = remembered or fetched or await self._message_tail(key, wanted)
            if remembered is None and tail.version is None and await self._start(key, session_id, records):
                return  # a log never written (the driver tells a deleted one): no staged transcript to wait for
            if remembered is None and (not tail.length or tail.digests[-1:] == [SEAL_DIGEST]):
                staging = staging_key(self, session_id)  # a retention may be swapping the log (see retain)
                if await waits_for_retention(self, key, staging, session_id, sealed=bool(tail.length)):
                    await asyncio.sleep(random.uniform(0, min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2 ** min(attempt, 16))))
                    continue
            # A remembered end holds message digests only (see _remember): nothing to filter.
            stored = tail.digests if tail is remembered else message_digests_only(tail.digests)
            known = count_already_stored(stored[-wanted:], digests) if deduplicate else 0
            if known == wanted:
                if remembered is not None:
                    continue  # "nothing new" writes nothing, so no version check: confirm on a fresh read
                self._remember(key, tail)
                return
            try:
                version = await self.driver.append(
                    key, records[known:], expected_version=tail.version, session_id=session_id, ttl=self.ttl
                )
            except StoreConflictError as err:
                self._tails.pop(key)
                note_conflict("append", attempt + 1)
                learned = err.log_end
                if attempt and learned is None:  # a retry at the end the loss found is a fair try at once
                    await asyncio.sleep(random.uniform(0, min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2 ** min(attempt, 16))))
                continue
            added = digests[known:]
            if tail is remembered:
                kept = (*stored[-_TAIL_KEEP:], *message_digests_only(added))
                self._tails.put(key, (tail.length + len(added), kept[-_TAIL_KEEP:], version))
            else:
                self._remember(key, LogTail(tail.length + len(added), [*tail.digests, *added], version))
            return
        raise StoreConflictError(f"gave up appending to {key!r} after {attempt} conflicting writes")

    async def _message_tail(self, key: str, wanted: int) -> LogTail:
        # The tail holding the digests of the last ``wanted`` messages (compaction records between them skipped).
        count = max(wanted, _TAIL_READ)
        while True:
            tail = await self.driver.tail(key, count)
            if COMPACTION_DIGEST not in tail.digests or len(tail.digests) >= tail.length:
                return tail
            if len(message_digests_only(tail.digests)) >= wanted:
                return tail
            count *= 2

    def _remembered(self, key: str, wanted: int) -> LogTail | None:
        remembered = self._tails.get(key)
        if remembered is None:
            return None
        length, digests, version = remembered
        if len(digests) < min(length, wanted):
            return None
        return LogTail(length, list(digests), version)

    def _remember(self, key: str, tail: LogTail) -> None:
        self._tails.put(key, (tail.length, tuple(message_digests_only(tail.digests)[-_TAIL_KEEP:]), tail.version))

    def _decode(self, key: str, payloads: list[bytes]) -> list[Message]:
        # A load shares the messages this provider built for the log before, while unchanged (see decode_messages).
        return decode_messages(
            payloads, where=f"history record in {key!r}", cache=self.decode_cache, log=(self._scope, key)
        )

    def _decode_afresh(self, key: str, payloads: list[bytes]) -> list[Message]:
        # An export: new messages, and nothing kept alive for a session read once.
        return decode_messages(payloads, where=f"history record in {key!r}", cache=self.decode_cache)

    def _view(self, key: str, payloads: list[bytes]) -> list[Message]:
        if not has_compaction_records(payloads):
            return self._decode(key, payloads)
        return self._folds.view(key, payloads, where=f"history record in {key!r}", cache=self.decode_cache)

    async def _window(self, key: str, payloads: list[bytes]) -> list[Message]:
        # The newest ``max_messages`` messages: compaction records in the window do not count,
        # so a window holding some reads again that much further back (a round trip only then).
        wanted = self.max_messages or 0
        asked = wanted
        while True:
            if not has_compaction_records(payloads):
                return self._decode(key, payloads)
            records = sum(1 for p in payloads if is_compaction_record(p))
            if len(payloads) - records >= wanted or len(payloads) < asked:
                break  # enough messages, or the whole log
            asked = len(payloads) + wanted - (len(payloads) - records)
            payloads = await self.driver.read(key, last=asked)
        keys, view = fold_records(payloads, where=f"history record in {key!r}", cache=self.decode_cache)
        extra = sum(1 for k in keys if k[0] == "m") - wanted
        if extra <= 0:
            return view
        kept: list[Message] = []
        for k, message in zip(keys, view, strict=True):
            if extra > 0:  # older than the window, with whatever a compaction added before them
                extra -= k[0] == "m"
                continue
            kept.append(message)
        return kept

    @store_operation("history", "compact", session=True)
    async def compact(
        self, session_id: str | None, strategy: CompactionStrategy, *, tokenizer: TokenizerProtocol | None = None
    ) -> bool:
        """Run a framework compaction ``strategy`` on the session's view and store what it decided.

        The strategy sees what :meth:`get_messages` would return without a window: every
        message with earlier compactions applied. What it changes (annotations such as
        ``_excluded`` and ``_group``, rewritten or removed messages, added summaries) is appended
        as one compaction record under the log version it read; when a save lands meanwhile,
        the compaction reads the new tail and runs the strategy again. Nothing is deleted:
        :meth:`export_messages` still returns every stored message.

        Returns:
            Whether a compaction record was stored (``False``: the strategy changed nothing
            beyond group annotations, or the session is empty).

        Raises:
            StoreConflictError: Concurrent saves kept landing for every retry.
        """
        return await compact_session(self, session_id, strategy, tokenizer=tokenizer)

    @store_operation("history", "retain", session=True)
    async def retain(self, session_id: str | None) -> int:
        """Drop what stored compactions excluded, physically: the log becomes the compacted view.

        The opt-in retention step (the default keeps the full transcript): the session's log is
        rewritten as its compacted view without excluded messages, each kept message with its
        annotations and each summary as a stored message, so :meth:`get_messages` with
        ``skip_excluded=True`` (what the model is sent) returns the same messages as before and
        :meth:`export_messages` no longer returns the excluded ones. A session without stored
        compactions is left as it is.

        Crash-safe and resumable on every backend (see :mod:`agent_stores.core.retain`): if
        the run stops at any point, every load returns the old transcript or the new one, no
        save is lost, and the next ``retain`` of the session finishes or undoes it. Saves that
        land during the run make it decide again; saves while it swaps the log wait for it.
        Run one retention of a session at a time (a second run is for after a crash).

        Returns:
            How many stored messages were dropped (0: nothing to do).

        Raises:
            StoreConflictError: Concurrent saves kept landing for every retry, or another
                retention of the session is under way.
        """
        key = self._key(session_id)
        async with self._turns.turn(key):
            self._tails.pop(key)
            self._folds.forget(key)
            return await retain_session(self, session_id)

    async def append_compaction(
        self, key: str, session_id: str, record: bytes, *, expected_version: int | str | None
    ) -> None:
        """Append one encoded compaction record to the log ``key`` if it is still at ``expected_version``.

        Raises:
            StoreConflictError: The log moved on; nothing was appended.
        """
        async with self._turns.turn(key):
            self._tails.pop(key)
            await self.driver.append(
                key,
                [LogRecord(COMPACTION_DIGEST, record)],
                expected_version=expected_version,
                session_id=session_id,
                ttl=self.ttl,
            )

    @store_operation("history", "count_messages", session=True)
    async def count_messages(self, session_id: str | None) -> int:
        """Return how many messages the session holds."""
        return await self.driver.length(self._key(session_id))

    @store_operation("history", "delete_session", session=True)
    async def delete_session(self, session_id: str | None) -> bool:
        """Delete the session's whole history; return whether it existed."""
        key = self._key(session_id)
        self._tails.pop(key)
        self._folds.forget(key)
        staged = await self.driver.delete(staging_key(self, session_id))  # first: a staged retention must not revive it
        return await self.driver.delete(key) or staged

    @store_operation("history", "list_sessions")
    async def list_sessions(self, *, after: str | None = None, limit: int = 100) -> list[str]:
        """Return up to ``limit`` session ids of this provider, in the driver's key order, each after the id ``after``.

        Page with ``after=<last id of the previous page>``.
        """
        if limit <= 0:
            raise ValueError(f"limit must be positive, got {limit!r}")
        after_key = None if after is None else self._key(after)
        logs = await self.driver.list_logs(self.keys.history_prefix(self.source_id), after=after_key, limit=limit)
        return [log.session_id for log in logs]

    async def iter_sessions(self, *, page_size: int = 100) -> AsyncIterator[str]:
        """Yield every session id of this provider, paging through :meth:`list_sessions`."""
        after: str | None = None
        while True:
            page = await self.list_sessions(after=after, limit=page_size)
            for session_id in page:
                yield session_id
            if len(page) < page_size:
                return
            after = page[-1]

    @store_operation("history", "export_messages", session=True)
    async def export_messages(self, session_id: str | None) -> list[Message]:
        """Return every stored message of the session, ignoring ``max_messages`` and ``skip_excluded``."""
        key = self._key(session_id)
        payloads = await self.driver.read(key) or await self.driver.read(staging_key(self, session_id))
        if has_compaction_records(payloads):
            payloads = [p for p in payloads if not is_compaction_record(p)]
        return self._decode_afresh(key, payloads)

    @store_operation("history", "export_log", session=True)
    async def export_log(self, session_id: str | None) -> list[Message | CompactionRecord]:
        """Return every stored record of the session in log order: messages, and compaction records verbatim.

        What a migration copies: :meth:`import_log` of it into another store gives a session
        with the same messages and the same compacted view.
        """
        key = self._key(session_id)
        payloads = await self.driver.read(key) or await self.driver.read(staging_key(self, session_id))
        return self._entries(key, payloads)

    @property
    def reads_many(self) -> bool:
        """Whether :meth:`export_logs` reads many sessions from one listing (the object-store log)."""
        return read_many_of(self.driver) is not None

    @store_operation("history", "export_logs")
    async def export_logs(self, session_ids: Sequence[str | None]) -> list[list[Message | CompactionRecord]]:
        """Return :meth:`export_log` of each session, in order: on the object-store log, from one listing.

        A driver with ``read_many`` (the object-store log, see :attr:`reads_many`) lists the
        sessions' objects once and reads a session whose log is one segment with one ``get``;
        every other session is read as :meth:`export_log` reads it, 16 at a time.
        """
        keys = [self._key(s) for s in session_ids]
        read_many = read_many_of(self.driver)
        many = await read_many(keys) if read_many is not None else [None] * len(keys)
        found = [
            [] if payloads is None else self._entries(key, payloads) for key, payloads in zip(keys, many, strict=True)
        ]

        async def alone(at: int) -> None:
            found[at] = await self.export_log(session_ids[at])

        await run_bounded([at for at, payloads in enumerate(many) if not payloads], alone, _EXPORT_ALONE)
        return found

    def _entries(self, key: str, payloads: list[bytes]) -> list[Message | CompactionRecord]:
        if not has_compaction_records(payloads):
            return list(self._decode_afresh(key, payloads))
        at = [i for i, p in enumerate(payloads) if not is_compaction_record(p)]
        entries: list[Message | CompactionRecord] = [CompactionRecord(bytes(p)) for p in payloads]
        for i, message in zip(at, self._decode_afresh(key, [payloads[i] for i in at]), strict=True):
            entries[i] = message
        return entries

    @store_operation("history", "import_log", session=True)
    async def import_log(
        self, session_id: str | None, entries: Sequence[Message | CompactionRecord], *, absent: bool = False
    ) -> None:
        """Append what :meth:`export_log` returned, verbatim, without de-duplication, atomically.

        ``absent=True`` says the caller expects the session to have no log yet (a migration
        planned it so): the import then creates the log without reading its end first (on an
        object store, one listing and one conditional write instead of four listings and the
        write). It is only a hint: if the session has a log, or a staged transcript a
        retention left, the import appends after it exactly as without the hint.
        """
        if entries:
            encoded = [
                (COMPACTION_DIGEST, e.payload) if isinstance(e, CompactionRecord) else encode_record(e) for e in entries
            ]
            await self._append(session_id, encoded, deduplicate=False, absent=absent)

    @store_operation("history", "import_messages", session=True)
    async def import_messages(self, session_id: str | None, messages: Sequence[Message]) -> None:
        """Append ``messages`` verbatim, without de-duplication, atomically (for migrations and restores)."""
        if messages:
            await self._append(session_id, [encode_record(m) for m in messages], deduplicate=False)

    @store_operation("history", "purge_expired")
    async def purge_expired(self) -> int:
        """Remove every expired session of the backing store now; return how many were removed."""
        return await self.driver.purge_expired()
