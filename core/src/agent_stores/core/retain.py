"""Log rewrites, crash-safe and resumable: retention (a log without what its compactions excluded), re-sealing.

:func:`rewrite_log` replaces a log by what a plan makes of its records: retention's plan
(:func:`retain_session`) drops what stored compactions excluded; :func:`keep_every_record`
keeps every record as it is, so written back through a sealing log driver the log is sealed
again under the current data key (``SealedStores.reseal``).

The log driver can append under a version and delete a whole log, nothing else, so the rewrite
goes through a staging log beside the session's (its source segment is ``~retaining.<source>``,
which no identifier's segment can be) in four steps:

1. **stage**: the retained transcript (the compacted view without excluded messages, annotations
   kept, summaries as messages) is written to the staging log after a header naming the run;
2. **seal**: a seal naming the run is appended to the session's log under the version the
   transcript was read at (a save landing meanwhile makes the run start again); a sealed log
   takes no more saves, so deleting it loses nothing;
3. **swap**: the sealed log is deleted, and the staged transcript appended as the new log;
4. **clean**: the staging log is deleted.

Between the steps a reader sees the old transcript (before the swap; a header and a seal are
compaction records that change nothing) or the new one (a provider reading an absent log reads
the staging log instead). A save that finds the log sealed waits for the swap (and makes it,
once the seal is older than :data:`SEAL_LEASE_S`: its retention stopped); one that finds it
absent restores the staged transcript first. A later run finishes a run that stopped: it swaps
and cleans after a seal, and drops a staging log that was never sealed.
"""

from __future__ import annotations

import contextlib
import re
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import msgspec
from agent_framework import (
    EXCLUDED_KEY,
    GROUP_ANNOTATION_KEY,
    SUMMARIZED_BY_SUMMARY_ID_KEY,
    SUMMARY_OF_MESSAGE_IDS_KEY,
    Message,
)

from .codec import encode_message, encode_record
from .compaction import COMPACTION_DIGEST, SEAL_DIGEST, fold_records, is_compaction_record
from .drivers import LogDriver, LogRecord, LogVersion, conditional_delete, deletes_conditionally
from .errors import CorruptRecordError, StoreConflictError
from .keys import key_segment

if TYPE_CHECKING:
    from .history import LogHistoryProvider

__all__ = [
    "SEAL_LEASE_S",
    "RewritePlan",
    "is_staging_log",
    "is_staging_segment",
    "keep_every_record",
    "log_of_staging",
    "log_staging_key",
    "retain_session",
    "rewrite_log",
    "staging_key",
    "waits_for_retention",
]

_STAGING_SOURCE = "~retaining."
_ATTEMPTS = 8
#: How long a seal binds saves: past it, the retention that sealed the log is taken to have stopped,
#: and a save finishes the swap itself (a running retention swaps within a few round trips).
SEAL_LEASE_S = 5.0
_DECODER = msgspec.json.Decoder()
_SUMMARY_ID = re.compile(r"summary_[0-9]+")
_ENCODER = msgspec.json.Encoder()


def staging_key(provider: LogHistoryProvider, session_id: str | None) -> str:
    """The key of the session's staging log (relative to the provider's root, as its log keys are)."""
    keys = provider.keys
    return (
        f"{keys.namespace_segment}/{_STAGING_SOURCE}{key_segment(provider.source_id)}/{key_segment(session_id or '')}"
    )


def log_staging_key(key: str) -> str:
    """The staging log of the history log ``key`` (``[tenants/<t>/]<namespace>/<source>/<session>``).

    The same key :func:`staging_key` gives the provider of that log, seen from the same root.

    Raises:
        ValueError: ``key`` is not a history log's key, or is a staging log's.
    """
    head, sep, tail = key.rpartition("/")
    base, sep2, source = head.rpartition("/")
    if not (sep and sep2 and base and source) or is_staging_segment(source):
        raise ValueError(f"{key!r} is not a history log's key")
    return f"{base}/{_STAGING_SOURCE}{source}/{tail}"


def log_of_staging(staging: str) -> str:
    """The history log whose staging log is ``staging`` (the inverse of :func:`log_staging_key`)."""
    head, _, session = staging.rpartition("/")
    base, _, source = head.rpartition("/")
    return f"{base}/{source.removeprefix(_STAGING_SOURCE)}/{session}"


def is_staging_segment(segment: str) -> bool:
    """Whether ``segment`` (a source id's place in a log key) holds staging logs rather than a source id."""
    return segment.startswith(_STAGING_SOURCE)


def is_staging_log(key: str) -> bool:
    """Whether the history log key ``key`` (``<namespace>/<source>/<session>``) is a staging log."""
    parts = key.split("/", 2)
    return len(parts) == 3 and is_staging_segment(parts[1])


async def _delete_at(driver: LogDriver, key: str, version: LogVersion) -> bool:
    """Delete ``key`` only while it is at ``version`` where the driver can; return whether this call removed it.

    A driver without ``delete_if_version`` deletes after its version was read: what another
    retention or a save wrote in between goes with it (see ``docs/compaction.md``).
    """
    if not deletes_conditionally(driver):
        return await driver.delete(key)
    try:
        return await conditional_delete(driver).delete_if_version(key, version)
    except StoreConflictError:
        return False


def _record(**fields: Any) -> bytes:
    # A compaction record that changes nothing: every reader of compacted logs already skips it.
    return _ENCODER.encode(
        {"type": "compaction", "format": 1, "props": [], "replace": [], "drop": [], "insert": [], **fields}
    )


def _field(payload: bytes, name: str) -> Any:
    if not is_compaction_record(payload):
        return None
    try:
        record = _DECODER.decode(payload)
    except msgspec.DecodeError:
        return None
    return record.get(name) if isinstance(record, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]


async def retain_session(provider: LogHistoryProvider, session_id: str | None) -> int:
    """Rewrite the session's log as its compacted view without excluded messages; return how many messages went.

    See :meth:`LogHistoryProvider.retain`. A run that finds a staging log left by a run that
    stopped finishes (or drops) that one first.
    """
    key = provider.keys.history(provider.source_id, session_id)
    where = f"history record in {key!r}"

    def plan(payloads: list[bytes], digests: list[str], run: str) -> tuple[list[LogRecord], int] | None:
        retained, dropped = _retained(payloads, digests, where=where, provider=provider, run=run)
        return None if dropped < 0 else (retained, dropped)

    staging = staging_key(provider, session_id)
    done = await rewrite_log(provider.driver, key, staging, session_id or "", ttl=provider.ttl, plan=plan)
    return done or 0


#: What a rewrite writes in place of a log: ``(payloads, digests, run)`` to the new log's records and
#: the count the rewrite reports, or ``None`` when there is nothing to rewrite.
RewritePlan = Callable[[list[bytes], list[str], str], "tuple[list[LogRecord], int] | None"]


def keep_every_record(payloads: list[bytes], digests: list[str], run: str) -> tuple[list[LogRecord], int]:
    """The plan that rewrites a log as it is: every record (messages, compaction records) with its digest.

    Written back through a sealing log driver, each record is sealed again under the scope's
    current data key; the transcript, the model's view and de-duplication stay the same.
    """
    return [LogRecord(d, p) for d, p in zip(digests, payloads, strict=True)], 0


async def rewrite_log(
    driver: LogDriver,
    key: str,
    staging: str,
    session_id: str,
    *,
    ttl: float | None,
    plan: RewritePlan,
) -> int | None:
    """Rewrite the log ``key`` as ``plan`` says, through the staging log ``staging``: stage, seal, swap, clean.

    The steps and what readers and saves see between them are in this module's docstring;
    ``staging`` is the log's :func:`staging_key`. Every write (the staged log, the seal, the
    swapped log) is appended with ``ttl``: the rewritten log's expiry starts again, as on a
    save. A staging log left by a run that stopped (of any plan) is finished or dropped first;
    when it was finished, that run's count is returned and ``plan`` is not used.

    Returns:
        The count ``plan`` gave for the log written, or ``None``: the log is empty, or ``plan``
        found nothing to rewrite.

    Raises:
        StoreConflictError: Saves kept landing for every retry, or another rewrite of the log is
            under way.
    """
    left = await _read_staged(driver, staging)
    if left is not None:
        finished = await _finish(driver, key, staging, *left, session_id, ttl=ttl)
        if finished is not None:
            return finished
    for _ in range(_ATTEMPTS):
        payloads, digests, version = await _read_consistently(driver, key)
        if not payloads:
            return None
        run = uuid.uuid4().hex
        planned = plan(payloads, digests, run)
        if planned is None:
            return None
        records, count = planned
        header = LogRecord(COMPACTION_DIGEST, _record(retention={"run": run, "dropped": count}))
        try:
            staged_at = await driver.append(
                staging, [header, *records], expected_version=None, session_id=session_id, ttl=ttl
            )
        except StoreConflictError as err:
            raise StoreConflictError(f"another retention or re-seal of {key!r} is under way") from err
        try:
            await driver.append(
                key,
                [LogRecord(SEAL_DIGEST, _record(seal=run, at=time.time()))],
                expected_version=version,
                session_id=session_id,
                ttl=ttl,
            )
        except StoreConflictError:
            await _delete_at(driver, staging, staged_at)  # a save landed after the read: decide again on the new tail
            continue
        await _finish(driver, key, staging, [header, *records], staged_at, session_id, ttl=ttl)
        return count
    raise StoreConflictError(f"gave up rewriting {key!r} after {_ATTEMPTS} conflicting saves")


def _retained(
    payloads: list[bytes], digests: list[str], *, where: str, provider: LogHistoryProvider, run: str
) -> tuple[list[LogRecord], int]:
    """The retained transcript's records, and how many stored messages it leaves out (``-1``: nothing to rewrite)."""
    if not any(is_compaction_record(p) for p in payloads):
        return [], -1  # nothing compacted: nothing to drop, nothing to fold in
    keys, view = fold_records(payloads, where=where, cache=provider.decode_cache)
    kept = [(k, m) for k, m in zip(keys, view, strict=True) if not m.additional_properties.get(EXCLUDED_KEY)]
    _rename_summaries([m for _, m in kept], run)
    retained: list[LogRecord] = []
    for k, message in kept:
        if k[0] == "m":  # a stored message keeps its identity digest, so replays of it stay de-duplicated
            retained.append(LogRecord(digests[k[1]], encode_message(message)))
        else:
            retained.append(LogRecord(*encode_record(message)))
    stored = sum(1 for p in payloads if not is_compaction_record(p))
    return retained, stored - sum(1 for k, _ in kept if k[0] == "m")


def _rename_summaries(messages: list[Message], run: str) -> dict[str, str]:
    """Give the framework's summaries ids no later summary can take; return the renames.

    ``SummarizationStrategy`` names a summary ``summary_<length of the list>``: once retention
    shortens the list, a later summary would take the id of a kept one (and the framework would
    then treat one as summarised by the other). References in kept annotations follow the rename.
    """
    renames = {
        m.message_id: f"{m.message_id}~{run[:8]}"
        for m in messages
        if m.message_id and _SUMMARY_ID.fullmatch(m.message_id)
    }
    if not renames:
        return renames
    for message in messages:
        if message.message_id in renames:
            message.message_id = renames[message.message_id]
        group = message.additional_properties.get(GROUP_ANNOTATION_KEY)
        if isinstance(group, dict):
            annotation = cast(dict[str, Any], group)
            by = annotation.get(SUMMARIZED_BY_SUMMARY_ID_KEY)
            if isinstance(by, str) and by in renames:
                annotation[SUMMARIZED_BY_SUMMARY_ID_KEY] = renames[by]
            of = annotation.get(SUMMARY_OF_MESSAGE_IDS_KEY)
            if isinstance(of, list):
                annotation[SUMMARY_OF_MESSAGE_IDS_KEY] = [
                    renames.get(i, i) if isinstance(i, str) else i for i in cast(list[Any], of)
                ]
    return renames


async def _read_consistently(driver: LogDriver, key: str) -> tuple[list[bytes], list[str], Any]:
    """Every record of the log with its digest and the version they were read at."""
    for _ in range(_ATTEMPTS):
        head = await driver.tail(key, 0)
        if not head.length:
            return [], [], head.version
        tail = await driver.tail(key, head.length)
        payloads = await driver.read(key)
        if tail.version == head.version and len(payloads) == len(tail.digests) == head.length:
            return payloads, tail.digests, head.version
    raise StoreConflictError(f"{key!r} kept changing while it was read for a retention")


async def _read_staged(driver: LogDriver, staging: str) -> tuple[list[LogRecord], LogVersion] | None:
    """The staging log's records and the version they were read at (``None``: there is none).

    A staging log is written once and then only deleted (by the run's clean, or a save or run
    finishing it), so one that changes while it is read is read again: gone, it is ``None``.
    """
    for _ in range(_ATTEMPTS):
        head = await driver.tail(staging, 0)
        if not head.length:
            return None
        tail = await driver.tail(staging, head.length)
        payloads = await driver.read(staging)
        if tail.version == head.version and len(payloads) == len(tail.digests) == head.length:
            return [LogRecord(d, p) for d, p in zip(tail.digests, payloads, strict=True)], tail.version
    raise StoreConflictError(f"the staging log {staging!r} kept changing while it was read")


def _run_of(staged: list[LogRecord], staging: str) -> tuple[str, int]:
    header = _field(staged[0].payload, "retention")
    run = cast(dict[str, Any], header).get("run") if isinstance(header, dict) else None
    if not isinstance(run, str):
        raise CorruptRecordError(f"the staging log {staging!r} does not start with a retention header")
    return run, int(cast(dict[str, Any], header).get("dropped") or 0)


async def _finish(
    driver: LogDriver,
    key: str,
    staging: str,
    staged: list[LogRecord],
    staged_at: LogVersion,
    session_id: str,
    *,
    ttl: float | None,
) -> int | None:
    """Swap and clean after the seal; return the messages dropped (``None``: never sealed, staging dropped).

    Several may finish one run at once (the retention that sealed it, a later run, a save past
    the lease): each deletes the sealed log only at the version it read it at, so the one that
    comes late finds the swapped log (and what was saved on it since) and leaves it.
    """
    run, dropped = _run_of(staged, staging)
    retained = staged[1:]
    current, _, version = await _read_consistently(driver, key)
    if current and _field(current[-1], "seal") == run:
        # Sealed by this run: the log takes no more saves, so deleting it loses nothing.
        if await _delete_at(driver, key, version):
            current = []
        else:  # another finisher swapped it first
            current, _, _ = await _read_consistently(driver, key)
    if not current:
        if retained:
            with contextlib.suppress(StoreConflictError):  # a save restored it first (see waits_for_retention)
                await driver.append(key, retained, expected_version=None, session_id=session_id, ttl=ttl)
    elif not (retained and current[: len(retained)] == [r.payload for r in retained]):
        # The run stopped before sealing: the log is the old transcript, untouched; drop the staging.
        await _delete_at(driver, staging, staged_at)
        return None
    await _delete_at(driver, staging, staged_at)
    return dropped


async def waits_for_retention(
    provider: LogHistoryProvider, key: str, staging: str, session_id: str, *, sealed: bool
) -> bool:
    """What a save does on a log that is absent or sealed: whether it must read the log again before appending.

    An absent log with a staged transcript beside it is restored from it (an atomic append that
    only creates the log); a sealed one is left to the retention that sealed it (the save waits)
    for :data:`SEAL_LEASE_S`, then swapped by the save. With no staging log the save goes on (a
    seal whose staging is gone binds nothing).
    """
    found = await _read_staged(provider.driver, staging)
    if found is None:
        return False
    staged, staged_at = found
    if sealed:
        last = await provider.driver.read(key, last=1)
        at = _field(last[0], "at") if last else None
        if isinstance(at, int | float) and 0 <= time.time() - at < SEAL_LEASE_S:
            return True  # the retention that sealed it is swapping it now
        await _finish(
            provider.driver, key, staging, staged, staged_at, session_id, ttl=provider.ttl
        )  # it stopped: finish its swap
        return True
    retained = staged[1:]
    if retained:
        with contextlib.suppress(StoreConflictError):  # the retention or another save restored it first
            await provider.driver.append(key, retained, expected_version=None, session_id=session_id, ttl=provider.ttl)
        return True
    return False
