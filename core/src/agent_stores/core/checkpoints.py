"""``ObjectCheckpointStorage``: the framework's ``CheckpointStorage`` over any :class:`ObjectDriver`.

Why an object driver and not a log: checkpoints are addressed by id (``load``/``delete`` take
no workflow name), replaced in place when an id is saved again, deleted one by one and
ordered by their ``timestamp``, not by arrival. A log gives only arrival order and whole-log
deletes; an object store with ordered prefix listing gives all four.

Layout, under ``prefix`` and the namespace's key segment ``<ns>``:

- ``<ns>/records/<id>.json`` - one checkpoint, in an envelope (see :func:`encode_record`)
  around exactly the JSON value the framework's ``FileCheckpointStorage`` writes.
- ``<ns>/workflows/<workflow>/<inverted timestamp>.<id>~<expiry>`` - an index entry per
  checkpoint. Its key sorts newest first, so ``get_latest`` reads the first entry of one
  listing page instead of every checkpoint of the workflow, and it holds what a listing needs
  (order, id, expiry: ``repr`` of the unix time, empty for none), so ``list_checkpoint_ids``
  reads keys, not records. Entries of release 0.1 have no ``~<expiry>``: a listing reads their
  record, and ``agent-stores upgrade`` rewrites them (:meth:`ObjectCheckpointStorage.upgrade_index`).
- ``<ns>/moving/<id>`` - a marker while a save moves a checkpoint to another entry (a new
  timestamp, workflow or expiry) or a delete removes a record it cannot read: until it is
  gone, listings read the record of every entry of that id instead of trusting the index.

Ids and workflow names become key segments through :func:`~agent_stores.core.key_segment`
(injective; long values by SHA-256), so no id or name can reach another's key.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import sys
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple, cast

import msgspec
from agent_framework import CheckpointStorage, WorkflowCheckpoint
from agent_framework._workflows._checkpoint_encoding import (  # the framework's own checkpoint encoding
    decode_checkpoint_value,
    encode_checkpoint_value,
)
from agent_framework.exceptions import WorkflowCheckpointException

from .drivers import ObjectDriver, OrderedPut, StoredObject, put_in_order
from .errors import CorruptRecordError, StoreConflictError
from .keys import KeySpace, decode_segment, key_segment
from .lifecycle import OwnedResource
from .telemetry import store_operation

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
_PAGE = 64  # index entries per listing page where the first few decide (get_latest, trims)
_EXPIRY = "~"  # between an entry's id segment and its expiry; never inside a segment (only first)
_PARALLEL = 32  # records fetched concurrently by list_checkpoints (one get each)
_BATCH = 256  # records of trusted entries asked for at once (get_many if the driver offers it)
_JSON_DECODE: Callable[[bytes], object] = msgspec.json.Decoder().decode
# The key the framework's encoding marks a pickled value with (``{"__pickled__": ..., "__type__": ...}``),
# read from the framework itself: a record whose bytes never spell it holds no value to unpickle.
_PICKLED = next(iter(cast(dict[str, object], encode_checkpoint_value(frozenset[int]())))).encode()
_PICKLED_TEXT = _PICKLED.decode()
#: Every byte but the two that open a JSON container: ``len(data.translate(None, _NOT_OPENING))`` counts them.
_NOT_OPENING = bytes(sorted(set(range(256)) - set(b"{[")))


class CorruptCheckpointError(CorruptRecordError, WorkflowCheckpointException):
    """A stored checkpoint could not be decoded; the message names its id and key.

    Both a :class:`~agent_stores.core.CorruptRecordError` (a ``ValueError``) and the
    framework's ``WorkflowCheckpointException``, which is what the workflow runner and
    ``FileCheckpointStorage`` raise for an unreadable checkpoint. Nothing was changed: the
    record stays for inspection until it is deleted.
    """


def _order(timestamp: object, what: str) -> str:
    """Return the fixed-width index prefix of ``timestamp``; a naive timestamp is read as UTC.

    Raises:
        ValueError: ``timestamp`` is not an ISO 8601 string (the message starts with ``what``).
    """
    if not isinstance(timestamp, str):
        raise ValueError(f"{what} has a non-string timestamp {_clip(timestamp)}")
    try:
        moment = datetime.fromisoformat(timestamp)
    except ValueError as err:
        raise ValueError(f"{what} has a timestamp that is not ISO 8601: {_clip(timestamp)}") from err
    # The framework writes aware UTC timestamps; a naive one is read as UTC.
    moment = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    micros = (moment - _EPOCH) // _MICROSECOND
    return str(_ORDER_MAX - max(0, micros)).zfill(_ORDER_DIGITS)


def _clip(value: object) -> str:
    """``repr(value)``, cut short: a crafted field may be megabytes long."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}...({len(text)} chars)"


def checkpoint_order_key(checkpoint: WorkflowCheckpoint) -> str:
    """Return the fixed-width index prefix of ``checkpoint``: later timestamps sort first.

    Raises:
        ValueError: The timestamp is not an ISO 8601 string.
    """
    return _order(checkpoint.timestamp, f"checkpoint {_clip(checkpoint.checkpoint_id)}")


def encode_record(
    checkpoint: WorkflowCheckpoint, *, allowed_types: frozenset[str], expires_at: float | None = None
) -> bytes:
    """Encode ``checkpoint`` through the framework's checkpoint encoding, in our envelope.

    The envelope is ``{"format": CHECKPOINT_RECORD_FORMAT, "expires_at": <unix seconds or
    null>, "checkpoint": <value>}`` where ``<value>`` is exactly what ``FileCheckpointStorage``
    writes to its file: ``encode_checkpoint_value(checkpoint.to_dict())`` as JSON. As in
    ``FileCheckpointStorage.save``, the encoded value is decoded once under ``allowed_types``
    (unless its JSON holds no pickled value and little nesting: that decode could not refuse
    it), so a checkpoint that could not be restored is refused before anything is written.

    Raises:
        WorkflowCheckpointException: The checkpoint cannot be encoded, or holds a type outside
            ``allowed_types`` (the framework's own refusal).
    """
    try:
        encoded = encode_checkpoint_value(checkpoint.to_dict())
        text = json.dumps(
            {"format": CHECKPOINT_RECORD_FORMAT, "expires_at": expires_at, "checkpoint": encoded},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        # The decode can refuse only a pickled value (or nesting past the recursion limit). JSON
        # text that never spells the pickle marker (ASCII, so never escaped here) with few enough
        # brackets holds neither: the decode would rebuild an equal value, and is skipped.
        if not _plain_text(text):
            decode_checkpoint_value(encoded, allowed_types=allowed_types)
    except WorkflowCheckpointException:
        raise
    except Exception as err:
        raise WorkflowCheckpointException(
            f"Checkpoint {checkpoint.checkpoint_id} cannot be encoded or restored under "
            "this storage's allowed types; refusing to save."
        ) from err
    return text.encode("utf-8")


class _RecordHeader(NamedTuple):
    """The fields of a stored checkpoint that place it: what every reader checks before trusting it."""

    checkpoint_id: str
    workflow_name: str
    #: The index prefix of its timestamp (see :func:`checkpoint_order_key`).
    order: str
    expires_at: float | None


#: Fields every stored checkpoint holds (a missing one would get a fresh default: a new id, "now").
_REQUIRED = ("workflow_name", "graph_signature_hash", "checkpoint_id", "timestamp")
#: Further fields that must be strings when present.
_STRINGS = ("graph_signature_hash", "version")
#: Fields that must decode to a mapping.
_MAPPINGS = ("messages", "state", "pending_request_info_events", "metadata")


def _parse(data: bytes) -> object:
    """``json.loads`` of the UTF-8 ``data``: msgspec's parser, which either agrees with it or refuses.

    Where msgspec refuses (``NaN``, a lone surrogate, a number out of its range, bytes that are
    not JSON) the standard library parses, so what is accepted, and how, is ``json.loads``'s.
    """
    try:
        return _JSON_DECODE(data)
    except Exception:  # any refusal: the standard library's answer (a value or its error)
        return json.loads(data.decode("utf-8"))


def _envelope(data: bytes, *, where: str) -> tuple[dict[str, Any], float | None]:
    try:
        raw: object = _parse(data)
    except (UnicodeDecodeError, ValueError, RecursionError) as err:
        raise CorruptCheckpointError(
            f"checkpoint {where} is not valid JSON (corrupt, truncated or nested too deeply)"
        ) from err
    if not isinstance(raw, dict):
        raise CorruptCheckpointError(f"checkpoint {where} is not a checkpoint record")
    envelope = cast(dict[str, Any], raw)
    if envelope.get("format") != CHECKPOINT_RECORD_FORMAT:
        raise CorruptCheckpointError(
            f"checkpoint {where} has format {_clip(envelope.get('format'))}, expected {CHECKPOINT_RECORD_FORMAT!r}"
        )
    expires_at: object = envelope.get("expires_at")
    body: object = envelope.get("checkpoint")
    if not isinstance(body, dict) or (
        expires_at is not None and (isinstance(expires_at, bool) or not isinstance(expires_at, int | float))
    ):
        raise CorruptCheckpointError(f"checkpoint {where} has a malformed envelope")
    return cast(dict[str, Any], body), None if expires_at is None else float(expires_at)


def _header(data: bytes, *, where: str) -> tuple[dict[str, Any], _RecordHeader]:
    """Parse the envelope and check the fields that need no value decoded (see :func:`decode_record`).

    Raises:
        CorruptCheckpointError: One is missing, or of the wrong type or shape.
    """
    body, expires_at = _envelope(data, where=where)
    missing = [name for name in _REQUIRED if name not in body]
    if missing:
        raise CorruptCheckpointError(f"checkpoint {where} lacks {', '.join(missing)}")
    checkpoint_id: object = body["checkpoint_id"]
    workflow_name: object = body["workflow_name"]
    previous: object = body.get("previous_checkpoint_id")
    iteration: object = body.get("iteration_count", 0)
    if not isinstance(checkpoint_id, str) or not checkpoint_id:
        raise CorruptCheckpointError(
            f"checkpoint {where} has checkpoint_id {_clip(checkpoint_id)}, not a non-empty string"
        )
    if not isinstance(workflow_name, str):
        raise CorruptCheckpointError(f"checkpoint {where} has workflow_name {_clip(workflow_name)}, not a string")
    if previous is not None and not isinstance(previous, str):
        raise CorruptCheckpointError(
            f"checkpoint {where} has previous_checkpoint_id {_clip(previous)}, not a string or null"
        )
    if isinstance(iteration, bool) or not isinstance(iteration, int):
        raise CorruptCheckpointError(f"checkpoint {where} has iteration_count {_clip(iteration)}, not an integer")
    for name in _STRINGS:
        if name in body and not isinstance(body[name], str):
            raise CorruptCheckpointError(f"checkpoint {where} has {name} {_clip(body[name])}, not a string")
    try:
        key_segment(checkpoint_id)
        key_segment(workflow_name)
    except ValueError as err:  # a lone surrogate: no UTF-8 form, so no key
        raise CorruptCheckpointError(f"checkpoint {where} has an id or workflow name that is not Unicode") from err
    try:
        order = _order(body["timestamp"], f"checkpoint {where}")
    except ValueError as err:
        raise CorruptCheckpointError(str(err)) from err
    return body, _RecordHeader(checkpoint_id, workflow_name, order, expires_at)


def decode_record(data: bytes, *, allowed_types: frozenset[str], where: str) -> tuple[WorkflowCheckpoint, float | None]:
    """Decode a record written by :func:`encode_record`; return the checkpoint and its expiry.

    Every field is checked before the checkpoint is built, so what comes back is safe to order
    and index: ``checkpoint_id`` a non-empty string, ``workflow_name`` and
    ``graph_signature_hash`` strings, ``timestamp`` an ISO 8601 string, ``previous_checkpoint_id``
    a string or ``None``, ``iteration_count`` an integer, ``version`` a string, and
    ``messages``, ``state``, ``pending_request_info_events`` and ``metadata`` mappings.

    Raises:
        CorruptCheckpointError: The bytes are not a checkpoint record (not UTF-8 or JSON,
            truncated, nested too deeply, wrong envelope, a field missing or of the wrong type
            or shape, fields the checkpoint does not have); ``where`` names it.
        WorkflowCheckpointException: The payload names a type outside ``allowed_types``: the
            framework's own refusal, unchanged.
    """
    checkpoint, header = _decode_checked(data, allowed_types=allowed_types, where=where)
    return checkpoint, header.expires_at


def _plain(data: bytes) -> bool:
    r"""Whether the framework's decoding of this record's parsed value is that value itself.

    ``decode_checkpoint_value`` only unpickles mappings holding its pickle marker and rebuilds
    every other mapping and list as it is. Bytes that do not spell the marker (literally, or with
    an escape: its characters are ASCII, so an escape of one is ``\u00``; where the bytes hold no
    backslash at all, that search is skipped) and with few enough brackets that the framework's
    recursion could not run out of stack (where it raises) decode to an equal value, so the
    freshly parsed value is used as it is instead of being copied node by node. Each test is one
    pass of C over the bytes, a fraction of the copy it saves.
    """
    return (
        _PICKLED not in data
        and (b"\\" not in data or b"\\u00" not in data)
        and len(data.translate(None, _NOT_OPENING)) <= sys.getrecursionlimit() // 4
    )


def _plain_text(text: str) -> bool:
    """Whether JSON text ``json.dumps`` wrote holds no pickled value and nests too little to exhaust the stack.

    :func:`_plain` for our own text: ``json.dumps`` writes every key as it is (the marker is
    ASCII, never escaped), so a value holding the marker spells it; brackets are counted as
    there, strings' own included.
    """
    return _PICKLED_TEXT not in text and text.count("{") + text.count("[") <= sys.getrecursionlimit() // 4


def _decode_checked(
    data: bytes, *, allowed_types: frozenset[str], where: str
) -> tuple[WorkflowCheckpoint, _RecordHeader]:
    body, header = _header(data, where=where)
    try:
        decoded: object = body if _plain(data) else decode_checkpoint_value(body, allowed_types=allowed_types)
    except RecursionError as err:
        raise CorruptCheckpointError(f"checkpoint {where} is nested too deeply to decode") from err
    if not isinstance(decoded, dict):
        raise CorruptCheckpointError(f"checkpoint {where} is not a checkpoint record")
    decoded = cast(dict[str, Any], decoded)
    for name in _MAPPINGS:
        if name in decoded and not isinstance(decoded[name], dict):
            raise CorruptCheckpointError(
                f"checkpoint {where} has {name} of type {type(decoded[name]).__name__}, not a mapping"
            )
    try:
        checkpoint = WorkflowCheckpoint(**decoded)
    except TypeError as err:
        raise CorruptCheckpointError(f"checkpoint {where} does not hold checkpoint fields: {err}") from err
    return checkpoint, header


class _Record(NamedTuple):
    checkpoint: WorkflowCheckpoint
    expires_at: float | None
    index_key: str


class _Entry(NamedTuple):
    """What an index entry's key says about its checkpoint."""

    order: str
    segment: str
    #: Written by this release (expiry in the key): a listing may answer from the key alone.
    indexed: bool
    expires_at: float | None


def _parse_entry(index_key: str) -> _Entry:
    name = index_key.rsplit("/", 1)[1]
    order, _, tail = name.partition(".")
    cut = tail.rfind(_EXPIRY)
    if cut <= 0:  # release 0.1: no expiry (a segment starts with "~" at most)
        return _Entry(order, tail, False, None)
    expiry = tail[cut + 1 :]
    try:
        expires_at = float(expiry) if expiry else None
    except ValueError:
        return _Entry(order, tail, False, None)  # not ours: its record decides (none: dropped)
    return _Entry(order, tail[:cut], True, expires_at)


async def remove_checkpoint(driver: ObjectDriver, record_key: str, version: str, index_key: str) -> bool:
    """Delete one checkpoint unless it was saved again meanwhile: its index entry first, then its record.

    The entry's version is read, then the record's is checked to be still ``version``; the
    entry is deleted only at its version and the record only at ``version``. A save of the
    same id landing meanwhile therefore keeps both: its record makes the record check or
    delete fail, and its entry, written after its record, either makes the entry delete
    fail or is written again after it. Stopped between the two deletes, the record is an
    orphan (loadable, never listed, as after a stopped save), so a listing never names a
    checkpoint that is gone. Returns whether this call deleted it.
    """
    entry_version = await driver.head(index_key)
    if await driver.head(record_key) != version:
        return False  # saved again (or removed) meanwhile: the new save owns the record and its entry
    if entry_version is not None:
        try:
            await driver.delete(index_key, if_version=entry_version)
        except StoreConflictError:
            return False  # a save rewrote the entry: it owns the record too
    try:
        await driver.delete(record_key, if_version=version)
    except StoreConflictError:
        return False  # saved again meanwhile: its entry is written after its record
    return True


def index_entry_parts(index_key: str) -> tuple[str, str]:
    """An index entry key's order (inverted microseconds) and its record's id segment, whichever release wrote it."""
    entry = _parse_entry(index_key)
    return entry.order, entry.segment


def _id_of(segment: str) -> str | None:
    """The checkpoint id a segment stands for (``None``: a digest of a long id).

    ``key_segment`` keeps only literal-safe ids verbatim, and every other segment starts with
    ``~``, so a segment without it is the id: the framework's literal check is not run again
    for each of thousands of listed keys.
    """
    return segment if not segment.startswith("~") else decode_segment(segment)


def _matches(index_key: str, exact: str) -> bool:
    """Whether an entry places the record whose entry key is ``exact`` (a 0.1 entry: without its expiry)."""
    return index_key == exact or (not _parse_entry(index_key).indexed and index_key == exact[: exact.rfind(_EXPIRY)])


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
      one another; concurrent saves of one id are last-writer-wins, and a removal (``delete``,
      a trim, an expiry) racing a save of the same id never leaves it loadable but unlisted.
    - **Stopped saves.** A save writes its record, then its index entry (for a new id in one
      round trip where the driver writes in order: see ``OrderedPutDriver``, which never
      stores the entry without the record, whenever it is stopped). Stopped in between
      (a killed process, a lost connection), a new checkpoint is an *orphan*: never listed,
      nor returned by ``get_latest``, nor counted by ``keep_last``; ``load`` of its id still
      returns it until it expires (the record is whole: only its announcement failed), a
      save of the same id indexes it, and :meth:`purge_expired` removes it once expired. A
      re-save under another timestamp or workflow writes its new index entry first as well,
      so, stopped at any point, the checkpoint stays listed (old or new, never neither).
    - **Retention.** With ``keep_last``, each save deletes the workflow's checkpoints beyond
      the newest ``keep_last``; with ``ttl``, a checkpoint expires ``ttl`` seconds after its
      save, reads as absent everywhere from then on, and is removed when a read meets it or
      by :meth:`purge_expired`.
    - **Restore safety.** Encoding and decoding are the framework's
      ``encode_checkpoint_value`` / ``decode_checkpoint_value`` with
      ``allowed_checkpoint_types`` (plus types registered with
      ``register_checkpoint_type``): a type outside the allow-list is refused at ``save``
      and at every read with the framework's ``WorkflowCheckpointException``. A corrupt or
      truncated record, or one with a field of the wrong type or shape (see
      :func:`decode_record`) or stored under another id's key, is a
      :class:`CorruptCheckpointError` naming the checkpoint's id and key - from ``load``,
      ``list_checkpoints``, ``list_checkpoint_ids`` and ``get_latest`` alike: never skipped
      silently, never returned. ``delete`` still removes it.

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

    @property
    def root(self) -> str:
        """The key prefix every object of this storage lies under (its namespace's, in its tenant's root)."""
        return self._root

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

    def _entry_key(self, header: _RecordHeader) -> str:
        expiry = "" if header.expires_at is None else repr(header.expires_at)
        segment = key_segment(header.checkpoint_id)
        return f"{self._index_prefix(header.workflow_name)}{header.order}.{segment}{_EXPIRY}{expiry}"

    def _index_key(self, checkpoint: WorkflowCheckpoint, expires_at: float | None = None) -> str:
        order = checkpoint_order_key(checkpoint)
        return self._entry_key(_RecordHeader(checkpoint.checkpoint_id, checkpoint.workflow_name, order, expires_at))

    def _record_key_of_entry(self, index_key: str) -> str:
        return f"{self._root}records/{_parse_entry(index_key).segment}.json"

    def _marker_key(self, segment: str) -> str:
        return f"{self._root}moving/{segment}"

    # -- records ---------------------------------------------------------------------------

    def _where(self, record_key: str, checkpoint_id: str | None = None) -> str:
        """Name a record in errors: its id (when known or reversible from the key) and its key."""
        if checkpoint_id is None:
            checkpoint_id = _id_of(record_key.rsplit("/", 1)[1].removesuffix(".json"))
        return f"{record_key!r}" if checkpoint_id is None else f"{_clip(checkpoint_id)} at {record_key!r}"

    def _check_key(self, checkpoint_id: str, record_key: str, where: str) -> None:
        if self._record_key(checkpoint_id) != record_key:
            raise CorruptCheckpointError(
                f"checkpoint {where} holds checkpoint_id {_clip(checkpoint_id)}, not its key's id"
            )

    def _decode(self, data: bytes, record_key: str, checkpoint_id: str | None = None) -> _Record:
        """The one decode step of every reader: :func:`decode_record`, under the key of the id it holds.

        Raises:
            CorruptCheckpointError: The record is corrupt, of the wrong shape, or under another
                id's key (named by id and key).
            WorkflowCheckpointException: It holds a type outside the allow-list.
        """
        where = self._where(record_key, checkpoint_id)
        checkpoint, header = _decode_checked(data, allowed_types=self.allowed_types, where=where)
        self._check_key(header.checkpoint_id, record_key, where)
        return _Record(checkpoint, header.expires_at, self._entry_key(header))

    def _peek(self, data: bytes, record_key: str) -> tuple[str, float | None] | None:
        """Return the index key and expiry of a record, checked but with no value decoded; ``None`` if corrupt."""
        where = self._where(record_key)
        try:
            _, header = _header(data, where=where)
            self._check_key(header.checkpoint_id, record_key, where)
        except CorruptCheckpointError:
            return None
        return self._entry_key(header), header.expires_at

    def _expired(self, expires_at: float | None) -> bool:
        return expires_at is not None and expires_at <= self._clock()

    async def _read(self, key: str, checkpoint_id: str | None = None) -> tuple[_Record, str] | None:
        stored = await self.driver.get(key)
        if stored is None:
            return None
        return self._decode(stored.data, key, checkpoint_id), stored.version

    async def _drop_entry(self, index_key: str, version: str | None) -> None:
        """Remove an index entry whose record is gone or elsewhere, unless it was rewritten meanwhile."""
        if version is None:
            return
        with contextlib.suppress(StoreConflictError):  # a save rewrote it after we looked: it is live again
            await self.driver.delete(index_key, if_version=version)

    async def _drop_if_stale(self, index_key: str) -> None:
        """Drop an index entry whose record is gone or placed elsewhere, as it stands after the entry's version is read.

        The version is read first and the record after it, so an entry a save rewrote meanwhile
        (a save's last write is always its entry) survives.
        """
        entry_version = await self.driver.head(index_key)
        if entry_version is None:
            return
        record_key = self._record_key_of_entry(index_key)
        stored = await self.driver.get(record_key)
        found = None if stored is None else self._peek(stored.data, record_key)
        if stored is None or (found is not None and not _matches(index_key, found[0])):
            await self._drop_entry(index_key, entry_version)

    async def _entry_record(self, index_key: str) -> WorkflowCheckpoint | None:
        """Return the live checkpoint an index entry points to, healing a dangling or stale entry.

        A live entry costs one read (its record). Only an entry that looks dangling or stale is
        looked at again: its version first, then its record once more, so it is dropped only
        if no save rewrote it after that version was read (a save's last write is its entry).
        """
        record_key = self._record_key_of_entry(index_key)
        found = await self._read(record_key)
        if found is not None and _matches(index_key, found[0].index_key):
            return await self._live(found, record_key)
        entry_version = await self.driver.head(index_key)
        if entry_version is None:
            return None  # the entry is gone already
        found = await self._read(record_key)
        if found is None or not _matches(index_key, found[0].index_key):
            # Deleted, or re-saved under another timestamp or workflow.
            await self._drop_entry(index_key, entry_version)
            return None
        return await self._live(found, record_key)

    async def _live(self, found: tuple[_Record, str], record_key: str) -> WorkflowCheckpoint | None:
        record, version = found
        if self._expired(record.expires_at):
            await self._remove(record_key, version, record.index_key)
            return None
        return record.checkpoint

    async def _remove(self, record_key: str, version: str, index_key: str) -> bool:
        return await remove_checkpoint(self.driver, record_key, version, index_key)

    async def _entries(self, prefix: str) -> list[str]:
        """Every key under ``prefix`` (a workflow's index: newest first), in one listing call.

        The driver pages as its server needs (one request per 1,000 keys on S3, one statement on
        SQL); a server listing out of byte order (SeaweedFS) is listed once, not once per page.
        """
        return [k for k in (await self.driver.list(prefix, delimiter=None)).keys if not k.endswith("/")]

    async def _mark(self, segment: str, entries: list[str] | None) -> str:
        """Write the marker that makes listings read the records of ``segment``'s entries; return its version."""
        body = {"entries": entries, "nonce": uuid.uuid4().hex}
        return await self.driver.put(self._marker_key(segment), json.dumps(body).encode())

    async def _unmark(self, segment: str, version: str) -> None:
        with contextlib.suppress(StoreConflictError):  # another move of the id marked it again: its marker stays
            await self.driver.delete(self._marker_key(segment), if_version=version)

    async def _settle(self, segment: str) -> None:
        """Finish what a stopped move left: drop the stale entries its marker names, then the marker.

        A marker naming no entries (a removed unreadable record) stays: its entries are unknown.
        """
        key = self._marker_key(segment)
        stored = await self.driver.get(key)
        if stored is None:
            return
        try:
            entries: object = json.loads(stored.data)["entries"]
        except (ValueError, KeyError, TypeError):
            entries = None
        if not isinstance(entries, list):
            return
        for entry in cast(list[object], entries):
            if isinstance(entry, str) and entry.startswith(f"{self._root}workflows/"):
                await self._drop_if_stale(entry)
        await self._unmark(segment, stored.version)

    # -- CheckpointStorage ---------------------------------------------------------------

    @store_operation("checkpoints", "save")
    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        """Store a copy of ``checkpoint`` and return its id, replacing any checkpoint with that id.

        A new id costs one round trip where the driver writes in order (``put_in_order``: SQLite,
        PostgreSQL, Redis, MongoDB): its record, created only if absent, then its index entry,
        never the entry without the record. Elsewhere (S3, fsspec) the same two writes go one
        after the other, a round trip each. An id that exists, whichever store saved it, is
        refused by the record's create, then read and replaced as the contract above says.

        Raises:
            TypeError: ``checkpoint`` is not a ``WorkflowCheckpoint``.
            ValueError: Its id is empty or not a string, or its timestamp is not ISO 8601.
            WorkflowCheckpointException: It cannot be encoded, or holds a type outside the
                allow-list (refused before anything is written, as ``FileCheckpointStorage`` does).
        """
        if not isinstance(checkpoint, WorkflowCheckpoint):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"expected a WorkflowCheckpoint, got {type(checkpoint).__name__}")
        checkpoint_id = self._check_id(checkpoint.checkpoint_id)
        expires_at = None if self.ttl is None else self._clock() + self.ttl
        index_key = self._index_key(checkpoint, expires_at)
        data = encode_record(checkpoint, allowed_types=self.allowed_types, expires_at=expires_at)
        record_key = self._record_key(checkpoint_id)
        try:
            # A new id (the framework's ids are fresh UUIDs): its record created only if absent,
            # then its entry, written in order (one round trip where the driver can), instead of
            # a read then writes, and no earlier record or entry to look after. A refused create
            # writes no entry: the id exists, and is replaced as such.
            await put_in_order(
                self.driver,
                (OrderedPut(record_key, data, if_absent=True), OrderedPut(index_key, self._entry_body(checkpoint_id))),
            )
        except StoreConflictError:
            await self._replace(checkpoint_id, record_key, data, index_key)
        if self.keep_last is not None:
            await self._trim(checkpoint.workflow_name, self.keep_last)
        return checkpoint_id

    async def _replace(self, checkpoint_id: str, record_key: str, data: bytes, index_key: str) -> None:
        """Save over an existing record of ``checkpoint_id``: its old entry gives way to ``index_key``."""
        previous = await self.driver.get(record_key)
        # An unreadable old record leaves a dangling entry, dropped when a read meets it.
        old = None if previous is None else self._peek(previous.data, record_key)
        moved = old is not None and old[0] != index_key
        segment = key_segment(checkpoint_id)
        marker: str | None = None
        if old is not None and moved:
            # Re-saved under another timestamp, workflow or expiry: a marker first (listings
            # then read this id's records instead of trusting either entry), then the new entry,
            # so a save stopped at any point leaves the checkpoint listed (the old record under
            # its old entry, or the new one under its new entry); a read drops the other entry.
            marker = await self._mark(segment, [old[0], index_key])
            await self._put_entry(index_key, checkpoint_id)
        await self.driver.put(record_key, data)
        # Always the last write of a save: a reader that dropped the entry as stale before the
        # record was written, or a trim that looked at it, meets a new version and keeps it.
        await self._put_entry(index_key, checkpoint_id)
        if old is not None and marker is not None:
            await self._drop_if_stale(old[0])
            await self._unmark(segment, marker)

    async def _put_entry(self, index_key: str, checkpoint_id: str) -> None:
        await self.driver.put(index_key, self._entry_body(checkpoint_id))

    @staticmethod
    def _entry_body(checkpoint_id: str) -> bytes:
        """An index entry's bytes: its id and a nonce, so that every write of an entry changes its version."""
        return json.dumps({"id": checkpoint_id, "nonce": uuid.uuid4().hex}).encode()

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
            found = None if stored is None else self._peek(stored.data, record_key)
            if stored is not None and (found is None or _matches(index_key, found[0])):
                await self._remove(record_key, stored.version, index_key)
            else:
                await self._drop_if_stale(index_key)  # dangling, or the record lives under another entry

    @store_operation("checkpoints", "load")
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
        found = await self._read(key, checkpoint_id)
        if found is None:
            raise WorkflowCheckpointException(f"No checkpoint found with ID {checkpoint_id}")
        record, version = found
        if self._expired(record.expires_at):
            await self._remove(key, version, record.index_key)
            raise WorkflowCheckpointException(f"No checkpoint found with ID {checkpoint_id} (it expired)")
        return record.checkpoint

    @store_operation("checkpoints", "delete")
    async def delete(self, checkpoint_id: str) -> bool:
        """Delete the checkpoint; return whether a live one existed. A corrupt record is deleted too.

        Raises:
            ValueError: ``checkpoint_id`` is empty or not a string.
        """
        key = self._record_key(checkpoint_id)
        stored = await self.driver.get(key)
        if stored is None:
            return False
        found = self._peek(stored.data, key)
        if found is None:
            # Unreadable, so its entry is unknown: a marker (never removed) makes listings read
            # the record of any entry of this id, and drop the entry they find dangling.
            await self._mark(key_segment(checkpoint_id), None)
            try:
                return await self.driver.delete(key, if_version=stored.version)
            except StoreConflictError:
                return False  # saved again meanwhile
        index_key, expires_at = found
        return await self._remove(key, stored.version, index_key) and not self._expired(expires_at)

    @store_operation("checkpoints", "get_latest")
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
            now = self._clock()
            for key in keys:
                entry = _parse_entry(key)
                if entry.indexed and entry.expires_at is not None and entry.expires_at <= now:
                    continue  # expired: absent (purge_expired removes it)
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

    async def _listed(self, workflow_name: str, *, whole: bool) -> list[tuple[str, WorkflowCheckpoint | None]]:
        """The workflow's live checkpoints, oldest first, as ``(id, checkpoint)``; the one listing rule.

        An entry of this release whose id has no other entry here and no marker decides alone:
        its key gives the id, order and expiry. The record is read (and a stale or dangling entry
        dropped) where the index cannot decide: an entry of release 0.1, an id with two entries
        or a marker (a stopped move), an id kept as a digest, and checkpoints sharing a
        timestamp (their lineage orders them). With ``whole``, every record is read.
        """
        keys = await self._entries(self._index_prefix(workflow_name))
        entries = [(key, _parse_entry(key)) for key in keys]
        # The markers are listed after the index, never beside it: a delete of an unreadable record
        # writes its marker before it removes the record, so markers read first could miss the
        # marker of a delete finished before the index was read, and its dangling entry be listed.
        marked = {k.rsplit("/", 1)[1] for k in await self._entries(f"{self._root}moving/")} if entries else set[str]()
        counts = Counter(entry.segment for _, entry in entries)
        now = self._clock()
        plan: list[tuple[str, _Entry, str | None]] = []  # (index key, entry, id when the key alone decides)
        for key, entry in entries:
            trusted = entry.indexed and counts[entry.segment] == 1 and entry.segment not in marked
            if trusted and entry.expires_at is not None and entry.expires_at <= now:
                continue  # expired: absent everywhere (purge_expired removes it)
            plan.append((key, entry, _id_of(entry.segment) if trusted else None))
        # Ties need their records (lineage); so does every entry the key cannot decide.
        orders = Counter(entry.order for _, entry, _ in plan)
        records: dict[str, WorkflowCheckpoint | None] = {}
        undecided = [key for key, _, known in plan if known is None]
        for start in range(0, len(undecided), _PARALLEL):
            batch = undecided[start : start + _PARALLEL]
            records.update(zip(batch, await asyncio.gather(*(self._entry_record(k) for k in batch)), strict=True))
        trusted = [
            (key, entry) for key, entry, known in plan if known is not None and (whole or orders[entry.order] > 1)
        ]
        records.update(zip((key for key, _ in trusted), await self._trusted_records(trusted), strict=True))
        for segment in {entry.segment for _, entry, known in plan if known is None} & marked:
            await self._settle(segment)
        newest_first: list[tuple[str, WorkflowCheckpoint | None]] = []
        group: list[tuple[str, WorkflowCheckpoint]] = []
        group_order = ""
        for key, entry, known in plan:
            if group and entry.order != group_order:
                newest_first.extend((cp.checkpoint_id, cp) for _, cp in reversed(_order_ties(group)))
                group = []
            if key not in records:  # decided by its key alone, the only one at its timestamp
                assert known is not None
                newest_first.append((known, None))
            elif (checkpoint := records[key]) is not None:  # else gone, stale or expired: its record decided
                group.append((key, checkpoint))
                group_order = entry.order
        newest_first.extend((cp.checkpoint_id, cp) for _, cp in reversed(_order_ties(group)))
        seen: set[str] = set()
        unique: list[tuple[str, WorkflowCheckpoint | None]] = []
        for checkpoint_id, checkpoint in newest_first:  # a 0.1 entry beside its rewrite names it twice
            if checkpoint_id not in seen:
                seen.add(checkpoint_id)
                unique.append((checkpoint_id, checkpoint))
        return unique[::-1]

    async def _trusted_records(self, entries: list[tuple[str, _Entry]]) -> list[WorkflowCheckpoint | None]:
        """The checkpoints of trusted index entries, their records read ``_BATCH`` at a time (``get_many`` if offered).

        The next batch is asked for before the current one is decoded, so the server (or the
        worker thread) reads while this thread decodes. A record gone, placed elsewhere or
        expired since the listing takes the careful path of :meth:`_entry_record` (which heals
        what it finds).
        """
        records = f"{self._root}records/"
        record_keys = [f"{records}{entry.segment}.json" for _, entry in entries]
        starts = range(0, len(record_keys), _BATCH)
        checkpoints: list[WorkflowCheckpoint | None] = []
        ahead: asyncio.Task[list[StoredObject | None]] | None = None
        try:
            for start in starts:
                batch = record_keys[start : start + _BATCH]
                stored = await ahead if ahead is not None else await self._get_many(batch)
                ahead = None
                if start + _BATCH < len(record_keys):
                    ahead = asyncio.create_task(self._get_many(record_keys[start + _BATCH : start + 2 * _BATCH]))
                    await asyncio.sleep(0)  # let it send its request before this batch is decoded
                for offset, item in enumerate(stored):
                    index_key, record_key = entries[start + offset][0], batch[offset]
                    if item is not None:
                        record = self._decode(item.data, record_key)
                        if _matches(index_key, record.index_key) and not self._expired(record.expires_at):
                            checkpoints.append(record.checkpoint)
                            continue
                    checkpoints.append(await self._entry_record(index_key))
        finally:
            if ahead is not None:  # a record failed to decode: the read ahead is not needed
                ahead.cancel()
                ahead.add_done_callback(_retrieve)
        return checkpoints

    async def _get_many(self, keys: list[str]) -> list[StoredObject | None]:
        """``get`` of each key, in order: the driver's ``get_many`` if it offers one, else the gets concurrently."""
        get_many = getattr(self.driver, "get_many", None)
        if get_many is not None:
            return list(cast(list[StoredObject | None], await get_many(keys)))
        # One batch in flight at once: drivers that pipeline or batch (Redis, fsspec) send it together.
        return list(await asyncio.gather(*(self.driver.get(k) for k in keys)))

    @store_operation("checkpoints", "list_checkpoints")
    async def list_checkpoints(self, *, workflow_name: str) -> list[WorkflowCheckpoint]:
        """Return every live checkpoint of ``workflow_name``, oldest first (see the order above).

        The index decides which; each record is read (``_PARALLEL`` at a time) to return it.

        Raises:
            CorruptCheckpointError: One of them is corrupt (named); nothing is skipped silently.
            WorkflowCheckpointException: One holds a type outside the allow-list.
        """
        return [cp for _, cp in await self._listed(workflow_name, whole=True) if cp is not None]

    @store_operation("checkpoints", "list_checkpoint_ids")
    async def list_checkpoint_ids(self, *, workflow_name: str) -> list[str]:
        """Return the ids of :meth:`list_checkpoints`, in its order, from the index.

        Reads index pages (and the markers of stopped moves); records only where the index
        cannot decide (see :meth:`_listed`). A record damaged after its save is therefore still
        listed here (never skipped): ``load``, ``get_latest`` and ``list_checkpoints`` name it.
        """
        return [checkpoint_id for checkpoint_id, _ in await self._listed(workflow_name, whole=False)]

    # -- administration --------------------------------------------------------------------

    @store_operation("checkpoints", "purge_expired")
    async def purge_expired(self) -> int:
        """Remove every expired checkpoint of this namespace now; return how many were removed.

        Walks the records, not the index: a record whose save was stopped before it wrote its
        index entry (an orphan, never listed) is removed too once it expires. Corrupt records
        are left for inspection. Costs one listing of the namespace's records, their reads in
        batches (``get_many`` where the driver has it) and a removal per expired checkpoint.
        """
        # One listing, then the records in batches: a listing resumed page by page after each batch
        # of removals costs a whole listing per page on a server that lists out of byte order.
        record_keys = await self._entries(f"{self._root}records/")
        removed = 0
        for start in range(0, len(record_keys), _BATCH):
            batch = record_keys[start : start + _BATCH]
            expired: list[tuple[str, str, str]] = []  # (record key, version, index key)
            for record_key, stored in zip(batch, await self._get_many(batch), strict=True):
                found = None if stored is None else self._peek(stored.data, record_key)
                if stored is not None and found is not None and self._expired(found[1]):
                    expired.append((record_key, stored.version, found[0]))
            for first in range(0, len(expired), _PARALLEL):
                done = await asyncio.gather(*(self._remove(*item) for item in expired[first : first + _PARALLEL]))
                removed += sum(done)
        return removed

    @store_operation("checkpoints", "upgrade_index")
    async def upgrade_index(self, *, dry_run: bool = False) -> int:
        """Rewrite this namespace's index entries of release 0.1 in this release's form; return how many.

        Each 0.1 entry (no expiry in its key: every listing reads its record) whose record
        places it gets this release's entry, then the old entry is removed; a dangling or stale
        one is dropped, one whose record is corrupt is left for inspection. Stopped anywhere, a
        checkpoint stays listed exactly once; run it again to finish. Safe beside running
        applications: an entry is removed only at the version that was read. With ``dry_run``,
        only count the entries that would be rewritten.
        """
        rewritten = 0
        for index_key in await self._entries(f"{self._root}workflows/"):
            if _parse_entry(index_key).indexed:
                continue
            entry_version = await self.driver.head(index_key)
            if entry_version is None:
                continue
            record_key = self._record_key_of_entry(index_key)
            stored = await self.driver.get(record_key)
            where = self._where(record_key)
            try:
                header = None if stored is None else _header(stored.data, where=where)[1]
                if header is not None:
                    self._check_key(header.checkpoint_id, record_key, where)
            except CorruptCheckpointError:
                continue  # left for inspection: load names it, delete removes it
            if stored is not None and header is not None and _matches(index_key, exact := self._entry_key(header)):
                rewritten += 1
                if dry_run:
                    continue
                await self._put_entry(exact, header.checkpoint_id)
                if await self.driver.head(record_key) != stored.version:
                    await self._drop_if_stale(exact)  # saved or removed meanwhile: keep it only if it still places it
            if not dry_run:
                await self._drop_entry(index_key, entry_version)
        return rewritten

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.driver!r}, prefix={self.prefix!r}, namespace={self.namespace!r})"


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Collect the outcome of a read nobody awaits any more (no "exception never retrieved" warning)."""
    if not task.cancelled():
        task.exception()


def _order_of(index_key: str) -> str:
    return index_key.rsplit("/", 1)[1].split(".", 1)[0]


def _order_ties(group: Iterable[tuple[str, WorkflowCheckpoint]]) -> list[tuple[str, WorkflowCheckpoint]]:
    """Order checkpoints sharing one timestamp: by depth in their lineage among themselves, then by id."""
    members = list(group)
    if len(members) < 2:
        return members
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
