"""The re-seal sweep: seal in place the plaintext objects a store held before it was sealed."""

from __future__ import annotations

from ..drivers import ObjectDriver
from ..errors import StoreConflictError
from ..keys import split_tenant
from ..sealmark import LOG_OBJECTS
from ._drivers import SealedObjectDriver
from ._format import is_sealed
from ._keys import RESERVED

__all__ = ["reseal_objects"]

_PAGE = 500


async def reseal_objects(
    raw: ObjectDriver, sealed: SealedObjectDriver, *, after: str | None = None, attempts: int = 8
) -> dict[str, int]:
    """Seal every plaintext object of the store in place: files, sessions, todo lists, checkpoints, of every tenant.

    Each object is rewritten on the condition that it has not changed since it was read (a
    changed one is read again), so the sweep is safe while agents write; objects already
    sealed are left alone, so running it again finishes an interrupted run. ``after`` starts
    after that key. History logs are not rewritten (a log is append-only): their plaintext
    records stay readable until the session is deleted or the store is migrated.

    Returns:
        ``{"scanned": objects looked at, "sealed": objects sealed}``.

    Raises:
        StoreConflictError: An object kept changing for every attempt.
    """
    scanned = resealed = 0
    while True:
        listing = await raw.list("", delimiter=None, after=after, limit=_PAGE)
        for key in listing.keys:
            rest = split_tenant(key)[1]
            if rest.startswith((RESERVED, LOG_OBJECTS)):
                continue  # data keys and markers; an object store's log segments
            scanned += 1
            resealed += await _reseal(raw, sealed, key, attempts)
        if len(listing.keys) < _PAGE:
            return {"scanned": scanned, "sealed": resealed}
        after = listing.keys[-1]


async def _reseal(raw: ObjectDriver, sealed: SealedObjectDriver, key: str, attempts: int) -> int:
    for _ in range(attempts):
        stored = await raw.get(key)
        if stored is None or is_sealed(stored.data):
            return 0
        try:
            await sealed.put(key, stored.data, if_version=stored.version)
        except StoreConflictError:
            continue  # written meanwhile: read it again
        return 1
    raise StoreConflictError(f"object {key!r} kept changing while being sealed")
