"""``ObjectCheckpointStorage``: the framework's ``CheckpointStorage`` over any :class:`ObjectDriver`.

Why an object driver and not a log: checkpoints are addressed by id (``load``/``delete`` take
no workflow name), replaced in place when an id is saved again, deleted one by one and
ordered by their ``timestamp``, not by arrival. A log gives only arrival order and whole-log
deletes; an object store with ordered prefix listing gives all four.

Layout, under ``prefix`` and the namespace's key segment ``<ns>``:

- ``<ns>/records/<id>.json`` - one checkpoint, in an envelope (see :func:`encode_record`)
  around exactly the JSON value the framework's ``FileCheckpointStorage`` writes.
- ``<ns>/workflows/<workflow>/<inverted timestamp>.<id>`` - an index entry per checkpoint.
  Its key sorts newest first, so ``get_latest`` reads the first entry of one listing page
  instead of every checkpoint of the workflow.

Ids and workflow names become key segments through :func:`~agent_stores.core.key_segment`
(injective; long values by SHA-256), so no id or name can reach another's key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, cast

from agent_framework import CheckpointStorage, WorkflowCheckpoint
from agent_framework._workflows._checkpoint_encoding import (  # the framework's own checkpoint encoding
    decode_checkpoint_value,
    encode_checkpoint_value,
)
from agent_framework.exceptions import WorkflowCheckpointException

from .drivers import ObjectDriver
from .errors import CorruptRecordError, StoreConflictError
from .keys import KeySpace, key_segment
from .lifecycle import OwnedResource

__all__ = [
    "CHECKPOINT_RECORD_FORMAT",
    "CorruptCheckpointError",
    "ObjectCheckpointStorage",
    "checkpoint_order_key",
    "decode_record",
    "encode_record",
]

logger = logging.getLogger(__name__)

#: The ``format`` field of every stored checkpoint envelope.
CHECKPOINT_RECORD_FORMAT = "agent-stores/checkpoint/1"

_EPOCH = datetime(1, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)
_ORDER_DIGITS = 18  # microseconds from year 1 to year 9999 fit in 18 digits
_ORDER_MAX = 10**_ORDER_DIGITS - 1
_PAGE = 64  # index entries per listing page
_PARALLEL = 32  # records fetched concurrently by list_checkpoints


class CorruptCheckpointError(CorruptRecordError, WorkflowCheckpointException):
    """A stored checkpoint could not be decoded; the message names its id and key.

    Both a :class:`~agent_stores.core.CorruptRecordError` (a ``ValueError``) and the
    framework's ``WorkflowCheckpointException``, which is what the workflow runner and
    ``FileCheckpointStorage`` raise for an unreadable checkpoint. Nothing was changed: the
    record stays for inspection until it is deleted.
    """


def _timestamp(checkpoint: WorkflowCheckpoint) -> datetime:
    raw: object = checkpoint.timestamp  # typed str, but nothing stops a caller passing another type
    if not isinstance(raw, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ValueError(f"checkpoint {checkpoint.checkpoint_id!r} has a non-string timestamp {raw!r}")
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError as err:
        raise ValueError(
            f"checkpoint {checkpoint.checkpoint_id!r} has a timestamp that is not ISO 8601: {raw!r}"
        ) from err
    # The framework writes aware UTC timestamps; a naive one is read as UTC.
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def checkpoint_order_key(checkpoint: WorkflowCheckpoint) -> str:
    """Return the fixed-width index prefix of ``checkpoint``: later timestamps sort first.

    Raises:
        ValueError: The timestamp is not an ISO 8601 string.
    """
    micros = (_timestamp(checkpoint) - _EPOCH) // _MICROSECOND
    return str(_ORDER_MAX - max(0, micros)).zfill(_ORDER_DIGITS)


def encode_record(
    checkpoint: WorkflowCheckpoint, *, allowed_types: frozenset[str], expires_at: float | None = None
) -> bytes:
    """Encode ``checkpoint`` through the framework's checkpoint encoding, in our envelope.

    The envelope is ``{"format": CHECKPOINT_RECORD_FORMAT, "expires_at": <unix seconds or
    null>, "checkpoint": <value>}`` where ``<value>`` is exactly what ``FileCheckpointStorage``
    writes to its file: ``encode_checkpoint_value(checkpoint.to_dict())`` as JSON. As in
    ``FileCheckpointStorage.save``, the encoded value is decoded once under ``allowed_types``
    first, so a checkpoint that could not be restored is refused before anything is written.

    Raises:
        WorkflowCheckpointException: The checkpoint cannot be encoded, or holds a type outside
            ``allowed_types`` (the framework's own refusal).
    """
    try:
        encoded = encode_checkpoint_value(checkpoint.to_dict())
        decode_checkpoint_value(encoded, allowed_types=allowed_types)
        text = json.dumps(
            {"format": CHECKPOINT_RECORD_FORMAT, "expires_at": expires_at, "checkpoint": encoded},
            ensure_ascii=False,
            separators=(",", ":"),
        )
    except WorkflowCheckpointException:
        raise
    except Exception as err:
        raise WorkflowCheckpointException(
            f"Checkpoint {checkpoint.checkpoint_id} cannot be encoded or restored under "
            "this storage's allowed types; refusing to save."
        ) from err
    return text.encode("utf-8")


class _Record(NamedTuple):
    checkpoint: WorkflowCheckpoint
    expires_at: float | None


def _envelope(data: bytes, *, where: str) -> tuple[dict[str, Any], float | None]:
    try:
        raw: object = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise CorruptCheckpointError(f"checkpoint {where} is not valid JSON (corrupt or truncated)") from err
    if not isinstance(raw, dict):
        raise CorruptCheckpointError(f"checkpoint {where} is not a checkpoint record")
    envelope = cast(dict[str, Any], raw)
    if envelope.get("format") != CHECKPOINT_RECORD_FORMAT:
        raise CorruptCheckpointError(
            f"checkpoint {where} has format {envelope.get('format')!r}, expected {CHECKPOINT_RECORD_FORMAT!r}"
        )
    expires_at: object = envelope.get("expires_at")
    body: object = envelope.get("checkpoint")
    if not isinstance(body, dict) or (
        expires_at is not None and (isinstance(expires_at, bool) or not isinstance(expires_at, int | float))
    ):
        raise CorruptCheckpointError(f"checkpoint {where} has a malformed envelope")
    return cast(dict[str, Any], body), None if expires_at is None else float(expires_at)


def decode_record(data: bytes, *, allowed_types: frozenset[str], where: str) -> tuple[WorkflowCheckpoint, float | None]:
    """Decode a record written by :func:`encode_record`; return the checkpoint and its expiry.

    Raises:
        CorruptCheckpointError: The bytes are not a checkpoint record (not JSON, truncated,
            wrong envelope, fields the checkpoint does not have).
        WorkflowCheckpointException: The payload names a type outside ``allowed_types``: the
            framework's own refusal, unchanged.
    """
    body, expires_at = _envelope(data, where=where)
    decoded = decode_checkpoint_value(body, allowed_types=allowed_types)
    try:
        checkpoint = WorkflowCheckpoint(**decoded)
    except TypeError as err:
        raise CorruptCheckpointError(f"checkpoint {where} does not hold checkpoint fields: {err}") from err
    return checkpoint, expires_at


class ObjectCheckpointStorage(OwnedResource, CheckpointStorage):
    """Workflow checkpoints as objects, through the framework's own checkpoint encoding.

    Contract (every backend, since the rules live here):

    - **Order.** Checkpoints of a workflow are ordered by ``timestamp`` (ISO 8601, a naive one
      read as UTC), never by ``iteration_count``. Checkpoints sharing a timestamp are ordered
      by lineage: one whose ``previous_checkpoint_id`` names another of them comes after it
      (depth in the chain among the tied checkpoints), then by ``checkpoint_id``.
      ``list_checkpoints`` and ``list_checkpoint_ids`` return this order oldest first, and
      ``get_latest`` returns the last of it.
    - **Paging.** ``get_latest`` reads one page of the workflow's index and the newest
      record(s), whatever the number of checkpoints; the listings read the index page by
      page.
    - **Save.** Saving an id that exists replaces that checkpoint (as the framework's
      ``InMemoryCheckpointStorage`` and ``FileCheckpointStorage`` do), also when its workflow
      name or timestamp changed. Checkpoint ids are global within a namespace, as in the
      framework's stores. Saves of different ids from any number of processes never lose
      one another; concurrent saves of one id are last-writer-wins.
    - **Retention.** With ``keep_last``, each save deletes the workflow's checkpoints beyond
      the newest ``keep_last``; with ``ttl``, a checkpoint expires ``ttl`` seconds after its
      save, reads as absent everywhere from then on, and is removed when a read meets it or
      by :meth:`purge_expired`.
    - **Restore safety.** Encoding and decoding are the framework's
      ``encode_checkpoint_value`` / ``decode_checkpoint_value`` with
      ``allowed_checkpoint_types`` (plus types registered with
      ``register_checkpoint_type``): a type outside the allow-list is refused at ``save``
      and at every read with the framework's ``WorkflowCheckpointException``. A corrupt or
      truncated record is a :class:`CorruptCheckpointError` naming the checkpoint - from
      ``load``, ``list_checkpoints`` and ``get_latest`` alike: never skipped silently.
      ``delete`` still removes it.

    Security posture:
        Checkpoints are stored as JSON with pickled (base64) values for non-JSON types, the
        framework's format: treat the backing store like application secrets, as the
        framework's own security notes require; the allow-list limits what a restore can
        instantiate but is not a security boundary. Keys are derived, never interpreted.

    Args:
        driver: The object driver; borrowed unless ``owns_driver``.
        prefix: Key prefix of every object (``""`` or ending with ``/``).
        namespace: Application prefix; namespaces never share a checkpoint.
        tenant: Keep every object under ``tenants/<tenant>/`` (what a tenant view passes).
        keep_last: Keep only the newest N checkpoints per workflow (``None``: all).
        ttl: Seconds after its save that a checkpoint expires (``None``: never).
        allowed_checkpoint_types: Extra ``"module:qualname"`` types a restore may
            instantiate, as for ``FileCheckpointStorage``.
        owns_driver: Close the driver on ``aclose()``.
        clock: Seconds since the epoch, for expiry (tests pass a fake one).

    Raises:
        ValueError: ``prefix`` does not end with ``/``, ``tenant`` is empty, or ``keep_last`` /
            ``ttl`` is not positive.
    """

    def __init__(
        self,
        driver: ObjectDriver,
        *,
        prefix: str = "checkpoints/",
        namespace: str = "",
        tenant: str | None = None,
        keep_last: int | None = None,
        ttl: float | None = None,
        allowed_checkpoint_types: Sequence[str] | None = None,
        owns_driver: bool = False,
        clock: Callable[[], float] = time.time,
    ) -> None:
        keys = KeySpace(namespace, tenant)
        if keep_last is not None and (isinstance(keep_last, bool) or keep_last < 1):
            raise ValueError(f"keep_last must be a positive integer or None, got {keep_last!r}")
        if ttl is not None and not ttl > 0:
            raise ValueError(f"ttl must be a positive number of seconds or None, got {ttl!r}")
        if isinstance(allowed_checkpoint_types, str):
            raise TypeError("allowed_checkpoint_types is a list of 'module:qualname' strings, not one string")
        super().__init__()
        self.driver = driver
        self.prefix = keys.under(prefix)
        self.namespace = namespace
        self.tenant = tenant
        self.keep_last = keep_last
        self.ttl = ttl
        self.allowed_types: frozenset[str] = frozenset(allowed_checkpoint_types or ())
        self._clock = clock
        self._root = f"{self.prefix}{keys.namespace_segment}/"
        self._adopt(driver, owned=owns_driver)

    # -- keys ----------------------------------------------------------------------------

    @staticmethod
    def _check_id(checkpoint_id: object) -> str:
        if not isinstance(checkpoint_id, str) or not checkpoint_id:
            raise ValueError(f"checkpoint ids are non-empty strings, got {checkpoint_id!r}")
        return checkpoint_id

    def _record_key(self, checkpoint_id: str) -> str:
        return f"{self._root}records/{key_segment(self._check_id(checkpoint_id))}.json"

    def record_key(self, checkpoint_id: str) -> str:
        """Return the driver key the record of ``checkpoint_id`` is stored under.

        For tools and tests that reach a stored record through ``driver`` directly (the
        conformance suite's ``corrupt_checkpoint`` fixture, see
        :func:`agent_stores.testing.corrupt_object_checkpoint`).

        Raises:
            ValueError: ``checkpoint_id`` is not a non-empty string.
        """
        return self._record_key(checkpoint_id)

    def _index_prefix(self, workflow_name: str) -> str:
        if not isinstance(workflow_name, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(f"workflow names are strings, got {workflow_name!r}")
        return f"{self._root}workflows/{key_segment(workflow_name)}/"

    def _index_key(self, checkpoint: WorkflowCheckpoint) -> str:
        order = checkpoint_order_key(checkpoint)
        return f"{self._index_prefix(checkpoint.workflow_name)}{order}.{key_segment(checkpoint.checkpoint_id)}"

    def _record_key_of_entry(self, index_key: str) -> str:
        segment = index_key.rsplit("/", 1)[1].split(".", 1)[1]
        return f"{self._root}records/{segment}.json"

    # -- records ---------------------------------------------------------------------------

    def _expired(self, expires_at: float | None) -> bool:
        return expires_at is not None and expires_at <= self._clock()

    async def _read(self, key: str, what: str) -> tuple[_Record, str] | None:
        stored = await self.driver.get(key)
        if stored is None:
            return None
        checkpoint, expires_at = decode_record(stored.data, allowed_types=self.allowed_types, where=what)
        return _Record(checkpoint, expires_at), stored.version

    async def _drop_entry(self, index_key: str, version: str | None) -> None:
        """Remove an index entry whose record is gone or elsewhere, unless it was rewritten meanwhile."""
        if version is None:
            return
        with contextlib.suppress(StoreConflictError):  # a save rewrote it after we looked: it is live again
            await self.driver.delete(index_key, if_version=version)

    async def _entry_record(self, index_key: str) -> WorkflowCheckpoint | None:
        """Return the live checkpoint an index entry points to, healing a dangling or stale entry.

        A live entry costs one read (its record). Only an entry that looks dangling or stale is
        looked at again: its version first, then its record once more, so it is dropped only
        if no save rewrote it after that version was read (a save writes the record before
        the entry).
        """
        record_key = self._record_key_of_entry(index_key)
        found = await self._read(record_key, f"at {record_key!r}")
        if found is not None and self._index_key(found[0].checkpoint) == index_key:
            return await self._live(found, record_key, index_key)
        entry_version = await self.driver.head(index_key)
        if entry_version is None:
            return None  # the entry is gone already
        found = await self._read(record_key, f"at {record_key!r}")
        if found is None or self._index_key(found[0].checkpoint) != index_key:
            # Deleted, or re-saved under another timestamp or workflow.
            await self._drop_entry(index_key, entry_version)
            return None
        return await self._live(found, record_key, index_key)

    async def _live(self, found: tuple[_Record, str], record_key: str, index_key: str) -> WorkflowCheckpoint | None:
        record, version = found
        if self._expired(record.expires_at):
            await self._remove(record_key, version, index_key)
            return None
        return record.checkpoint

    async def _remove(self, record_key: str, version: str, index_key: str) -> bool:
        """Delete one checkpoint: its index entry first (it disappears from listings), then its record."""
        await self.driver.delete(index_key)
        try:
            return await self.driver.delete(record_key, if_version=version)
        except StoreConflictError:
            return False  # saved again meanwhile: the new save owns the record

    async def _entries(self, workflow_name: str) -> list[str]:
        """Every index key of the workflow, newest first, page by page."""
        prefix = self._index_prefix(workflow_name)
        keys: list[str] = []
        after: str | None = None
        while True:
            page = await self.driver.list(prefix, delimiter=None, after=after, limit=_PAGE)
            keys.extend(k for k in page.keys if not k.endswith("/"))
            entries = [*page.keys, *page.prefixes]
            if len(entries) < _PAGE:
                return keys
            after = max(entries)

    # -- CheckpointStorage ---------------------------------------------------------------

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        """Store a copy of ``checkpoint`` and return its id, replacing any checkpoint with that id.

        Raises:
            TypeError: ``checkpoint`` is not a ``WorkflowCheckpoint``.
            ValueError: Its id is empty or not a string, or its timestamp is not ISO 8601.
            WorkflowCheckpointException: It cannot be encoded, or holds a type outside the
                allow-list (refused before anything is written, as ``FileCheckpointStorage`` does).
        """
        if not isinstance(checkpoint, WorkflowCheckpoint):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"expected a WorkflowCheckpoint, got {type(checkpoint).__name__}")
        checkpoint_id = self._check_id(checkpoint.checkpoint_id)
        index_key = self._index_key(checkpoint)
        expires_at = None if self.ttl is None else self._clock() + self.ttl
        data = encode_record(checkpoint, allowed_types=self.allowed_types, expires_at=expires_at)
        record_key = self._record_key(checkpoint_id)
        previous = await self.driver.get(record_key)
        await self.driver.put(record_key, data)
        await self.driver.put(index_key, json.dumps({"id": checkpoint_id, "nonce": uuid.uuid4().hex}).encode())
        if previous is not None:
            # An unreadable old record leaves a dangling entry, dropped when a read meets it.
            old = self._peek(previous.data, repr(record_key))
            if old is not None and old[0] != index_key:
                await self.driver.delete(old[0])
        if self.keep_last is not None:
            await self._trim(checkpoint.workflow_name, self.keep_last)
        return checkpoint_id

    def _peek(self, data: bytes, where: str) -> tuple[str, float | None] | None:
        """Return the index key and expiry of a record without decoding its values; ``None`` if unreadable."""
        try:
            body, expires_at = _envelope(data, where=where)
            stub = WorkflowCheckpoint(
                workflow_name=body["workflow_name"],
                graph_signature_hash="",
                checkpoint_id=body["checkpoint_id"],
                timestamp=body["timestamp"],
            )
            return self._index_key(stub), expires_at
        except (CorruptRecordError, KeyError, TypeError, ValueError):
            return None

    async def _trim(self, workflow_name: str, keep: int) -> None:
        prefix = self._index_prefix(workflow_name)
        page = await self.driver.list(prefix, delimiter=None, limit=keep + _PAGE)
        keys = [k for k in page.keys if not k.endswith("/")]
        if len(keys) <= keep:
            return
        boundary = keys[keep - 1].rsplit("/", 1)[1].split(".", 1)[0]
        tied = [k for k in keys if k.rsplit("/", 1)[1].split(".", 1)[0] == boundary]
        if len(tied) > 1:  # the N-th newest shares its timestamp: order the tie by lineage
            records = {k: await self._entry_record(k) for k in tied}
            live = [(k, cp) for k, cp in records.items() if cp is not None]
            ordered = [k for k, _ in reversed(_order_ties(live))]
            first = keys.index(tied[0])
            keys = [*keys[:first], *ordered, *(k for k in keys[first:] if k not in records)]
        for index_key in keys[keep:]:
            record_key = self._record_key_of_entry(index_key)
            stored = await self.driver.get(record_key)
            found = None if stored is None else self._peek(stored.data, repr(record_key))
            if stored is not None and (found is None or found[0] == index_key):
                await self._remove(record_key, stored.version, index_key)
            else:
                await self.driver.delete(index_key)  # dangling or stale: the record lives under another entry

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        """Return an independent copy of the checkpoint.

        Raises:
            WorkflowCheckpointException: No live checkpoint has this id, or it holds a type
                outside the allow-list (the framework's refusal).
            CorruptCheckpointError: The record is corrupt or truncated (also a
                ``WorkflowCheckpointException``).
            ValueError: ``checkpoint_id`` is empty or not a string.
        """
        key = self._record_key(checkpoint_id)
        found = await self._read(key, f"{checkpoint_id!r} at {key!r}")
        if found is None:
            raise WorkflowCheckpointException(f"No checkpoint found with ID {checkpoint_id}")
        record, version = found
        if self._expired(record.expires_at):
            await self._remove(key, version, self._index_key(record.checkpoint))
            raise WorkflowCheckpointException(f"No checkpoint found with ID {checkpoint_id} (it expired)")
        return record.checkpoint

    async def delete(self, checkpoint_id: str) -> bool:
        """Delete the checkpoint; return whether a live one existed. A corrupt record is deleted too.

        Raises:
            ValueError: ``checkpoint_id`` is empty or not a string.
        """
        key = self._record_key(checkpoint_id)
        stored = await self.driver.get(key)
        if stored is None:
            return False
        found = self._peek(stored.data, repr(key))
        if found is None:  # corrupt: its index entry is left dangling and dropped when a read meets it
            return await self.driver.delete(key, if_version=stored.version)
        index_key, expires_at = found
        return await self._remove(key, stored.version, index_key) and not self._expired(expires_at)

    async def get_latest(self, *, workflow_name: str) -> WorkflowCheckpoint | None:
        """Return the latest live checkpoint of ``workflow_name`` (see the order above), or ``None``.

        Reads index pages only until the newest live checkpoint is found.

        Raises:
            CorruptCheckpointError: The newest checkpoint (or one tied with it) is corrupt.
            WorkflowCheckpointException: It holds a type outside the allow-list.
        """
        prefix = self._index_prefix(workflow_name)
        after: str | None = None
        pending: list[str] = []
        while True:
            page = await self.driver.list(prefix, delimiter=None, after=after, limit=_PAGE)
            keys = [k for k in page.keys if not k.endswith("/")]
            last_page = len(page.keys) + len(page.prefixes) < _PAGE
            for key in keys:
                if pending and _order_of(key) != _order_of(pending[0]):
                    found = await self._newest_of(pending)
                    if found is not None:
                        return found
                    pending = []
                pending.append(key)
            if last_page:
                return await self._newest_of(pending) if pending else None
            after = max([*page.keys, *page.prefixes])

    async def _newest_of(self, tied: list[str]) -> WorkflowCheckpoint | None:
        live = [(k, cp) for k in tied if (cp := await self._entry_record(k)) is not None]
        if not live:
            return None
        return _order_ties(live)[-1][1]

    async def list_checkpoints(self, *, workflow_name: str) -> list[WorkflowCheckpoint]:
        """Return every live checkpoint of ``workflow_name``, oldest first (see the order above).

        Raises:
            CorruptCheckpointError: One of them is corrupt (named); nothing is skipped silently.
            WorkflowCheckpointException: One holds a type outside the allow-list.
        """
        keys = await self._entries(workflow_name)
        records: list[WorkflowCheckpoint | None] = []
        for start in range(0, len(keys), _PARALLEL):
            records.extend(await asyncio.gather(*(self._entry_record(k) for k in keys[start : start + _PARALLEL])))
        newest_first: list[WorkflowCheckpoint] = []
        group: list[tuple[str, WorkflowCheckpoint]] = []
        for key, checkpoint in zip(keys, records, strict=True):
            if checkpoint is None:
                continue
            if group and _order_of(key) != _order_of(group[0][0]):
                newest_first.extend(cp for _, cp in reversed(_order_ties(group)))
                group = []
            group.append((key, checkpoint))
        newest_first.extend(cp for _, cp in reversed(_order_ties(group)))
        return newest_first[::-1]

    async def list_checkpoint_ids(self, *, workflow_name: str) -> list[str]:
        """Return the ids of :meth:`list_checkpoints`, in its order (the records are read, so both agree)."""
        return [cp.checkpoint_id for cp in await self.list_checkpoints(workflow_name=workflow_name)]

    # -- administration --------------------------------------------------------------------

    async def purge_expired(self) -> int:
        """Remove every expired checkpoint of this namespace now; return how many were removed."""
        removed = 0
        after: str | None = None
        prefix = f"{self._root}workflows/"
        while True:
            page = await self.driver.list(prefix, delimiter=None, after=after, limit=_PAGE)
            for index_key in page.keys:
                if index_key.endswith("/"):
                    continue
                record_key = self._record_key_of_entry(index_key)
                stored = await self.driver.get(record_key)
                found = None if stored is None else self._peek(stored.data, repr(record_key))
                if stored is None or found is None or found[0] != index_key or not self._expired(found[1]):
                    continue
                if await self._remove(record_key, stored.version, index_key):
                    removed += 1
            entries = [*page.keys, *page.prefixes]
            if len(entries) < _PAGE:
                return removed
            after = max(entries)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.driver!r}, prefix={self.prefix!r}, namespace={self.namespace!r})"


def _order_of(index_key: str) -> str:
    return index_key.rsplit("/", 1)[1].split(".", 1)[0]


def _order_ties(group: Iterable[tuple[str, WorkflowCheckpoint]]) -> list[tuple[str, WorkflowCheckpoint]]:
    """Order checkpoints sharing one timestamp: by depth in their lineage among themselves, then by id."""
    members = list(group)
    by_id = {cp.checkpoint_id: cp for _, cp in members}

    def depth(checkpoint: WorkflowCheckpoint) -> int:
        seen = {checkpoint.checkpoint_id}
        current, steps = checkpoint, 0
        while current.previous_checkpoint_id in by_id and current.previous_checkpoint_id not in seen:
            current = by_id[current.previous_checkpoint_id]
            seen.add(current.checkpoint_id)
            steps += 1
        return steps

    return sorted(members, key=lambda item: (depth(item[1]), item[1].checkpoint_id))
