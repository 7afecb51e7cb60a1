"""Envelope keys: the :class:`KeyProvider` protocol, the local :class:`Keyring`, and :class:`DataKeys`.

Each scope (a tenant's root ``tenants/<tenant>/``, a namespace outside tenants, or ``""`` for
the rest: see :mod:`._scopes`) has its own data keys, one of them current, kept wrapped by a
key-encryption key (KEK) of a :class:`KeyProvider` in the store itself. Unwrapped data keys are
cached with a bound, and a scope's key object is read again after a bounded interval.
"""

from __future__ import annotations

import base64
import json
import os
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..cache import BoundedCache
from ..drivers import ObjectDriver
from ..errors import CorruptRecordError, StoreConflictError
from ..sealmark import SealingKeyError
from ..stores import KEYRING_ENV
from ._format import DataKey
from ._scopes import KEYS_OBJECT, RESERVED, is_namespace_scope, keys_object, scope_name

__all__ = [
    "KEYRING_ENV",
    "KEYS_OBJECT",
    "RESERVED",
    "DataKeys",
    "KeyProvider",
    "Keyring",
    "SealingKeyError",
]

_KEYRING_FORMAT = "agent-stores-keyring/1"
_KEYS_FORMAT = "agent-stores-data-keys/1"


@runtime_checkable
class KeyProvider(Protocol):
    """What wraps and unwraps data keys: a local keyring, a cloud KMS, an HSM.

    ``context`` is the associated data of a wrap (where the data key belongs: its scope and
    id); unwrapping with another context must fail. A provider unreachable raises
    :class:`~agent_stores.core.errors.StoreUnavailableError`, so nothing is written.
    """

    @property
    def key_id(self) -> str:
        """The id of the key-encryption key new data keys are wrapped with."""
        ...

    async def wrap(self, data_key: bytes, *, context: bytes) -> bytes:
        """Return ``data_key`` encrypted under the key-encryption key :attr:`key_id`."""
        ...

    async def unwrap(self, key_id: str, wrapped: bytes, *, context: bytes) -> bytes:
        """Return the data key ``wrapped`` under the key-encryption key ``key_id``.

        Raises:
            SealingKeyError: The provider does not hold ``key_id``, or ``wrapped`` does not open
                under it with ``context`` (a wrong key of that id, or an altered wrapped key).
        """
        ...


@dataclass(frozen=True)
class Keyring:
    """A local :class:`KeyProvider`: named 256-bit key-encryption keys, one of them current.

    Keep it in a ``0600`` file (:meth:`create`, :meth:`load`) or, in a container, in the
    environment variable ``AGENT_STORES_KEYRING`` (:meth:`from_env`: a file path or the JSON
    itself). Wrapping is AES-256-GCM with the data key's context as associated data.

    Raises:
        ValueError: ``current`` is not one of ``keys``, or a key is not 32 bytes.
    """

    current: str
    keys: Mapping[str, bytes] = field(repr=False)

    def __post_init__(self) -> None:
        if self.current not in self.keys:
            raise ValueError(f"the keyring's current key {self.current!r} is not one of its keys")
        for kid, key in self.keys.items():
            if len(key) != 32 or not kid:
                raise ValueError(f"keyring key {kid!r} is not a named 32-byte key")

    @property
    def key_id(self) -> str:
        """The current key-encryption key's id."""
        return self.current

    @classmethod
    def generate(cls) -> Keyring:
        """A keyring with one new random key."""
        kid = "kek-" + secrets.token_hex(8)
        return cls(kid, {kid: AESGCM.generate_key(bit_length=256)})

    def rotated(self) -> Keyring:
        """This keyring plus a new random key that becomes current (older keys still unwrap)."""
        kid = "kek-" + secrets.token_hex(8)
        return Keyring(kid, {**self.keys, kid: AESGCM.generate_key(bit_length=256)})

    def to_json(self) -> str:
        """The keyring as JSON (the secret: keep it out of logs and version control)."""
        keys = {k: base64.b64encode(v).decode("ascii") for k, v in self.keys.items()}
        return json.dumps({"format": _KEYRING_FORMAT, "current": self.current, "keys": keys}, indent=1)

    @classmethod
    def from_json(cls, text: str, *, where: str = "the keyring") -> Keyring:
        """Read a keyring :meth:`to_json` wrote.

        Raises:
            ValueError: ``text`` is not a keyring (the message never quotes a key).
        """
        try:
            raw = json.loads(text)
            if raw.get("format") != _KEYRING_FORMAT:
                raise ValueError("format")
            return cls(
                str(raw["current"]), {str(k): base64.b64decode(v, validate=True) for k, v in raw["keys"].items()}
            )
        except (ValueError, KeyError, TypeError, AttributeError) as err:
            raise ValueError(
                f"{where} is not an agent-stores keyring ({_KEYRING_FORMAT}): {type(err).__name__}"
            ) from None

    def save(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> None:
        """Write the keyring to ``path`` with mode ``0600``.

        Raises:
            FileExistsError: ``path`` exists and not ``overwrite`` (a keyring is never replaced by
                accident; with ``overwrite`` it is replaced atomically).
        """
        target = os.fspath(path)
        written = f"{target}.{secrets.token_hex(4)}.tmp" if overwrite else target
        fd = os.open(written, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(self.to_json())
        if overwrite:
            os.replace(written, target)  # readers see the old keyring or the new one, never half of one

    @classmethod
    def create(cls, path: str | os.PathLike[str]) -> Keyring:
        """Generate a keyring and save it to a new ``0600`` file at ``path``.

        Raises:
            FileExistsError: ``path`` exists.
        """
        keyring = cls.generate()
        keyring.save(path)
        return keyring

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Keyring:
        """Read the keyring file at ``path``.

        Raises:
            FileNotFoundError: There is no such file.
            ValueError: The file is not a keyring.
        """
        return cls.from_json(Path(path).read_text(encoding="utf-8"), where=f"the file {os.fspath(path)!r}")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Keyring | None:
        """The keyring ``AGENT_STORES_KEYRING`` names (a file path) or holds (JSON); ``None`` when unset.

        Raises:
            FileNotFoundError, ValueError: As :meth:`load` and :meth:`from_json`.
        """
        value = (os.environ if environ is None else environ).get(KEYRING_ENV, "").strip()
        if not value:
            return None
        if value.startswith("{"):
            return cls.from_json(value, where=f"the environment variable {KEYRING_ENV}")
        return cls.load(value)

    async def wrap(self, data_key: bytes, *, context: bytes) -> bytes:
        """Encrypt ``data_key`` under the current key."""
        nonce = os.urandom(12)
        return nonce + AESGCM(self.keys[self.current]).encrypt(nonce, data_key, context)

    async def unwrap(self, key_id: str, wrapped: bytes, *, context: bytes) -> bytes:
        """Decrypt a data key wrapped under ``key_id``.

        Raises:
            SealingKeyError: The keyring does not hold ``key_id``, or the wrapped key does not
                open under it (another key of that id, or an altered wrapped key).
        """
        key = self.keys.get(key_id)
        if key is None:
            raise SealingKeyError(
                f"the keyring does not hold key-encryption key {key_id!r}; open the store with the keyring that does"
            )
        try:
            return AESGCM(key).decrypt(wrapped[:12], wrapped[12:], context)
        except InvalidTag as err:
            raise SealingKeyError(
                f"key-encryption key {key_id!r} of this keyring does not open the data key: "
                "it is another key under the same id, or the wrapped key was altered"
            ) from err


class _Scope:
    """What one scope's key object holds, when it was read, and the data keys unwrapped so far."""

    __slots__ = ("current", "entries", "opened", "read_at")

    def __init__(self, current: str, entries: dict[str, dict[str, Any]]) -> None:
        self.current = current
        self.entries = entries
        self.opened: dict[str, DataKey] = {}
        self.read_at = time.monotonic()


class DataKeys:
    """The data keys of one store, per scope, wrapped by a :class:`KeyProvider` and kept in the store.

    Args:
        objects: The store's own (unsealed) object driver; key objects live at
            :func:`~agent_stores.core.sealing.keys_object` of each scope.
        provider: Wraps new data keys and unwraps stored ones.
        max_scopes: How many scopes' unwrapped keys stay cached.
        before_create: Awaited before a scope's first data key is stored (what marks the store as sealed).
        refresh: Seconds after which a cached scope's key object is read again before its next
            use (so a data key another process made current is used here within that bound, and
            a key another process destroyed stops being used). A value sealed with a data key
            this process has not seen reads the key object again at once.
    """

    def __init__(
        self,
        objects: ObjectDriver,
        provider: KeyProvider,
        *,
        max_scopes: int = 1024,
        before_create: Callable[[], Awaitable[None]] | None = None,
        refresh: float = 60.0,
    ) -> None:
        self.objects = objects
        self.provider = provider
        self.before_create = before_create
        self.refresh = refresh
        self._scopes: BoundedCache[str, _Scope] = BoundedCache(max_entries=max_scopes)

    def _cached(self, scope: str) -> _Scope | None:
        loaded = self._scopes.get(scope)
        if loaded is not None and time.monotonic() - loaded.read_at >= self.refresh:
            return None  # read it again: another process may have rotated or destroyed its keys
        return loaded

    def current_cached(self, scope: str) -> DataKey | None:
        """:meth:`current` when that needs no I/O, else ``None``.

        The scope's keys were read within ``refresh`` and its current key was opened before.
        """
        loaded = self._cached(scope)
        return None if loaded is None else loaded.opened.get(loaded.current)

    async def current(self, scope: str) -> DataKey:
        """The data key new values of ``scope`` are sealed with; made and stored on first use.

        Raises:
            SealingKeyError: The provider cannot unwrap the scope's current data key.
        """
        loaded = self._cached(scope) or await self._load(scope)
        if loaded is None:
            loaded = await self._create(scope)
        return await self._open(scope, loaded, loaded.current)

    async def get(self, scope: str, kid: str, *, where: str) -> DataKey:
        """The data key ``kid`` of ``scope``, to open a value ``where`` names.

        A namespace's value sealed before namespaces had data keys of their own is sealed with
        a data key of the store's root: ``kid`` is looked up there too.

        Raises:
            CorruptRecordError: The scope holds no data key ``kid`` (destroyed by ``forget``, or
                the value was copied from another scope or store).
            SealingKeyError: The provider cannot unwrap it.
        """
        legacy = is_namespace_scope(scope)
        for fresh in (False, True):
            loaded = await self._load(scope) if fresh else self._cached(scope)
            if loaded is not None and kid in loaded.entries:
                return await self._open(scope, loaded, kid)
            if legacy:
                root = await self._load("") if fresh else self._cached("")
                if root is not None and kid in root.entries:
                    return await self._open("", root, kid)
        raise CorruptRecordError(
            f"{where} is sealed with data key {kid!r}, which {scope_name(scope)} does not hold: "
            "the key was destroyed (forget), or the value was copied from elsewhere"
        )

    async def kids(self, scope: str) -> tuple[str | None, frozenset[str]]:
        """The id of ``scope``'s current data key (``None``: it has none) and of every data key it holds, read now."""
        loaded = await self._load(scope)
        return (None, frozenset()) if loaded is None else (loaded.current, frozenset(loaded.entries))

    async def destroy(self, scope: str) -> bool:
        """Delete the scope's data keys from the store and the cache; return whether there were any."""
        self._scopes.pop(scope)
        return await self.objects.delete(keys_object(scope))

    def forget_cached(self, scope: str) -> None:
        """Drop what is cached of ``scope`` (the next use reads the key object again)."""
        self._scopes.pop(scope)

    async def _open(self, scope: str, loaded: _Scope, kid: str) -> DataKey:
        key = loaded.opened.get(kid)
        if key is None:
            material = await self._unwrap(scope, kid, loaded.entries[kid])
            key = loaded.opened[kid] = DataKey.derive(kid, material)
        return key

    async def _unwrap(self, scope: str, kid: str, entry: dict[str, Any]) -> bytes:
        try:
            wrapped = base64.b64decode(entry["wrapped"], validate=True)
            kek = entry["kek"]
        except (KeyError, TypeError, ValueError) as err:
            raise CorruptRecordError(f"the data key {kid!r} of {scope_name(scope)} is malformed") from err
        return await self.provider.unwrap(kek, wrapped, context=_context(scope, kid))

    async def _load(self, scope: str) -> _Scope | None:
        stored = await self.objects.get(keys_object(scope))
        if stored is None:
            self._scopes.pop(scope)
            return None
        return self._remember(scope, _parse(scope, stored.data))

    def _remember(self, scope: str, loaded: _Scope) -> _Scope:
        """Cache ``loaded``, keeping the keys already unwrapped that it still holds (a key's bytes never change)."""
        before = self._scopes.get(scope)
        if before is not None:
            loaded.opened.update({k: v for k, v in before.opened.items() if k in loaded.entries})
        self._scopes.put(scope, loaded)
        return loaded

    async def rotate(self, scope: str, *, older_than: float | None = None, attempts: int = 16) -> str | None:
        """Make a new data key current in ``scope``; return its id (``None``: nothing rotated).

        The key object gains the new key under a conditional write (read again on a conflict),
        and every older key stays in it, so values sealed before keep opening by their key id.
        New values this process seals use the new key at once; other processes use it once they
        read the key object again (see ``refresh``). A scope whose current key was made at or
        after ``older_than`` (a Unix time; default: now) is left alone, so two processes
        rotating at once add one key, and a run started again with the first run's
        ``older_than`` skips the scopes already rotated. A scope without data keys has nothing
        to rotate (its first key is made on its first write).

        Raises:
            SealingKeyError: The provider cannot wrap (an unreachable provider raises
                :class:`~agent_stores.core.errors.StoreUnavailableError`; nothing is written).
            StoreConflictError: The key object kept changing for every attempt.
        """
        cutoff = time.time() if older_than is None else older_than
        for _ in range(attempts):
            stored = await self.objects.get(keys_object(scope))
            if stored is None:
                return None
            loaded = _parse(scope, stored.data)
            if _created(loaded.entries[loaded.current]) >= cutoff:
                self._remember(scope, loaded)
                return None  # rotated since the cutoff (by another process, or an earlier run)
            kid, material, entry = await self._new_key(scope)
            while kid in loaded.entries:
                kid, material, entry = await self._new_key(scope)
            loaded.entries[kid] = entry
            loaded.current = kid
            try:
                await self.objects.put(keys_object(scope), _body(loaded), if_version=stored.version)
            except StoreConflictError:
                continue
            loaded.opened[kid] = DataKey.derive(kid, material)
            self._remember(scope, loaded)
            return kid
        raise StoreConflictError(f"the data keys of {scope_name(scope)} kept changing while a new one was added")

    async def _new_key(self, scope: str) -> tuple[str, bytes, dict[str, Any]]:
        kid = "dk-" + secrets.token_hex(8)
        material = AESGCM.generate_key(bit_length=256)
        wrapped = await self.provider.wrap(material, context=_context(scope, kid))
        entry = {
            "kek": self.provider.key_id,
            "wrapped": base64.b64encode(wrapped).decode("ascii"),
            "created": time.time(),  # exact: a rotation compares it with its cutoff
        }
        return kid, material, entry

    async def rewrap(self, scope: str, *, attempts: int = 16) -> int:
        """Wrap every data key of ``scope`` under the provider's current key-encryption key; return how many changed.

        Only the key object changes (no record is touched), on the condition that nobody else
        changed it meanwhile (else it is read again), so it is safe while agents write, and
        resumable: keys already under the current key-encryption key are left alone.

        Raises:
            SealingKeyError: The provider cannot unwrap a data key (it lacks the old key-encryption key).
            StoreConflictError: The key object kept changing for every attempt.
        """
        for _ in range(attempts):
            stored = await self.objects.get(keys_object(scope))
            if stored is None:
                return 0
            loaded = _parse(scope, stored.data)
            changed = 0
            for kid, entry in loaded.entries.items():
                if entry.get("kek") == self.provider.key_id:
                    continue
                material = await self._unwrap(scope, kid, entry)
                wrapped = await self.provider.wrap(material, context=_context(scope, kid))
                loaded.entries[kid] = {
                    **entry,  # what else the entry records (when the key was made) stays
                    "kek": self.provider.key_id,
                    "wrapped": base64.b64encode(wrapped).decode("ascii"),
                }
                changed += 1
            if not changed:
                return 0
            try:
                await self.objects.put(keys_object(scope), _body(loaded), if_version=stored.version)
            except StoreConflictError:
                continue
            self._scopes.pop(scope)
            return changed
        raise StoreConflictError(f"the data keys of {scope_name(scope)} kept changing while being re-wrapped")

    async def _create(self, scope: str) -> _Scope:
        kid, material, entry = await self._new_key(scope)
        if self.before_create is not None:
            await self.before_create()
        try:
            await self.objects.put(keys_object(scope), _body(_Scope(kid, {kid: entry})), if_absent=True)
        except StoreConflictError:
            loaded = await self._load(scope)  # another writer made the scope's key first: use theirs
            if loaded is None:
                raise
            return loaded
        loaded = _Scope(kid, {kid: entry})
        loaded.opened[kid] = DataKey.derive(kid, material)
        self._scopes.put(scope, loaded)
        return loaded


def _parse(scope: str, data: bytes) -> _Scope:
    try:
        raw: Any = json.loads(data)
        if raw.get("format") != _KEYS_FORMAT:
            raise ValueError("format")
        entries = {str(k): dict(v) for k, v in raw["keys"].items()}
        loaded = _Scope(str(raw["current"]), entries)
        if loaded.current not in entries:
            raise ValueError("current")
    except (ValueError, KeyError, TypeError, AttributeError) as err:
        where = f"{scope_name(scope)} ({keys_object(scope)!r})"
        raise CorruptRecordError(f"the data keys of {where} are malformed") from err
    return loaded


def _body(loaded: _Scope) -> bytes:
    return json.dumps({"format": _KEYS_FORMAT, "current": loaded.current, "keys": loaded.entries}).encode("utf-8")


def _context(scope: str, kid: str) -> bytes:
    return f"agent-stores data key\x00{scope}\x00{kid}".encode()


def _created(entry: dict[str, Any]) -> float:
    """When a data key was made (0 for keys stored before the time was recorded)."""
    created = entry.get("created", 0)
    return float(created) if isinstance(created, int | float) else 0.0
