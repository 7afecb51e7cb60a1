"""One writer process of the kill test (``test_reliability_kills.py``); not a test module.

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
import warnings

from agent_framework import Message

from agent_stores.core import StoreConflictError, open_stores

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


if __name__ == "__main__":
    warnings.simplefilter("ignore")
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
