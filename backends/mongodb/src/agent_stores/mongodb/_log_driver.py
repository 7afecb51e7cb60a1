"""The MongoDB log driver: a head document per log and a batch document per append, in one collection.

Every all-or-nothing write is one single-document operation or one ordered command (no
multi-document transaction); ``docs/backends/mongodb.md`` describes the documents and why a
stale writer always conflicts.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from bson import ObjectId
from pymongo import ASCENDING, DESCENDING, ReplaceOne, ReturnDocument
from pymongo.asynchronous.collection import AsyncCollection
from pymongo.asynchronous.cursor import AsyncCursor

from agent_stores.core import (
    CorruptRecordError,
    LogInfo,
    LogRecord,
    LogTail,
    LogVersion,
    StoreConflictError,
)
from agent_stores.core.cache import BoundedCache

from ._database import Document, MongoDBDatabase, utc_from_timestamp
from ._documents import check_key, key_range, too_large

__all__ = ["REMEMBERED_LOGS", "MongoDBLogDriver"]

#: Logs a driver remembers by default (their epoch, so a read finds head and batches in one query).
REMEMBERED_LOGS: Final = 4096
# Batch starts a driver remembers per log (so a windowed read asks for just the batches it needs).
_STARTS_KEPT: Final = 64
# Orphan batches (of logs the TTL monitor removed) examined per purge_expired call, at most.
_PURGE_SCAN: Final = 10_000

# The expiry of a log that never expires: far beyond any clock, inside int64.
_NEVER: Final = 2**62
# The head's sequence number: above every batch's, so a backward scan of a log returns it first.
_HEAD: Final = 2**62
# A retired head (a tombstone): expired by every clock, out of the TTL monitor's reach (no date),
# so it stays until whoever finds it has removed the incarnation's batches.
_RETIRE: Final[Document] = {"$set": {"t": 0, "z": 1}, "$unset": {"e": ""}}
# Head refreshes an append tries while other writers keep refreshing the same head.
_REFRESH_ATTEMPTS: Final = 4
# The batches of a log (never its head).
_BATCHES: Final[Document] = {"$lt": _HEAD}
# A delete claim: a document in the batch slot a conditional delete took (``z: 1``, no records).
_CLAIM: Final = "z"


def _check_log_key(key: str) -> str:
    """A log key. NUL is refused with ``ValueError`` (``drivers.py`` allows it; the core's keys never hold NUL).

    A log written under a key holding NUL read back empty on the wire-protocol stand-in.
    """
    if "\x00" in check_key(key):
        raise ValueError(f"log keys must not contain NUL: {key!r}")
    return key


def _parse_version(version: LogVersion) -> tuple[str, int] | None:
    """``"<epoch>:<length>"`` → ``(epoch, length)``; ``None`` when it cannot be one of ours."""
    if not isinstance(version, str):
        return None
    epoch, _, length = version.rpartition(":")
    if not epoch or not length.isdigit():
        return None
    return epoch, int(length)


def _new_epoch() -> str:
    return secrets.token_hex(8)


def _live(now: int) -> Document:
    """Live logs at ``now`` (milliseconds): those expiring after ``now`` (one indexable condition).

    Expiry is compared as an integer of milliseconds (``t``; :data:`_NEVER` without a ttl),
    exact on every server; the date ``e`` beside it exists for MongoDB's TTL monitor only.
    """
    return {"t": {"$gt": now}}


def _is_live(head: Document, now: int) -> bool:
    """What :func:`_live` selects, for a head already read."""
    expires = head.get("t")  # an int64 comes back as bson's Int64, a subclass of int
    return isinstance(expires, int) and not isinstance(expires, bool) and expires > now


def _head_doc(key: str, epoch: str, session_id: str, expires: int | None) -> Document:
    """A log's head: ``{_id: key, k: key, x: epoch, s: _HEAD, sid, t: expiry in ms, e: expiry date}``."""
    head: Document = {
        "_id": key,
        "k": key,
        "x": epoch,
        "s": _HEAD,
        "sid": session_id,
        "t": _NEVER if expires is None else expires,
    }
    if expires is not None:
        head["e"] = utc_from_timestamp(expires / 1000)
    return head


def _batch(key: str, epoch: str, start: int, records: Sequence[LogRecord], expires: int | None) -> Document:
    """One append: ``{_id: ObjectId, k: key, x: epoch, s: first sequence number, n, d: digests, p: payloads, t}``.

    Raises:
        ValueError: The document would exceed MongoDB's 16 MiB limit.
    """
    digests = [r.digest for r in records]
    payloads = [bytes(r.payload) for r in records]
    doc: Document = {
        "_id": ObjectId(),
        "k": key,
        "x": epoch,
        "s": start,
        "n": len(records),
        "d": digests,
        "p": payloads,
    }
    if expires is not None:
        doc["t"] = expires
    estimate = (
        256 + 2 * len(key.encode("utf-8")) + sum(len(p) + len(d) + 32 for p, d in zip(payloads, digests, strict=True))
    )
    if too_large(doc, estimate):
        raise ValueError(
            f"a batch of {len(records)} messages for log {key!r} exceeds MongoDB's 16 MiB document limit "
            "(a history batch is one document so that it is stored whole or not at all); save fewer or smaller "
            "messages at a time. Nothing was written."
        )
    return doc


def _short(key: str, docs: Sequence[Document], planned: int, count: int) -> bool:
    """Whether a scan for ``planned`` batches (after the head) may hold fewer than the newest ``count`` records."""
    batches = docs[1:]
    if len(batches) < planned:
        return False  # every batch there is was read
    try:
        return batches[-1]["s"] != 0 and _end(key, batches[0]) - batches[-1]["s"] < count
    except (CorruptRecordError, KeyError, TypeError):
        return True  # read again; the chain check then names what is wrong


def _gap(key: str, docs: Sequence[Document], count: int | None) -> str | None:
    """Where the newest-first batches ``docs`` break their chain, or ``None`` when unbroken."""
    covered = 0
    for i, doc in enumerate(docs):
        end = _end(key, doc)
        if i and end != docs[i - 1]["s"]:
            return f"batch {doc.get('_id')!r} ends at {end}, the next one starts at {docs[i - 1]['s']!r}"
        covered += end - doc["s"]
    if docs and (count is None or covered < count) and docs[-1]["s"] != 0:
        return f"its oldest batch {docs[-1].get('_id')!r} starts at {docs[-1]['s']!r}, not 0"
    return None


def _claim(key: str, epoch: str, start: int, expires: Any) -> Document:
    """A delete claim ``{_id: ObjectId, k: key, x: epoch, s: start, n: 0, z: 1, t}``: an append's slot at ``start``.

    It carries the expiry of the batch before it (the head's), so that
    :meth:`MongoDBLogDriver.purge_expired` finds it with the incarnation's batches once the TTL
    monitor removed the head.
    """
    doc: Document = {"_id": ObjectId(), "k": key, "x": epoch, "s": start, "n": 0, _CLAIM: 1}
    if isinstance(expires, int) and not isinstance(expires, bool):
        doc["t"] = expires
    return doc


def _corrupt(key: str, doc: Document, what: str) -> CorruptRecordError:
    return CorruptRecordError(f"history batch {doc.get('_id')!r} of log {key!r} is corrupt: {what}")


def _end(key: str, doc: Document) -> int:
    start, count = doc.get("s"), doc.get("n")
    if type(start) is not int or type(count) is not int or start < 0 or count <= 0:
        raise _corrupt(key, doc, "its sequence number or count is not a non-negative integer")
    return start + count


def _digests(key: str, doc: Document) -> list[str]:
    digests: Any = doc.get("d")
    if not _list_of(digests, str, doc.get("n")):
        raise _corrupt(key, doc, "its digests are not a list of strings of its count")
    return digests


def _payloads(key: str, doc: Document) -> list[bytes]:
    payloads: Any = doc.get("p")
    if not _list_of(payloads, bytes, doc.get("n")):
        raise _corrupt(key, doc, "its payloads are not a list of binary values of its count")
    return payloads


def _list_of(value: Any, kind: type, count: Any) -> bool:
    return type(value) is list and len(value) == count and all(type(item) is kind for item in value)  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]


async def _to_list(cursor: AsyncCursor[Document]) -> list[Document]:
    return await cursor.to_list()


@dataclass(frozen=True, slots=True)
class _Seen:
    """What a driver last saw of one log: its epoch and, once read or written, the end of the log.

    ``starts`` are the first sequence numbers of its newest batches in order (one unbroken run
    ending at ``end``, the log's length), so a windowed read asks for just the batches it needs.
    """

    epoch: str
    starts: tuple[int, ...] = ()
    end: int | None = None


class MongoDBLogDriver:
    """A :class:`~agent_stores.core.LogDriver` in one collection: a head per log and a batch per append.

    Costs (round trips): ``append`` on a known version 1 (one ordered ``update`` command: the
    batch, then the head's conditional refresh; the second statement is what catches a delete
    that came in between); creating a log 1 (one ordered ``insert`` of the first batch and the
    head); ``tail``, ``read`` (also ``read(last=N)``: the head and the newest batches, by one
    backward index scan with a limit: the batches holding the newest N records when this
    driver saw where they start, else N) and ``length`` 1 when this driver knows the log's
    epoch (it remembers the epoch and the newest batch starts of the last logs it wrote or
    read), else 2 (the head first); a windowed read after other processes appended, 2;
    ``delete`` 3 (retire, batches, tombstone); ``delete_if_version`` 5 (the end, a claim of the
    next batch slot, then as ``delete``); ``list_logs`` 1.
    Expiry: the head carries the expiry, refreshed by every append; reads treat an expired log
    as absent to the millisecond; MongoDB's TTL monitor removes expired heads about once a
    minute, and :meth:`purge_expired` removes their batches and finishes interrupted removals
    (a save that takes over an expired head still there removes them at once).

    Args:
        database: The shared database; closed by :meth:`aclose` only when it owns its client.
        clock: Seconds since the epoch, for expiry (tests may pass a fake clock).
        remembered_logs: How many logs this driver remembers (the epoch and newest batch starts
            of those it last wrote or read); a log it does not remember costs one more query
            (its head) on the next read. ``0`` remembers none.

    Raises:
        ValueError: ``remembered_logs`` is negative.
    """

    def __init__(
        self,
        database: MongoDBDatabase,
        *,
        clock: Callable[[], float] = time.time,
        remembered_logs: int = REMEMBERED_LOGS,
    ) -> None:
        if isinstance(remembered_logs, bool) or not isinstance(remembered_logs, int) or remembered_logs < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"remembered_logs must be a non-negative integer, got {remembered_logs!r}")
        self.database = database
        self._clock = clock
        # What this driver last saw of each log it wrote or read, so a read needs no separate head lookup.
        self._seen: BoundedCache[str, _Seen] = BoundedCache(max_entries=remembered_logs)

    def telemetry_attributes(self) -> dict[str, str | int]:
        """The database name, for the core's spans (see ``agent_stores.core.telemetry``)."""
        return {"db.namespace": self.database.name}

    def _now(self) -> int:
        """Now, in milliseconds since the epoch."""
        return round(self._clock() * 1000)

    def _history(self) -> AsyncCollection[Document]:
        return self.database.collection("history")

    async def _head(self, key: str, now: int) -> Document | None:
        """The live head of ``key`` (``None`` when absent or expired).

        Looked up by ``_id`` alone (a head is a few small fields) and checked here: the
        expiry is compared exactly as :func:`_live` would on the server.
        """
        head = await self.database.run("read log head", self._history().find_one, {"_id": key})
        return head if head is not None and _is_live(head, now) else None

    async def _scan(self, key: str, epoch: str, batches: int | None, fields: Document | None) -> list[Document]:
        """The head of incarnation ``epoch`` (if it still names it) and its newest ``batches`` batches (all without).

        One backward scan of the unique (k, x, s) index with a limit: the head sorts above every
        batch of its incarnation, so it comes first.
        """
        history = self._history()
        limit = 0 if batches is None else batches + 1

        async def fetch() -> list[Document]:
            return await history.find({"k": key, "x": epoch}, fields).sort("s", DESCENDING).limit(limit).to_list()

        return await self.database.run("read log", fetch)

    async def _snapshot(
        self, key: str, count: int | None, fields: Document | None
    ) -> tuple[str, list[Document]] | None:
        """The live log's epoch and its newest ``count`` batches (newest first), or ``None`` when absent.

        When this driver knows the log's epoch, one query reads the head and the batches; else
        the head is looked up first. The head decides: a scan that finds no head naming the
        epoch means the log was deleted or created anew since (the epoch is looked up again).
        The batches read must form one unbroken chain (each ending where the next starts, the
        oldest at 0 unless ``count`` records are covered); a gap means the log was deleted or
        expired while being read (then it is absent), or, if the head still names the same
        epoch, a corrupt log.
        """
        _check_log_key(key)
        now = self._now()
        if fields is not None:
            fields = {**fields, "t": 1, _CLAIM: 1}  # what the head needs, and a delete claim's mark
        known = self._seen.peek(key)
        epoch = None if known is None else known.epoch
        docs: list[Document] = []
        for looked_up in (False, True):
            if epoch is None or looked_up:
                head = await self._head(key, now)
                if head is None:
                    self._forget(key)
                    return None
                epoch = head["x"]
                looked_up = True
            # Every batch holds at least one record, so ``count`` batches always cover the newest
            # ``count`` records; the batch starts this driver remembers usually tell fewer.
            if count is None:
                docs = await self._scan(key, epoch, None, fields)
            else:
                enough = max(1, count)
                planned = self._batches_covering(key, epoch, enough)
                docs = await self._scan(key, epoch, planned, fields)
                if planned < enough and _short(key, docs, planned, enough):
                    # The log grew since this driver last saw it: as many batches as records wanted.
                    docs = await self._scan(key, epoch, enough, fields)
            if docs and docs[0].get("s") == _HEAD:
                break
            # No head names this epoch any more. Just after a look-up: deleted in between (absent).
            self._forget(key)
            if looked_up:
                return None
        assert epoch is not None
        if not _is_live(docs[0], now):
            self._forget(key)
            return None
        batches = docs[1:]
        if batches and batches[0].get(_CLAIM) is not None:
            # A conditional delete claimed the slot after the last batch: it won, and the log is
            # deleted (finish what it may have left undone; each step is idempotent).
            self._forget(key)
            await self._retire(key, epoch, {})
            await self._finish(key, epoch)
            return None
        self._remember(key, epoch)
        gap = _gap(key, batches, count)
        if gap is not None:
            again = await self._head(key, self._now())
            if again is None or again["x"] != epoch:
                self._forget(key)
                return None
            raise CorruptRecordError(f"log {key!r} is corrupt: {gap}")
        self._saw(key, epoch, [doc["s"] for doc in reversed(batches)], _end(key, batches[0]) if batches else 0)
        return epoch, batches

    def _remember(self, key: str, epoch: str) -> None:
        """Remember ``epoch`` as the live incarnation of ``key`` (what was seen of another epoch is dropped)."""
        known = self._seen.get(key)
        if known is None or known.epoch != epoch:
            self._seen.put(key, _Seen(epoch))

    def _forget(self, key: str) -> None:
        self._seen.pop(key)

    def _saw(self, key: str, epoch: str, starts: list[int], end: int) -> None:
        """Remember the end of the log as a read found it: ``starts`` of an unbroken run of its newest batches."""
        known = self._seen.peek(key)
        if known is not None and known.epoch == epoch and known.end == end and len(known.starts) >= len(starts):
            return  # already known, as far back or further
        self._seen.put(key, _Seen(epoch, tuple(starts[-_STARTS_KEPT:]), end))

    def _appended(self, key: str, epoch: str, start: int, count: int) -> None:
        """Remember the batch this driver just stored (continuing what it knew of the log's end, if it ended there)."""
        known = self._seen.peek(key)
        if known is not None and known.epoch == epoch and known.end == start:
            starts = (*known.starts[-_STARTS_KEPT + 1 :], start)
        else:
            starts = (start,)
        self._seen.put(key, _Seen(epoch, starts, start + count))

    def _batches_covering(self, key: str, epoch: str, count: int) -> int:
        """How many newest batches hold the newest ``count`` records, as far as this driver saw (else ``count``)."""
        known = self._seen.peek(key)
        if known is None or known.epoch != epoch or known.end is None:
            return count
        starts, end = known.starts, known.end
        for i in range(len(starts) - 1, -1, -1):
            if end - starts[i] >= count:
                return min(count, len(starts) - i)
        return max(1, len(starts)) if not starts or starts[0] == 0 else count

    async def tail(self, key: str, count: int) -> LogTail:
        """Return the live log's length, version and the digests of its last ``count`` records."""
        snapshot = await self._snapshot(key, max(0, count), {"s": 1, "n": 1, "d": 1})
        if snapshot is None:
            return LogTail(0, [], None)
        epoch, docs = snapshot
        if not docs:
            return LogTail(0, [], f"{epoch}:0")
        length = _end(key, docs[0])
        digests: list[str] = []
        for doc in docs:
            if len(digests) >= count:
                break
            digests[:0] = _digests(key, doc)
        return LogTail(length, digests[max(0, len(digests) - count) :] if count > 0 else [], f"{epoch}:{length}")

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        """Append ``records`` as one batch document if the live log is at ``expected_version``.

        Raises:
            ValueError: ``records`` is empty.
            StoreConflictError: The log is not at ``expected_version``; nothing was appended.
            ValueError: The batch would exceed MongoDB's 16 MiB document limit; nothing was written.
        """
        _check_log_key(key)
        now_s = self._clock()
        now = round(now_s * 1000)
        expires = None if ttl is None else round((now_s + ttl) * 1000)
        if not records:
            raise ValueError("append needs at least one record")
        if expected_version is None:
            return await self._create(key, records, session_id=session_id, now=now, expires=expires)
        parsed = _parse_version(expected_version)
        if parsed is None:
            raise StoreConflictError(f"log {key!r} is not at version {expected_version!r}")
        epoch, start = parsed
        batch = _batch(key, epoch, start, records, expires)
        # A whole-document replace (not $set): the head is rewritten with the same epoch and session id.
        head = _head_doc(key, epoch, session_id, expires)
        condition: Document = {"_id": key, "x": epoch, **_live(now)}
        writes = [ReplaceOne({"_id": batch["_id"]}, batch, upsert=True), ReplaceOne(condition, head)]
        # One command, two statements the server runs in order: the batch (an upsert of a fresh
        # ObjectId is an insert the unique (k, x, s) index decides; a duplicate key stops the
        # command), then the head's refresh, which tells whether the log was still live at this
        # epoch after the batch was stored.
        try:
            result = await self.database.run("append batch", self._history().bulk_write, writes)
        except StoreConflictError as err:
            raise StoreConflictError(f"log {key!r} is not at version {expected_version!r}") from err
        version = f"{epoch}:{start + len(records)}"
        if not result.matched_count:
            await self._settle(key, epoch, batch["_id"], (condition, head), now, expected_version)
        self._appended(key, epoch, start, len(records))
        return version

    async def _settle(
        self,
        key: str,
        epoch: str,
        batch_id: ObjectId,
        refresh: tuple[Document, Document],
        now: int,
        expected: LogVersion,
    ) -> None:
        """After a refresh that matched nothing: end the incarnation and raise, or refresh again and return."""
        history = self._history()
        for attempt in range(_REFRESH_ATTEMPTS):
            if attempt:
                result = await self.database.run("refresh log head", history.replace_one, *refresh)
                if result.matched_count:
                    return
            # Expired by this writer's clock: end the incarnation for every reader and writer
            # first (one conditional update), then remove it whole, this batch included. Another
            # writer whose clock disagrees may have built on this batch meanwhile; then the head
            # was refreshed after it and this update matches nothing.
            if await self._retire(key, epoch, {"t": {"$lte": now}}):
                await self._finish(key, epoch)
                raise StoreConflictError(f"log {key!r} expired; it is no longer at version {expected!r}")
            current = await self.database.run("read log head", history.find_one, {"_id": key}, {"x": 1, "t": 1})
            if current is None or current.get("x") != epoch:
                # Deleted or recreated: the incarnation is over for good (epochs never come back),
                # so no reader sees this batch and nothing can build on it: take it back.
                await self.database.run("withdraw batch", lambda: history.delete_one({"_id": batch_id}))
                self._forget(key)
                raise StoreConflictError(f"log {key!r} is no longer at version {expected!r}")
            # Refreshed by another writer since: the log is live after all, refresh again.
        raise StoreConflictError(f"log {key!r}: its head kept changing; nothing was acknowledged")

    async def _retire(self, key: str, epoch: Any, condition: Document) -> bool:
        """Turn the head of incarnation ``epoch`` into a tombstone if it matches ``condition``.

        A tombstone (``t: 0``, ``z: 1``, no TTL date) is absent for every reader by every clock
        and is never refreshed again; the incarnation's batches go next, then the tombstone
        (:meth:`_finish`). Whoever finds a tombstone (a delete, a purge, a save creating the log
        again) finishes the removal, so an interrupted delete or expiry is always completed.
        """
        result = await self.database.run(
            "retire log head", self._history().update_one, {"_id": key, "x": epoch, **condition}, _RETIRE
        )
        return result.matched_count > 0

    async def _finish(self, key: str, epoch: Any) -> None:
        """Remove a retired incarnation: its batches, then its tombstone (each step idempotent)."""
        history = self._history()
        await self.database.run("delete batches", history.delete_many, {"k": key, "x": epoch, "s": _BATCHES})
        await self.database.run("delete tombstone", history.delete_one, {"_id": key, "x": epoch, "z": 1})

    async def _create(
        self, key: str, records: Sequence[LogRecord], *, session_id: str, now: int, expires: int | None
    ) -> str:
        epoch = _new_epoch()
        batch = _batch(key, epoch, 0, records, expires)
        head = _head_doc(key, epoch, session_id, expires)
        history = self._history()
        try:
            # One ordered command: the first batch, then the head (a duplicate _id: the log exists).
            await self.database.run("create log", lambda: history.insert_many([batch, head]))
        except StoreConflictError as err:
            # A head exists: take its place only if it expired or is a tombstone (retire it, remove
            # the old incarnation, then create the head), else conflict.
            retired = await self.database.run(
                "retire expired log head",
                lambda: history.find_one_and_update(
                    {"_id": key, "t": {"$lte": now}}, _RETIRE, return_document=ReturnDocument.BEFORE
                ),
            )
            created = False
            if retired is not None:
                await self._finish(key, retired.get("x"))
                try:
                    await self.database.run("create log head", lambda: history.insert_one(head))
                    created = True
                except StoreConflictError:
                    pass  # another writer created the log first
            if not created:
                await self.database.run("withdraw batch", lambda: history.delete_one({"_id": batch["_id"]}))
                raise StoreConflictError(f"log {key!r} exists; expected it to be absent") from err
        self._appended(key, epoch, 0, len(records))
        return f"{epoch}:{len(records)}"

    async def read(self, key: str, *, last: int | None = None) -> list[bytes]:
        """Return the live log's payloads in append order; with ``last``, only the newest ``last`` (newest batches)."""
        if last is not None and last <= 0:
            return []
        # Whole documents: a projection would leave out only the digests, small beside the
        # payloads, and costs some servers more than it saves (the nx-27017 stand-in).
        snapshot = await self._snapshot(key, last, None)
        if snapshot is None:
            return []
        payloads: list[bytes] = []
        for doc in snapshot[1]:
            if last is not None and len(payloads) >= last:
                break
            payloads[:0] = _payloads(key, doc)
        return payloads if last is None else payloads[max(0, len(payloads) - last) :]

    async def length(self, key: str) -> int:
        """Return the live log's length (0 when absent or expired)."""
        snapshot = await self._snapshot(key, 1, {"s": 1, "n": 1})
        return _end(key, snapshot[1][0]) if snapshot and snapshot[1] else 0

    async def delete(self, key: str) -> bool:
        """Remove the log: retire its head (one operation: from then on it is absent), then its batches, then the head.

        Resumable: a delete interrupted after the first step leaves a tombstone that the next
        delete, purge or save of the same log finishes. Returns whether a live log was removed.
        """
        now = self._now()
        self._forget(key)
        head = await self.database.run(
            "retire log head",
            lambda: self._history().find_one_and_update(
                {"_id": _check_log_key(key)}, _RETIRE, return_document=ReturnDocument.BEFORE
            ),
        )
        if head is None:
            return False
        await self._finish(key, head.get("x"))
        expires = head.get("t")
        return head.get("z") is None and (not isinstance(expires, int) or expires > now)

    async def delete_if_version(self, key: str, version: LogVersion) -> bool:
        """Remove the log only if it is live and at ``version``; return ``True``.

        The delete claims the batch slot an append at ``version`` needs (an insert the unique
        ``(k, x, s)`` index decides, as appends race on): an append that got there first wins
        and the delete conflicts; once the claim is stored no append at ``version`` can land,
        and the removal goes on as :meth:`delete`'s (retire the head, remove the incarnation's
        documents, the claim included). A reader that meets a claim finishes the removal, so an
        interrupted conditional delete is completed by the next read or save of the log.
        Round trips: 5 (the version check, the claim, retire, batches, tombstone).

        Raises:
            StoreConflictError: The log is absent, expired or at another version; nothing was removed.
        """
        _check_log_key(key)
        parsed = _parse_version(version)
        conflict = StoreConflictError(f"log {key!r} is not at version {version!r}")
        if parsed is None:
            raise conflict
        epoch, length = parsed
        # The log's end now: a claim is only ever stored at the end of a live log, so a claim a
        # reader meets is always a delete that won. The end can then only move by an append at
        # ``length``, which the claim and that append decide between them.
        snapshot = await self._snapshot(key, 1, {"s": 1, "n": 1})
        if snapshot is None or snapshot[0] != epoch:
            raise conflict
        batches = snapshot[1]
        if (_end(key, batches[0]) if batches else 0) != length:
            raise conflict
        claim = _claim(key, epoch, length, batches[0].get("t") if batches else None)
        history = self._history()
        try:
            await self.database.run("claim log delete", history.insert_one, claim)
        except StoreConflictError as err:
            # A duplicate key: an append took the slot first, unless a retried insert (after a
            # lost reply) met the claim its first attempt stored.
            if await self.database.run("read log delete claim", history.find_one, {"_id": claim["_id"]}) is None:
                raise StoreConflictError(f"log {key!r} is no longer at version {version!r}") from err
        self._forget(key)
        await self._retire(key, epoch, {})
        await self._finish(key, epoch)
        return True

    async def list_logs(self, prefix: str, *, after: str | None = None, limit: int = 100) -> list[LogInfo]:
        """Return up to ``limit`` live logs under ``prefix`` in key order, after ``after`` (a range query).

        Batch ids are ObjectIds, never inside a range of strings: the range finds heads only
        (and the condition on ``s`` says so as well).
        """
        if limit <= 0:
            return []
        history = self._history()
        condition = {"_id": key_range(prefix, after=after), "s": _HEAD, **_live(self._now())}

        async def fetch() -> list[Document]:
            return await history.find(condition, {"sid": 1}).sort("_id", ASCENDING).limit(limit).to_list()

        docs = await self.database.run("list logs", fetch)
        return [LogInfo(doc["_id"], str(doc.get("sid", ""))) for doc in docs]

    async def purge_expired(self) -> int:
        """Remove every expired log now, and the batches of logs MongoDB's TTL monitor removed; return how many logs."""
        now = self._now()
        history = self._history()
        removed = 0
        expired = await self.database.run(
            "find expired heads", _to_list, history.find({"t": {"$lte": now}, "s": _HEAD}, {"x": 1})
        )
        for head in expired:
            key, epoch = head["_id"], head.get("x")
            # Expired heads and tombstones of interrupted deletes alike: retire, then remove whole.
            if await self._retire(key, epoch, {"t": {"$lte": now}}):
                removed += 1
                await self._finish(key, epoch)
        # Batches whose recorded expiry passed: their log is gone (TTL monitor), expired, or alive
        # with a later expiry on its head (then the batches' expiry is brought up to date).
        stale = await self.database.run(
            "find expired batches",
            _to_list,
            history.find({"t": {"$lte": now}, "s": _BATCHES}, {"k": 1, "x": 1}).limit(_PURGE_SCAN),
        )
        for key, epoch in dict.fromkeys((doc.get("k"), doc.get("x")) for doc in stale):
            head = await self.database.run("read log head", history.find_one, {"_id": key}, {"x": 1, "t": 1})
            if head is not None and head.get("x") == epoch:
                live_until = head.get("t")
                if not isinstance(live_until, int) or live_until > now:
                    # A live log's older batches: stop finding them. Its newest batch keeps the
                    # head's expiry, so the log is still found once it expires.
                    forget: Document = {"$unset": {"t": ""}}
                    condition: Document = {"k": key, "x": epoch, "s": _BATCHES, "t": {"$lte": now}}
                    await self.database.run("forget batch expiry", history.update_many, condition, forget)
                    continue
            await self.database.run("delete orphan batches", history.delete_many, {"k": key, "x": epoch, "s": _BATCHES})
            removed += 1
        return removed

    async def aclose(self) -> None:
        """Close the database if it owns its client."""
        await self.database.aclose()
