"""Conformance clauses for ``agent_framework.SessionStore`` implementations."""

from __future__ import annotations

import asyncio
import math
import warnings
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from agent_framework import AgentSession, Message, SessionStore

from agent_stores.core import ObjectSessionStore, StoreConflictError

from ._base import ConformanceBase, raises, requires, unique_id
from .adversarial import adversarial_ids

__all__ = ["SessionStoreCapabilities", "SessionStoreConformance", "corrupt_object_session"]

OpenStore = Callable[..., Awaitable[Any]]


async def corrupt_object_session(store: ObjectSessionStore, session_id: str) -> None:
    """Overwrite the stored snapshot of ``session_id`` with bytes that are not a snapshot.

    The ``corrupt_session`` fixture of any session store built on the core's
    ``ObjectSessionStore`` (every backend's session store)::

        @pytest.fixture
        def corrupt_session(self):
            return corrupt_object_session
    """
    await store.driver.put(store.snapshot_key(session_id), b"{not a snapshot")


@dataclass(frozen=True)
class SessionStoreCapabilities:
    """What a session store declares about itself; defaults are the minimal ``SessionStore`` contract.

    Attributes:
        durable: Snapshots are serialised: state must round-trip through the framework's durable
            codec, so an unserialisable value is a ``TypeError``, a non-finite float a
            ``ValueError``, and ``AgentSession`` subclasses are refused with ``TypeError``
            (as ``FileSessionStore`` does). The in-memory ``SessionStore`` keeps deep copies instead.
        max_id_length: The longest id the store accepts; longer ids are a ``ValueError``.
            ``None``: any length (the suite tries 1 kB and 10 kB ids).
        corruptible: The test class provides a ``corrupt_session`` fixture: an async callable
            ``(store, session_id) -> None`` that overwrites the stored snapshot with bytes that are
            not a snapshot. The store must then report a ``ValueError`` and recover on retry.
            For a store built on the core's ``ObjectSessionStore``, the fixture returns
            :func:`corrupt_object_session`.
        versioned: The store has compare-and-set versions, as ``ObjectSessionStore`` does:
            ``get_versioned(id)`` returns ``(session, version)`` or ``None``; ``set(id, session,
            if_version=..., if_absent=...)`` raises ``StoreConflictError`` when the condition does
            not hold, also against another store instance over the same data; and
            ``update(id, change)`` retries until ``change`` was applied to the newest snapshot.

    """

    durable: bool = False
    max_id_length: int | None = None
    corruptible: bool = False
    versioned: bool = False


def _state_example() -> dict[str, Any]:
    return {
        "nested": {"list": [1, 2.5, "three", None, True, {"deep": []}], "empty": {}},
        "unicode": "ünïcødé 🙂",
        "history": {"messages": [Message(role="user", contents=["hello"], message_id="m1")]},
    }


class SessionStoreConformance(ConformanceBase):
    """Clauses every ``SessionStore`` must pass.

    Provide a ``session_store_factory`` fixture returning a callable (sync or async) that opens
    a store over the same backing data on every call.
    """

    capabilities: ClassVar[SessionStoreCapabilities] = SessionStoreCapabilities()
    factory_fixture: ClassVar[str] = "session_store_factory"
    driver_suite: ClassVar[str | None] = "ObjectDriverConformance"

    async def test_get_missing_returns_none(self, open_store: OpenStore) -> None:
        """``get`` of an id never stored returns ``None``.

        A failure means the store raises or invents a session for unknown ids; return ``None``.
        """
        store: SessionStore = await open_store()
        assert await store.get(unique_id("missing")) is None

    async def test_round_trip(self, open_store: OpenStore) -> None:
        """``set`` then ``get`` returns an equal session: id, ``service_session_id`` and state.

        A failure means a field is dropped or changed on the way through storage; compare the
        ``to_dict()`` of what was stored and what came back to see which.
        """
        store: SessionStore = await open_store()
        key = unique_id("session")
        session = AgentSession(session_id=key, service_session_id="resp_123")
        session.state.update(_state_example())
        await store.set(key, session)
        loaded = await store.get(key)
        assert loaded is not None
        assert loaded.to_dict() == session.to_dict()
        assert isinstance(loaded.state["history"]["messages"][0], Message)
        await store.delete(key)

    async def test_service_session_id_mapping(self, open_store: OpenStore) -> None:
        """A mapping ``service_session_id`` (hosted conversation state) round-trips as an equal mapping.

        A failure means the store only handles string service ids; store the mapping as JSON.
        """
        store: SessionStore = await open_store()
        key = unique_id("service")
        service_id = {"conversation_id": "conv_1", "response_id": "resp_2", "extra": {"n": 3}}
        await store.set(key, AgentSession(session_id=key, service_session_id=service_id))
        loaded = await store.get(key)
        assert loaded is not None
        assert isinstance(loaded.service_session_id, Mapping)
        assert dict(loaded.service_session_id) == service_id
        await store.set(key, AgentSession(session_id=key))
        again = await store.get(key)
        assert again is not None and again.service_session_id is None
        await store.delete(key)

    async def test_get_returns_independent_copies(self, open_store: OpenStore) -> None:
        """Every ``get`` returns a fresh copy, and ``set`` stores a snapshot, not a reference.

        A failure means a caller's mutation leaks into the stored session (or into another
        caller's copy); deep-copy or re-decode on every ``get`` and snapshot on ``set``.
        """
        store: SessionStore = await open_store()
        key = unique_id("copies")
        session = AgentSession(session_id=key)
        session.state["items"] = [1]
        await store.set(key, session)
        session.state["items"].append(2)
        session.state["late"] = True
        first = await store.get(key)
        second = await store.get(key)
        assert first is not None and second is not None
        assert first is not second and first is not session
        assert first.state == {"items": [1]}
        first.state["items"].append(3)
        assert second.state == {"items": [1]}
        third = await store.get(key)
        assert third is not None and third.state == {"items": [1]}
        await store.delete(key)

    async def test_set_replaces(self, open_store: OpenStore) -> None:
        """A second ``set`` under the same id replaces the first snapshot entirely.

        A failure means state was merged instead of replaced; write the whole snapshot.
        """
        store: SessionStore = await open_store()
        key = unique_id("replace")
        first = AgentSession(session_id=key, service_session_id="one")
        first.state["old"] = 1
        await store.set(key, first)
        second = AgentSession(session_id=key)
        second.state["new"] = 2
        await store.set(key, second)
        loaded = await store.get(key)
        assert loaded is not None
        assert loaded.state == {"new": 2} and loaded.service_session_id is None
        await store.delete(key)

    async def test_delete_is_idempotent(self, open_store: OpenStore) -> None:
        """``delete`` removes the session and deleting an absent id is not an error.

        A failure means ``delete`` raised for a missing id or left the snapshot readable.
        """
        store: SessionStore = await open_store()
        key = unique_id("delete")
        await store.delete(key)
        await store.set(key, AgentSession(session_id=key))
        await store.delete(key)
        assert await store.get(key) is None
        await store.delete(key)

    @pytest.mark.parametrize("bad", ["", None, 7])
    async def test_invalid_ids_rejected(self, open_store: OpenStore, bad: Any) -> None:
        """An empty or non-string id is a ``ValueError`` for ``get``, ``set`` and ``delete``.

        A failure means the store accepted an id the protocol forbids; call
        ``SessionStore.validate_session_id`` first.
        """
        store: SessionStore = await open_store()
        with pytest.raises(ValueError):
            await store.get(bad)
        with pytest.raises(ValueError):
            await store.set(bad, AgentSession(session_id="x"))
        with pytest.raises(ValueError):
            await store.delete(bad)

    async def test_ids_are_opaque(self, open_store: OpenStore) -> None:
        """The store key is opaque: it need not equal ``session.session_id``, which comes back unchanged.

        A failure means the store keyed by ``session.session_id`` or rewrote it; key by the id
        passed to ``set``/``get`` and store the session's own id inside the snapshot.
        """
        store: SessionStore = await open_store()
        key = unique_id("opaque")
        inner = unique_id("inner")
        await store.set(key, AgentSession(session_id=inner))
        loaded = await store.get(key)
        assert loaded is not None and loaded.session_id == inner
        assert await store.get(inner) is None
        await store.delete(key)

    async def test_adversarial_ids_are_distinct(self, open_store: OpenStore) -> None:
        """Ids differing in case, whitespace, separators, ``..``, globs, braces or Unicode form never collide.

        The ids are a unique base alone and with each adversarial fragment every store must keep
        (:func:`agent_stores.testing.adversarial.storable`) after it.

        A failure means two ids share one snapshot (the assertion names them); derive keys
        injectively (e.g. ``agent_stores.core.key_segment``), never by lowercasing, trimming or
        path-normalising ids.
        """
        store: SessionStore = await open_store()
        base = unique_id("adv")
        keys = adversarial_ids(base)
        for index, key in enumerate(keys):
            session = AgentSession(session_id=key)
            session.state["index"] = index
            await store.set(key, session)
        for index, key in enumerate(keys):
            loaded = await store.get(key)
            assert loaded is not None, f"{key!r} was lost"
            assert loaded.state["index"] == index, f"{key!r} collided with {keys[loaded.state['index']]!r}"
        for key in keys:
            await store.delete(key)

    async def test_long_ids(self, open_store: OpenStore) -> None:
        """Long ids work up to the declared ``max_id_length`` and are a ``ValueError`` beyond it.

        With no limit declared, 1 kB and 10 kB ids must work and stay distinct when they differ
        only in the last character. A failure means long ids are truncated (collide) or rejected
        without being declared.
        """
        store: SessionStore = await open_store()
        limit = self.capabilities.max_id_length
        base = unique_id("long")
        lengths = [1_000, 10_000] if limit is None else [limit]
        for length in lengths:
            first = base + "x" * (length - len(base) - 1) + "1"
            second = first[:-1] + "2"
            await store.set(first, AgentSession(session_id="one"))
            await store.set(second, AgentSession(session_id="two"))
            loaded_first, loaded_second = await store.get(first), await store.get(second)
            assert loaded_first is not None and loaded_first.session_id == "one"
            assert loaded_second is not None and loaded_second.session_id == "two"
            await store.delete(first)
            await store.delete(second)
        if limit is not None:
            with pytest.raises(ValueError):
                await store.set(base + "x" * limit, AgentSession(session_id="too-long"))

    async def test_restart_sees_snapshot(self, open_store: OpenStore) -> None:
        """A second store instance over the same data reads what the first stored.

        A failure means the snapshot lives in the instance, not in the backing store (or the
        factory does not reopen the same data).
        """
        first: SessionStore = await open_store()
        key = unique_id("restart")
        session = AgentSession(session_id=key)
        session.state["kept"] = "yes"
        await first.set(key, session)
        second: SessionStore = await open_store()
        loaded = await second.get(key)
        assert loaded is not None and loaded.state == {"kept": "yes"}
        await second.delete(key)
        assert await first.get(key) is None

    async def test_concurrent_sets_last_writer_wins(self, open_store: OpenStore) -> None:
        """Concurrent ``set`` calls leave exactly one writer's whole snapshot, never a mix or a torn record.

        A failure means a reader saw a partial snapshot or fields from two writers; write each
        snapshot atomically (one object, one row, or write-then-rename).
        """
        stores: list[SessionStore] = [await open_store(), await open_store()]
        key = unique_id("race")
        sessions: list[AgentSession] = []
        for index in range(16):
            session = AgentSession(session_id=f"{key}-{index}")
            session.state.update({"index": index, "payload": "x" * (index * 512)})
            sessions.append(session)
        await asyncio.gather(*(stores[i % 2].set(key, s) for i, s in enumerate(sessions)))
        loaded = await stores[0].get(key)
        assert loaded is not None
        index: int = loaded.state["index"]
        assert loaded.to_dict() == sessions[index].to_dict()
        await stores[0].delete(key)

    @requires("durable")
    async def test_unserialisable_state_is_type_error(self, open_store: OpenStore) -> None:
        """State holding a value with no codec is a ``TypeError`` and the stored snapshot is unchanged.

        A failure means the store wrote something it cannot read back (or overwrote the good
        snapshot first); encode completely before writing.
        """
        store: SessionStore = await open_store()
        key = unique_id("typeerror")
        good = AgentSession(session_id=key)
        good.state["ok"] = 1
        await store.set(key, good)
        bad = AgentSession(session_id=key)
        bad.state["handle"] = object()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # the framework warns before refusing
            with pytest.raises(TypeError):
                await store.set(key, bad)
        loaded = await store.get(key)
        assert loaded is not None and loaded.state == {"ok": 1}
        await store.delete(key)

    @requires("durable")
    async def test_non_finite_float_is_value_error(self, open_store: OpenStore) -> None:
        """A NaN or infinite float in state is a ``ValueError``: JSON cannot carry it faithfully.

        A failure means the value was silently turned into ``null`` or a non-JSON token.
        """
        store: SessionStore = await open_store()
        key = unique_id("nan")
        for value in (math.nan, math.inf):
            session = AgentSession(session_id=key)
            session.state["score"] = value
            with pytest.raises(ValueError):
                await store.set(key, session)
        assert await store.get(key) is None

    @requires("durable")
    async def test_session_subclasses_refused(self, open_store: OpenStore) -> None:
        """A subclass of ``AgentSession`` is a ``TypeError``: a snapshot restores only ``AgentSession``.

        A failure means the store accepted a subclass whose extra fields it would silently drop.
        """

        class CustomSession(AgentSession):
            pass

        store: SessionStore = await open_store()
        key = unique_id("subclass")
        with pytest.raises(TypeError):
            await store.set(key, CustomSession(session_id=key))
        assert await store.get(key) is None

    @requires("corruptible")
    async def test_corrupt_snapshot_reported_then_recoverable(
        self, open_store: OpenStore, request: pytest.FixtureRequest
    ) -> None:
        """A snapshot that cannot be decoded is a ``ValueError``; after it, the id reads as absent and can be reused.

        A failure means a corrupt record crashed with another error type, kept failing forever
        (not quarantined), or was silently replaced by an empty session.
        """
        corrupt: Callable[[Any, str], Awaitable[None]] = request.getfixturevalue("corrupt_session")
        store: SessionStore = await open_store()
        key = unique_id("corrupt")
        await store.set(key, AgentSession(session_id=key))
        await corrupt(store, key)
        with pytest.raises(ValueError):
            await store.get(key)
        assert await store.get(key) is None
        fresh = AgentSession(session_id=key)
        fresh.state["again"] = True
        await store.set(key, fresh)
        loaded = await store.get(key)
        assert loaded is not None and loaded.state == {"again": True}
        await store.delete(key)

    @requires("versioned")
    async def test_versioned_get_tracks_writes(self, open_store: OpenStore) -> None:
        """``get_versioned`` returns ``None`` when absent, else ``get``'s session and a version each write changes.

        A failure means the version is missing, does not change when the snapshot is rewritten
        (so a stale writer would not be caught), or comes with a different session than ``get``.
        """
        store: Any = await open_store()
        key = unique_id("versioned")
        assert await store.get_versioned(key) is None
        session = AgentSession(session_id=key)
        session.state["n"] = 1
        await store.set(key, session)
        first = await store.get_versioned(key)
        assert first is not None
        loaded, version = first
        assert isinstance(version, str) and loaded.to_dict() == session.to_dict()
        session.state["n"] = 2
        await store.set(key, session)
        second = await store.get_versioned(key)
        assert second is not None and second.version != version and second.session.state == {"n": 2}
        await store.delete(key)

    @requires("versioned")
    async def test_stale_version_set_conflicts(self, open_store: OpenStore) -> None:
        """Of two replicas that read one version, the first conditional ``set`` wins, the second conflicts.

        The second is a ``StoreConflictError``. Also: ``if_version`` on an absent session and
        ``if_absent`` on a stored one conflict, and a refused ``set`` writes nothing. A failure
        means a replica can overwrite a snapshot it never saw (the lost update compare-and-set
        exists to prevent); write with the driver's conditional put.
        """
        first: Any = await open_store()
        second: Any = await open_store()
        key = unique_id("stale")
        await first.set(key, AgentSession(session_id=key), if_absent=True)
        with raises(StoreConflictError, "a second if_absent set of a stored session"):
            await second.set(key, AgentSession(session_id="other"), if_absent=True)
        read_first, read_second = await first.get_versioned(key), await second.get_versioned(key)
        assert read_first is not None and read_second is not None
        assert read_first.version == read_second.version
        read_first.session.state["by"] = "first"
        await first.set(key, read_first.session, if_version=read_first.version)
        read_second.session.state["by"] = "second"
        with raises(StoreConflictError, "a set at a version another replica already replaced"):
            await second.set(key, read_second.session, if_version=read_second.version)
        stored = await second.get(key)
        assert stored is not None and stored.state == {"by": "first"}
        await first.delete(key)
        with raises(StoreConflictError, "an if_version set of a deleted session"):
            await first.set(key, read_first.session, if_version=read_first.version)
        assert await first.get(key) is None

    @requires("versioned")
    async def test_update_loses_no_concurrent_change(self, open_store: OpenStore) -> None:
        """Concurrent ``update`` calls through two instances each apply their change: none is lost.

        Every change yields between reading and writing, so the updates interleave. A failure
        means ``update`` wrote without checking the version it read (a lost update) or gave up
        instead of retrying on the newest snapshot.
        """
        stores: list[Any] = [await open_store(), await open_store()]
        key = unique_id("update")

        def adding(tag: str) -> Callable[[AgentSession | None], Awaitable[AgentSession]]:
            async def change(current: AgentSession | None) -> AgentSession:
                session = current or AgentSession(session_id=key)
                for _ in range(3):
                    await asyncio.sleep(0)  # let the other updates read the same version
                session.state["tags"] = [*session.state.get("tags", []), tag]
                return session

            return change

        tags = [f"t{index}" for index in range(12)]
        results = await asyncio.gather(*(stores[i % 2].update(key, adding(tag)) for i, tag in enumerate(tags)))
        stored = await stores[0].get(key)
        assert stored is not None
        assert sorted(stored.state["tags"]) == sorted(tags), f"lost: {sorted(set(tags) - set(stored.state['tags']))}"
        assert all(isinstance(result, AgentSession) for result in results)
        await stores[0].delete(key)

    @requires("versioned")
    async def test_update_creates_and_failed_change_writes_nothing(self, open_store: OpenStore) -> None:
        """``update`` of an absent session passes ``None`` and stores the result; a change that raises stores nothing.

        A failure means ``update`` invented a session for the change, or wrote before the
        change finished.
        """
        store: Any = await open_store()
        key = unique_id("create")
        seen: list[AgentSession | None] = []

        def create(current: AgentSession | None) -> AgentSession:
            seen.append(current)
            session = AgentSession(session_id=key)
            session.state["made"] = True
            return session

        made = await store.update(key, create)
        assert seen == [None] and made.state == {"made": True}

        def failing(current: AgentSession | None) -> AgentSession:
            assert current is not None
            current.state["made"] = False
            raise LookupError("the change failed")

        with pytest.raises(LookupError):
            await store.update(key, failing)
        stored = await store.get(key)
        assert stored is not None and stored.state == {"made": True}
        await store.delete(key)
