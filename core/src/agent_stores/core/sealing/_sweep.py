"""The re-seal sweep: objects held in plaintext, or sealed with a data key no longer current, sealed again in place."""

from __future__ import annotations

from collections.abc import Sequence

from ..drivers import ObjectDriver
from ..errors import CorruptRecordError, StoreConflictError
from ..keys import split_tenant
from ..sealmark import LOG_OBJECTS
from ._drivers import SealedObjectDriver
from ._format import is_sealed, sealed_key_id
from ._keys import RESERVED
from ._scopes import object_scope_of

__all__ = ["reseal_objects"]

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
    root, a namespace's folders). History logs are not rewritten (``docs/encryption.md`` says why).

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
