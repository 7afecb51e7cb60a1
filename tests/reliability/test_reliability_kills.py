"""Killed processes: writers SIGKILLed mid-save lose nothing acknowledged and brick nothing, on every backend.

Each round starts 4 writer processes (forked, running ``reliability_kill_worker.py``) on one session of one store: each
creates one file exclusively, then saves pairs of messages. Two of them are SIGKILLed at
a random point while saving (after a random number of acknowledged saves, then a random delay
of up to 30 ms, so the kill lands before, inside or after a save's requests). Then:

- every acknowledged save is stored exactly once, both messages of a save together and
  adjacent (a save is atomic), at most the one save in flight when the kill came stored
  beyond them, and each writer's saves in its own order;
- exactly one process created the file, and the file holds its name;
- the session reads, counts, and takes a later save.

A save that gives up after its retries against the other writers (``StoreConflictError``, as
documented) is retried by the writer and counted; it is not an acknowledgement.

One round per backend by default; ``AGENT_STORES_HEAVY=1`` runs 5 rounds of 6 processes (3 killed).
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import random
import signal
import sys
import time
import traceback
import uuid
import warnings
from collections import Counter
from pathlib import Path

import pytest
from agent_framework import Message

from agent_stores.core import open_stores
from reliability_figures import record
from reliability_kill_worker import SOURCE_ID, file_name
from reliability_kill_worker import main as worker_main
from reliability_support import HEAVY, Target

pytestmark = pytest.mark.asyncio

ROUNDS = 5 if HEAVY else 1
PROCESSES = 6 if HEAVY else 4
KILLED = PROCESSES // 2
SURVIVOR_SAVES = 12
START_TIMEOUT = 120.0


def _run_writer(target: Target, session: str, name: str, saves: int, out: Path) -> None:
    """The body of a forked writer: its output to ``out``, then the worker's ``main``."""
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = sys.stderr = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 - the process's own stdout
    os.environ.update(target.env)
    warnings.simplefilter("ignore")
    code = 0
    try:
        asyncio.run(worker_main(target.url, session, name, saves))
    except BaseException:
        traceback.print_exc()
        code = 1
    sys.stdout.flush()
    os._exit(code)  # nothing of the parent's (pytest's) exit handling runs in the fork


class Writer:
    """One writer process and what it printed (its acknowledgements).

    Forked from this (already imported) process, so four writers start in milliseconds instead
    of seconds of imports each; ``reliability_kill_worker.py`` runs the same body standalone.
    """

    def __init__(self, target: Target, session: str, name: str, saves: int, out: Path) -> None:
        self.name = name
        self.out = out
        out.touch()
        self.process = multiprocessing.get_context("fork").Process(
            target=_run_writer, args=(target, session, name, saves, out), name=f"writer-{name}"
        )
        self.process.start()

    def alive(self) -> bool:
        return self.process.is_alive()

    def kill(self) -> None:
        assert self.process.pid is not None
        os.kill(self.process.pid, signal.SIGKILL)

    def wait(self, timeout: float) -> int | None:
        self.process.join(timeout)
        return self.process.exitcode

    def lines(self) -> list[str]:
        return self.out.read_text(errors="replace").splitlines()

    def acks(self) -> list[int]:
        return [int(line.split()[1]) for line in self.lines() if line.startswith("ack ")]

    def conflicts(self) -> int:
        return sum(1 for line in self.lines() if line.startswith("conflict "))

    def wait_for_acks(self, count: int) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while len(self.acks()) < count:
            assert self.alive(), f"writer {self.name} exited early:\n{self.out.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"writer {self.name} made no progress:\n{self.out.read_text()[-2000:]}"
            time.sleep(0.005)


def _kill_round(target: Target, tmp_path: Path, round_: int) -> tuple[str, list[Writer], list[Writer]]:
    session = f"kill-{uuid.uuid4().hex[:8]}"
    rng = random.Random()
    victims: list[Writer] = []
    survivors: list[Writer] = []
    for index in range(PROCESSES):
        name = f"w{index}"
        killed = index < KILLED
        writer = Writer(target, session, name, 100_000 if killed else SURVIVOR_SAVES, tmp_path / f"{round_}-{name}.out")
        (victims if killed else survivors).append(writer)
    try:
        for victim in victims:
            victim.wait_for_acks(rng.randint(1, 6))
            time.sleep(rng.uniform(0, 0.03))
            victim.kill()
        for survivor in survivors:
            code = survivor.wait(START_TIMEOUT * 2)
            assert code == 0, f"writer {survivor.name} failed:\n{survivor.out.read_text()[-3000:]}"
        for victim in victims:
            assert victim.wait(10) == -signal.SIGKILL
    finally:
        for writer in [*victims, *survivors]:
            if writer.alive():
                writer.kill()
                writer.wait(10)
    return session, victims, survivors


async def _check(target: Target, session: str, victims: list[Writer], survivors: list[Writer]) -> dict[str, int]:
    async with open_stores(target.url) as stores:
        history = stores.history_provider(source_id=SOURCE_ID)
        stored = [m.message_id or "" for m in await history.get_messages(session)]
        assert await history.count_messages(session) == len(stored)  # type: ignore[attr-defined]
        counts = Counter(stored)
        duplicated = sum(n - 1 for n in counts.values() if n > 1)
        assert duplicated == 0, f"stored more than once: {[k for k, n in counts.items() if n > 1]}"
        lost = 0
        for writer in [*victims, *survivors]:
            acked = writer.acks()
            mine = [m for m in stored if m.startswith(f"{writer.name}:")]
            indices = [int(m.split(":")[1]) for m in mine if m.endswith(":a")]
            assert indices == sorted(indices), f"{writer.name}'s saves out of order: {indices}"
            lost += sum(1 for i in acked if i not in indices)
            allowed = set(range(len(acked) + (1 if writer in victims else 0)))
            assert set(indices) <= allowed, f"{writer.name}: stored {indices}, acknowledged {acked}"
            for i in indices:  # a save is atomic: its two messages together, adjacent
                a = stored.index(f"{writer.name}:{i}:a")
                assert stored[a + 1 : a + 2] == [f"{writer.name}:{i}:b"], f"save {writer.name}:{i} torn"
        assert lost == 0, "an acknowledged save is missing"
        creators = [w.name for w in [*victims, *survivors] if "created" in w.lines()]
        assert len(creators) == 1, f"exclusive create: {creators} created, expected exactly one"
        assert all(("created" in w.lines()) != ("lost" in w.lines()) for w in [*victims, *survivors])
        assert await stores.file_store().read(file_name(session)) == creators[0]

        later = Message(role="user", contents=["after the kills"], message_id="after")
        await history.save_messages(session, [later])
        assert [m.message_id for m in await history.get_messages(session)] == [*stored, "after"]
        writers = [*victims, *survivors]
        return {
            "acknowledged": sum(len(w.acks()) for w in writers),
            "conflicts": sum(w.conflicts() for w in writers),
            "stored": len(stored),
            "lost": lost,
            "duplicated": duplicated,
        }


async def test_killed_writers_lose_nothing_acknowledged(target: Target, tmp_path: Path) -> None:
    for round_ in range(ROUNDS):
        session, victims, survivors = await asyncio.to_thread(_kill_round, target, tmp_path, round_)
        found = await _check(target, session, victims, survivors)
        record(
            {
                "suite": "kills",
                "backend": target.backend,
                "rounds": 1,
                "processes": PROCESSES,
                "kills": len(victims),
                "creators": 1,
                **found,
            }
        )
