"""The processes of the kill tests (``test_reliability_kills.py``); not a test module.

Three bodies, each SIGKILLed by the parent at some point: :func:`main` (an appending writer),
:func:`delete_main` (one ``delete_session`` of a long session) and :func:`cas_main` (a
compare-and-set writer of one session snapshot).

``python reliability_kill_worker.py URL SESSION WRITER SAVES`` opens the stores at ``URL``, tries to create
the file ``<SESSION>.txt`` exclusively (printing ``created`` or ``lost``), then saves ``SAVES``
pairs of messages ``WRITER:i:a`` and ``WRITER:i:b`` to ``SESSION`` one pair per save, printing
``ack i`` after each acknowledged save. A save that gives up against the other writers
(``StoreConflictError``, documented) prints ``conflict i`` and is retried, as an application
would. The parent SIGKILLs some writers mid-run and checks what was acknowledged against what
was stored.
"""

from __future__ import annotations

import asyncio
import random
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import Any

from agent_framework import AgentSession, Message

from agent_stores.core import ObjectLogDriver, StoreConflictError, open_stores
from agent_stores.core.sessions import decode_snapshot, encode_snapshot

SOURCE_ID = "kill-test"


def file_name(session: str) -> str:
    """The file every writer of ``session`` tries to create."""
    return f"{session}.txt"


def pair(writer: str, index: int) -> list[Message]:
    """The two messages of one save."""
    return [
        Message(role="user", contents=[f"{writer}:{index}:a"], message_id=f"{writer}:{index}:a"),
        Message(role="assistant", contents=[f"{writer}:{index}:b"], message_id=f"{writer}:{index}:b"),
    ]


async def main(url: str, session: str, writer: str, saves: int) -> None:
    async with open_stores(url) as stores:
        history = stores.history_provider(source_id=SOURCE_ID)
        files = stores.file_store()
        print("ready", flush=True)
        try:
            await files.write(file_name(session), writer, overwrite=False)
            print("created", flush=True)
        except FileExistsError:
            print("lost", flush=True)
        pace = random.Random(writer)
        for index in range(saves):
            while True:
                try:
                    await history.save_messages(session, pair(writer, index))
                    break
                except StoreConflictError:
                    print(f"conflict {index}", flush=True)
            print(f"ack {index}", flush=True)
            await asyncio.sleep(pace.uniform(0, 0.01))  # an agent's turn takes a while; do not hammer


def _freeze() -> None:
    """Stop this whole process where it stands (the event loop too) until the parent kills it."""
    print("frozen", flush=True)
    time.sleep(600)


class _FreezingObjects:
    """An object driver that freezes the process after its ``after``-th ``put`` completed.

    Put 1 of an object-log delete is the reset segment (the commit point: from then on the log
    reads as deleted), the next ones blank the older segments; freezing there and being
    SIGKILLed is a delete interrupted half-way through its erasure.
    """

    def __init__(self, inner: Any, after: int) -> None:
        self._inner = inner
        self._left = after

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def put(self, key: str, data: bytes, **options: Any) -> str:
        version = await self._inner.put(key, data, **options)
        self._left -= 1
        if self._left == 0:
            _freeze()
        return version


def _freeze_mongodb_after(database: Any, operation: str) -> None:
    """Freeze the process once the MongoDB operation named ``operation`` (a ``database.run`` label) found its document.

    A delete first removes the session's staging log (``core/retain.py``), normally absent: the
    freeze waits for the operation that found something, the session's own log head.
    """
    run: Callable[..., Awaitable[Any]] = database.run

    async def frozen_after(name: str, *args: Any, **kwargs: Any) -> Any:
        result = await run(name, *args, **kwargs)
        if name == operation and result is not None:
            _freeze()
        return result

    database.run = frozen_after


async def delete_main(url: str, session: str, freeze_after: int) -> None:
    """Delete ``session``'s history, printing ``deleting`` first and ``deleted`` when it returned.

    With ``freeze_after > 0`` the process freezes mid-delete (printing ``frozen``) so the parent's
    SIGKILL lands exactly there: on an object log after that many object writes (1: the reset
    segment, more: some older segments blanked too), on MongoDB after the head was retired and
    before its batches were removed. Other backends' deletes are one atomic statement or script;
    the parent kills them after a random delay instead.
    """
    async with open_stores(url) as stores:
        history = stores.history_provider(source_id=SOURCE_ID)
        driver: Any = history.driver
        if freeze_after > 0:
            if isinstance(driver, ObjectLogDriver):
                driver.objects = _FreezingObjects(driver.objects, freeze_after)  # type: ignore[assignment]
            elif hasattr(driver, "database"):
                _freeze_mongodb_after(driver.database, "retire log head")
        await history.count_messages(session)  # connected, so the kill's delay falls on the delete itself
        print("deleting", flush=True)
        await history.delete_session(session)
        print("deleted", flush=True)
        await asyncio.sleep(600)  # the parent's kill may come after the delete returned: wait for it here


#: The state field a compare-and-set writer increments, and the one that lists every increment.
COUNT, LOG = "count", "increments"


async def compare_and_set(sessions: Any, session: str, change: Callable[[dict[str, Any]], None]) -> int:
    """Apply ``change`` to the stored snapshot's state by compare-and-set, retrying on conflict.

    Reads the snapshot and its version through the session store's driver, writes the changed
    snapshot on the condition that it is still at that version (``if_version``; ``if_absent``
    when there is none yet), and starts over on ``StoreConflictError``. Returns the conflicts met.
    """
    key = sessions.snapshot_key(session)
    conflicts = 0
    while True:
        stored = await sessions.driver.get(key)
        current = AgentSession(session_id=session) if stored is None else decode_snapshot(stored.data, where=key)
        change(current.state)
        data = encode_snapshot(current)
        try:
            if stored is None:
                await sessions.driver.put(key, data, if_absent=True)
            else:
                await sessions.driver.put(key, data, if_version=stored.version)
            return conflicts
        except StoreConflictError:
            conflicts += 1


async def cas_main(url: str, session: str, writer: str, increments: int) -> None:
    """Increment ``session``'s counter ``increments`` times by compare-and-set, printing ``ack i`` after each.

    Each increment also appends ``WRITER:i`` to the state's list of increments, so the parent can
    tell which increments were applied, and how often. Conflicts print ``conflict N``.
    """
    async with open_stores(url) as stores:
        sessions = stores.session_store()
        print("ready", flush=True)
        pace = random.Random(writer)
        for index in range(increments):

            def increment(state: dict[str, Any], index: int = index) -> None:
                state[COUNT] = int(state.get(COUNT, 0)) + 1
                state[LOG] = [*state.get(LOG, []), f"{writer}:{index}"]

            conflicts = await compare_and_set(sessions, session, increment)
            if conflicts:
                print(f"conflict {conflicts}", flush=True)
            print(f"ack {index}", flush=True)
            await asyncio.sleep(pace.uniform(0, 0.005))


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
