"""``ObjectSessionStore``: the framework's ``SessionStore`` over any :class:`ObjectDriver`."""

from __future__ import annotations

import asyncio
import inspect
import random
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NamedTuple, cast

import msgspec
from agent_framework import AgentSession, SessionStore

from ._experimental import subclassing_experimental
from ._framework import (
    SESSION_SNAPSHOT_DECODER,
    SESSION_SNAPSHOT_ENCODER,
    SESSION_SNAPSHOT_VERSION,
    SessionSnapshot,
    SessionStatePayload,
    deserialize_state,
)
from .drivers import ObjectDriver
from .errors import CorruptRecordError, StoreConflictError
from .keys import KeySpace, key_segment
from .lifecycle import OwnedResource
from .telemetry import note_conflict, store_operation

__all__ = ["ObjectSessionStore", "SessionUpdate", "VersionedSession", "decode_snapshot", "encode_snapshot"]

# Optimistic-concurrency retries of one ``update`` against other writers, with jittered backoff:
# at least this many attempts, and more while the update has spent less than the budget.
_CONFLICT_ATTEMPTS = 32
_CONFLICT_BUDGET_S = 10.0
_BACKOFF_BASE_S = 0.001
_BACKOFF_CAP_S = 0.05


class VersionedSession(NamedTuple):
    """A stored session and the opaque version it was read at (for ``set(..., if_version=)``)."""

    session: AgentSession
    version: str


#: What ``ObjectSessionStore.update`` calls: the newest stored session (``None`` when absent) to
#: the session to store; sync or async. It may run several times (once per conflicting write).
SessionUpdate = Callable[[AgentSession | None], AgentSession | Awaitable[AgentSession]]


def encode_snapshot(session: AgentSession) -> bytes:
    """Encode ``session`` exactly as the framework's ``FileSessionStore`` writes its JSON files.

    Raises:
        TypeError: ``session`` is not an ``AgentSession`` or its state holds an unserialisable value.
        ValueError: The state holds a value the durable codec rejects (a non-finite float).

    """
    if type(session) is not AgentSession:
        raise TypeError("session stores take AgentSession instances only; subclasses need a custom SessionStore")
    service_session_id = session.service_session_id
    snapshot = SessionSnapshot(
        type="session",
        session_id=session.session_id,
        service_session_id=dict(service_session_id) if isinstance(service_session_id, Mapping) else service_session_id,
        state=SessionStatePayload(session.state),
    )
    return SESSION_SNAPSHOT_ENCODER.encode(snapshot)


def decode_snapshot(data: bytes, *, where: str) -> AgentSession:
    """Decode a snapshot written by :func:`encode_snapshot` (or by ``FileSessionStore``).

    Raises:
        CorruptRecordError: ``data`` is not JSON (also a ``ValueError``).
        ValueError: The envelope has the wrong shape or an unsupported version, or state restore fails.

    """
    try:
        snapshot = SESSION_SNAPSHOT_DECODER.decode(data)
    except msgspec.ValidationError as err:
        raise ValueError(f"session snapshot {where} has an invalid schema") from err
    except msgspec.DecodeError as err:
        raise CorruptRecordError(f"session snapshot {where} is not valid JSON") from err
    if snapshot.version != SESSION_SNAPSHOT_VERSION:
        raise ValueError(
            f"unsupported session snapshot version {snapshot.version!r} in {where}; "
            f"expected {SESSION_SNAPSHOT_VERSION!r}"
        )
    raw_state: object = snapshot.state
    if not isinstance(raw_state, dict):
        raise ValueError(f"session snapshot state in {where} must be a mapping")
    try:
        state = deserialize_state(cast(dict[str, Any], raw_state))
    except (TypeError, ValueError) as err:
        raise ValueError(f"failed to restore session state from {where}") from err
    session = AgentSession(session_id=snapshot.session_id, service_session_id=snapshot.service_session_id)
    session.state = state
    return session


with subclassing_experimental(SessionStore):

    class ObjectSessionStore(OwnedResource, SessionStore):
        """Session snapshots as objects, in the framework's ``FileSessionStore`` JSON envelope.

        Every ``get`` returns an independent copy. Session ids are opaque non-empty strings,
        mapped injectively to keys (long ids by SHA-256). A snapshot that is not JSON is moved
        aside to ``<key>.<uuid>.corrupt`` and reported as a ``ValueError``, so a retry starts clean.
        Concurrent plain ``set`` calls are last-writer-wins; replicas serving turns of one
        session use the versions instead: :meth:`get_versioned`, ``set(..., if_version=)`` that
        refuses a stale version with ``StoreConflictError``, and :meth:`update`, which retries,
        so no replica overwrites a snapshot it has not seen.

        Security posture:
            Snapshots are stored as plaintext JSON; session state is only as private as the
            backing store. Keys are derived, never interpreted, so no id can reach another key.

        Args:
            driver: The object driver; borrowed unless ``owns_driver``.
            prefix: Key prefix of every snapshot (``""`` or ending with ``/``).
            tenant: Keep every snapshot under ``tenants/<tenant>/`` (what a tenant view passes).
            owns_driver: Close the driver on ``aclose()``.

        Raises:
            ValueError: ``prefix`` does not end with ``/``, or ``tenant`` is empty.
        """

        def __init__(
            self,
            driver: ObjectDriver,
            *,
            prefix: str = "sessions/",
            tenant: str | None = None,
            owns_driver: bool = False,
        ) -> None:
            super().__init__()
            self.driver = driver
            self.prefix = KeySpace(tenant=tenant).under(prefix)
            self.tenant = tenant
            self._adopt(driver, owned=owns_driver)

        def _key(self, session_id: str) -> str:
            SessionStore.validate_session_id(session_id)
            return f"{self.prefix}{key_segment(session_id)}.json"

        def snapshot_key(self, session_id: str) -> str:
            """Return the driver key the snapshot of ``session_id`` is stored under.

            For tools and tests that reach a stored record through ``driver`` directly (the
            conformance suite's ``corrupt_session`` fixture, see
            :func:`agent_stores.testing.corrupt_object_session`).

            Raises:
                ValueError: ``session_id`` is empty.

            """
            return self._key(session_id)

        @store_operation("sessions", "get", session=True)
        async def get(self, session_id: str) -> AgentSession | None:
            """Return an independent copy of the stored session, or ``None``.

            Raises:
                ValueError: ``session_id`` is empty, or the snapshot is corrupt (quarantined) or unsupported.

            """
            versioned = await self._get_versioned(session_id)
            return None if versioned is None else versioned.session

        @store_operation("sessions", "get_versioned", session=True)
        async def get_versioned(self, session_id: str) -> VersionedSession | None:
            """Return an independent copy of the stored session with its version, or ``None``.

            Pass the version to ``set(..., if_version=)`` to write only if nobody wrote meanwhile.

            Raises:
                ValueError: ``session_id`` is empty, or the snapshot is corrupt (quarantined) or unsupported.

            """
            return await self._get_versioned(session_id)

        async def _get_versioned(self, session_id: str) -> VersionedSession | None:
            key = self._key(session_id)
            stored = await self.driver.get(key)
            if stored is None:
                return None
            try:
                return VersionedSession(decode_snapshot(stored.data, where=repr(key)), stored.version)
            except CorruptRecordError as err:
                quarantine = f"{key}.{uuid.uuid4().hex}.corrupt"
                try:
                    await self.driver.put(quarantine, stored.data, if_absent=True)
                    await self.driver.delete(key, if_version=stored.version)
                except StoreConflictError:
                    await self.driver.delete(quarantine)
                    raise CorruptRecordError(f"{err}; it changed while being read, retry") from err
                raise CorruptRecordError(f"{err}; quarantined to {quarantine!r}, retry to start a new session") from err

        @store_operation("sessions", "set", session=True)
        async def set(
            self,
            session_id: str,
            session: AgentSession,
            *,
            if_version: str | None = None,
            if_absent: bool = False,
        ) -> None:
            """Store a snapshot of ``session``, replacing any earlier one.

            With ``if_version`` (from :meth:`get_versioned`), only while the stored snapshot is
            still at that version; with ``if_absent``, only while none is stored.

            Raises:
                ValueError: ``session_id`` is empty, or the state holds a non-finite float.
                TypeError: ``session`` is not an ``AgentSession`` or its state is not serialisable.
                StoreConflictError: The condition does not hold (another writer stored or deleted
                    the session, or ``if_absent`` and one is stored); nothing was written.

            """
            key = self._key(session_id)
            await self.driver.put(key, encode_snapshot(session), if_absent=if_absent, if_version=if_version)

        @store_operation("sessions", "update", session=True)
        async def update(self, session_id: str, change: SessionUpdate) -> AgentSession:
            """Apply ``change`` to the newest stored session and store the result, never over another writer's.

            ``change`` receives an independent copy of the stored session (``None`` when there is
            none) and returns the session to store. When another writer stores or deletes the
            session in between, ``change`` runs again on the newest snapshot (with jittered
            backoff: at least 32 attempts, and more until 10 seconds are spent), so keep it free
            of side effects that must not repeat. An exception from ``change`` propagates and
            nothing is written.

            Returns:
                The session as stored.

            Raises:
                StoreConflictError: Other writers kept winning for every attempt.
                ValueError, TypeError: As :meth:`get` and :meth:`set` raise them.

            """
            deadline = time.monotonic() + _CONFLICT_BUDGET_S
            attempt = 0
            while True:
                current = await self.get_versioned(session_id)
                changed = change(None if current is None else current.session)
                if inspect.isawaitable(changed):
                    changed = await changed
                session = changed
                try:
                    if current is None:
                        await self.set(session_id, session, if_absent=True)
                    else:
                        await self.set(session_id, session, if_version=current.version)
                except StoreConflictError:
                    attempt += 1
                    note_conflict("set", attempt)
                    if attempt >= _CONFLICT_ATTEMPTS and time.monotonic() >= deadline:
                        raise StoreConflictError(
                            f"gave up updating session {session_id!r} after {attempt} conflicting writes"
                        ) from None
                    await asyncio.sleep(random.uniform(0, min(_BACKOFF_CAP_S, _BACKOFF_BASE_S * 2 ** min(attempt, 16))))
                    continue
                return session

        @store_operation("sessions", "delete", session=True)
        async def delete(self, session_id: str) -> None:
            """Delete the stored session; deleting an absent one is not an error."""
            await self.driver.delete(self._key(session_id))
