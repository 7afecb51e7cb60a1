"""The re-seal sweep: values held in plaintext, or sealed with a data key no longer current, sealed again.

Objects are rewritten in place (:func:`reseal_objects`); history logs through retention's
crash-safe rewrite, every record kept (:func:`reseal_logs`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..bounded import run_bounded
from ..drivers import LogDriver, LogInfo, ObjectDriver
from ..errors import CorruptRecordError, StoreConflictError
from ..keys import split_tenant
from ..prefixed import within
from ..retain import is_staging_log, keep_every_record, log_of_staging, log_staging_key, rewrite_log
from ..sealmark import LOG_OBJECTS
from ._drivers import SealedLogDriver, SealedObjectDriver
from ._format import digest_key_id, is_sealed, is_sealed_digest, sealed_key_id
from ._keys import RESERVED
from ._scopes import log_scope_of, object_scope_of

__all__ = ["reseal_logs", "reseal_objects"]

_PAGE = 500
_SEALED, _RESEALED, _UNREADABLE = "sealed", "resealed", "unreadable"


async def reseal_objects(
    raw: ObjectDriver,
    sealed: SealedObjectDriver,
    *,
    after: str | None = None,
    attempts: int = 8,
    prefixes: Sequence[str] = ("",),
) -> dict[str, int]:
    """Seal again in place every object not sealed with its scope's current data key.

    Files, sessions, todo lists and checkpoints, of every scope.

    A plaintext object (from before the store was sealed) is sealed; one sealed with an older
    data key of its scope (before a rotation; a namespace's value sealed with the root's key
    before namespaces had keys of their own) is opened and sealed with the current one. Each
    object is rewritten on the condition that it has not changed since it was read (a changed
    one is read again), so the sweep is safe while agents write; objects already under the
    current key are left alone, so running it again finishes an interrupted run. An object that
    does not open (sealed with a destroyed key, or altered) is left as it is and counted as
    ``unreadable``. ``after`` starts after that key; ``prefixes`` limits the sweep (a tenant's
    root, a namespace's folders). History logs are :func:`reseal_logs`' part.

    Returns:
        ``{"scanned": objects looked at, "sealed": plaintext objects sealed, "resealed": objects
        sealed again under the current key, "unreadable": objects that do not open}``.

    Raises:
        StoreConflictError: An object kept changing for every attempt.
        SealingKeyError: The key provider cannot unwrap a data key.
    """
    counts = {"scanned": 0, _SEALED: 0, _RESEALED: 0, _UNREADABLE: 0}
    for prefix in prefixes:
        start = after
        while True:
            listing = await raw.list(prefix, delimiter=None, after=start, limit=_PAGE)
            for key in listing.keys:
                rest = split_tenant(key)[1]
                if rest.startswith((RESERVED, LOG_OBJECTS)):
                    continue  # data keys and markers; an object store's log segments
                counts["scanned"] += 1
                done = await _reseal(raw, sealed, key, attempts)
                if done is not None:
                    counts[done] += 1
            if len(listing.keys) < _PAGE:
                break
            start = listing.keys[-1]
    return counts


async def _reseal(raw: ObjectDriver, sealed: SealedObjectDriver, key: str, attempts: int) -> str | None:
    """Seal ``key`` again if it needs it; return what was done (``None``: nothing needed)."""
    scope, where = object_scope_of(key), f"object {key!r}"
    for _ in range(attempts):
        stored = await raw.get(key)
        if stored is None or (key.endswith("/") and not stored.data):  # gone, or a directory marker
            return None
        done = _SEALED
        plain = stored.data
        if is_sealed(stored.data):
            try:
                kid = sealed_key_id(stored.data, where=where)
                if kid == (await sealed.keys.current(scope)).kid:
                    return None
                plain, position = (await sealed.keys.get(scope, kid, where=where)).open(key, stored.data, where=where)
                if position is not None:
                    raise CorruptRecordError(f"{where} holds a sealed log record, not an object")
            except CorruptRecordError:
                return _UNREADABLE
            done = _RESEALED
        try:
            await sealed.put(key, plain, if_version=stored.version)
        except StoreConflictError:
            continue  # written meanwhile: read it again
        return done
    raise StoreConflictError(f"object {key!r} kept changing while being sealed")


_LOG_PAGE = 100
_UNCHANGED = "unchanged"  # a log that needed no rewrite (not reported)


async def reseal_logs(
    raw: LogDriver,
    sealed: SealedLogDriver,
    *,
    roots: Sequence[tuple[str, str]] = (("", ""),),
    ttl: float | None = None,
    concurrency: int = 4,
) -> dict[str, int]:
    """Rewrite every history log holding a record or digest not sealed with its scope's current data key.

    Each log's record headers are peeked through ``raw`` (the driver under the sealing layer:
    nothing is decrypted to decide); a log holding plaintext records (a store opened with
    ``adopt_plaintext``) or records sealed with an older data key (before a rotation; a
    namespace's records sealed with the root's key before namespaces had keys of their own) is
    rewritten through ``sealed`` with retention's stage/seal/swap
    (:func:`~agent_stores.core.retain.rewrite_log`), every record kept as it is: the same
    transcript, compaction records and annotations, ids and de-duplication digests, each
    sealed under the current key. Saves during the rewrite make it start again or wait for its
    swap, as during a retention; a run that stopped is finished by the next one (a staging
    log left beside a log is always finished or dropped). The rewritten log is appended with
    ``ttl``: its expiry starts again as on a save by a history provider with that ``ttl``
    (``None``: it does not expire) — log drivers report no remaining expiry to keep.
    At most ``concurrency`` logs are rewritten at once. A log that does not open (sealed with a
    destroyed key, or altered) is left as it is and counted as ``logs_unreadable``; one that
    saves kept changing for every attempt, or that a retention is rewriting, is left for the
    next run and counted as ``logs_busy``.

    ``roots`` says where to look: ``(root, prefix)`` lists the logs under ``prefix`` as seen
    from ``root`` (``("tenants/<segment>/", "")`` for a tenant's logs, which a driver over an
    object store lists only from the tenant's root); logs of tenants listed from the store's
    root ``""`` are left to their tenant's entry.

    Returns:
        ``{"logs_scanned": logs looked at, "logs_resealed": logs rewritten (or a stopped run of
        theirs finished), "logs_unreadable": logs that do not open, "logs_busy": logs left for
        the next run}``.

    Raises:
        SealingKeyError: The key provider cannot unwrap a data key.
        ValueError: ``concurrency`` is below 1.
    """
    counts = {"logs_scanned": 0, "logs_resealed": 0, "logs_unreadable": 0, "logs_busy": 0, _UNCHANGED: 0}
    for root, prefix in roots:
        scoped_raw, scoped = (within(raw, root), sealed.within(root)) if root else (raw, sealed)

        async def one(
            item: tuple[str, str, bool], raw: LogDriver = scoped_raw, sealed: SealedLogDriver = scoped
        ) -> None:
            counts["logs_scanned"] += 1
            counts[await _reseal_log(raw, sealed, *item, ttl=ttl)] += 1

        after: str | None = None
        while page := await scoped_raw.list_logs(prefix, after=after, limit=_LOG_PAGE):
            await run_bounded(_page_items(root, page), one, concurrency)
            after = page[-1].key
    del counts[_UNCHANGED]
    return counts


async def _reseal_log(
    raw: LogDriver, sealed: SealedLogDriver, key: str, session_id: str, staged: bool, *, ttl: float | None
) -> str:
    """Rewrite the log ``key`` if it needs it (or has a staging log beside it); return which count it adds to.

    A run left beside the log is finished (or dropped) first; the log is then looked at again,
    since a run that stopped before its seal leaves a log that reads as its staged copy.
    """
    try:
        if staged:
            await rewrite_log(sealed, key, log_staging_key(key), session_id, ttl=ttl, plan=keep_every_record)
        if not await _stale(raw, sealed, key):
            return "logs_resealed" if staged else _UNCHANGED
        done = await rewrite_log(sealed, key, log_staging_key(key), session_id, ttl=ttl, plan=keep_every_record)
    except CorruptRecordError:
        return "logs_unreadable"
    except StoreConflictError:
        return "logs_busy"  # saves kept landing, or a retention of the session is under way: the next run
    return _UNCHANGED if done is None else "logs_resealed"


def _page_items(root: str, page: list[LogInfo]) -> list[tuple[str, str, bool]]:
    """One ``(log key, session id, whether a staging log is beside it)`` per log of ``page`` (listed from ``root``)."""
    items: dict[str, tuple[str, str, bool]] = {}
    for log in page:
        tenant, rest = split_tenant(log.key)
        if tenant is not None and not root:
            continue  # a tenant's log listed from the store's root: its tenant's entry rewrites it
        if not is_staging_log(rest):
            found = items.get(log.key)
            items[log.key] = (log.key, log.session_id, bool(found and found[2]))
            continue
        main = log_of_staging(log.key)
        found = items.get(main)
        items[main] = (main, found[1] if found else log.session_id, True)
    return list(items.values())


async def _stale(raw: LogDriver, sealed: SealedLogDriver, key: str) -> bool:
    """Whether the log ``key`` holds a record or digest in plaintext or sealed with a data key not current.

    ``raw`` and ``sealed`` are seen from the same root (``sealed.root``).
    """
    payloads = await raw.read(key)
    if not payloads:
        return False
    full = sealed.root + key
    where = f"a record of log {full!r}"
    kid = (await sealed.keys.current(log_scope_of(full))).kid
    if any(not is_sealed(p) or sealed_key_id(p, where=where) != kid for p in payloads):
        return True
    tail = await raw.tail(key, len(payloads))
    return any(not is_sealed_digest(d) or digest_key_id(d, where=where) != kid for d in tail.digests)
