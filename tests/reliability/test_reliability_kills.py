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

Two more cases, each documented at its test: a ``delete_session`` of a long session killed
half-way, finished by the next delete, purge or save (the raw bytes searched for the deleted
text); and compare-and-set writers of one session snapshot killed mid-update (no lost update).
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
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest
from agent_framework import Message

from agent_stores.core import open_stores
from reliability_figures import record
from reliability_kill_worker import COUNT, LOG, SOURCE_ID, cas_main, delete_main, file_name
from reliability_kill_worker import main as worker_main
from reliability_support import HEAVY, Target

pytestmark = pytest.mark.asyncio

ROUNDS = 5 if HEAVY else 1
PROCESSES = 6 if HEAVY else 4
KILLED = PROCESSES // 2
SURVIVOR_SAVES = 12
START_TIMEOUT = 120.0


def _run_body(target: Target, body: Callable[[], Coroutine[Any, Any, None]], out: Path) -> None:
    """A forked process: its output to ``out``, the target's environment, then ``body``."""
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    sys.stdout = sys.stderr = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115 - the process's own stdout
    os.environ.update(target.env)
    warnings.simplefilter("ignore")
    code = 0
    try:
        asyncio.run(body())
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

    def __init__(
        self, target: Target, name: str, out: Path, body: Callable[[], Coroutine[Any, Any, None]] | None = None
    ) -> None:
        self.name = name
        self.out = out
        out.touch()
        self.process = multiprocessing.get_context("fork").Process(
            target=_run_body, args=(target, body, out), name=f"writer-{name}"
        )
        self.process.start()

    @classmethod
    def appending(cls, target: Target, session: str, name: str, saves: int, out: Path) -> Writer:
        """A writer running the worker's ``main``: an exclusive create, then ``saves`` saves."""
        return cls(target, name, out, lambda: worker_main(target.url, session, name, saves))

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

    def wait_for_line(self, *wanted: str) -> str:
        """Wait until the process printed one of the lines ``wanted``; return it."""
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            lines = self.lines()
            for line in wanted:
                if line in lines:
                    return line
            assert self.alive(), f"{self.name} exited early:\n{self.out.read_text()[-2000:]}"
            assert time.monotonic() < deadline, f"{self.name} printed none of {wanted}:\n{self.out.read_text()[-2000:]}"
            time.sleep(0.001)

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
        writer = Writer.appending(
            target, session, name, 100_000 if killed else SURVIVOR_SAVES, tmp_path / f"{round_}-{name}.out"
        )
        (victims if killed else survivors).append(writer)
    _kill_victims_and_finish(victims, survivors, rng, delay=0.03)
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


# -- a delete killed half-way ----------------------------------------------------------------

#: Saves (so segments or batches) of the session deleted; every save is one segment on S3 and fsspec.
DELETE_SAVES = 64 if HEAVY else 40
#: Rounds per finishing call (a later delete, purge_expired, a save).
DELETE_ROUNDS = 3 if HEAVY else 1
FINISHERS = ["delete", "purge", "save"]
#: Backends whose delete is several writes: the process is frozen at a chosen write, then killed.
STEPWISE = {"s3", "fsspec", "mongodb"}


def _s3_objects(target: Target) -> list[bytes]:
    """The bytes of every object under an ``s3://`` target's prefix (straight from the bucket, boto3)."""
    import boto3

    parsed = urlsplit(target.url)
    query = dict(parse_qsl(parsed.query))
    client = boto3.Session(
        aws_access_key_id=target.env["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=target.env["AWS_SECRET_ACCESS_KEY"],
        region_name=query.get("region", "us-east-1"),
    ).client("s3", endpoint_url=query["endpoint_url"])  # pyright: ignore[reportUnknownMemberType]
    keys = [
        item["Key"]
        for page in client.get_paginator("list_objects_v2").paginate(
            Bucket=parsed.netloc, Prefix=parsed.path.strip("/") + "/"
        )
        for item in page.get("Contents", [])
    ]
    with ThreadPoolExecutor(max_workers=16) as pool:  # a boto3 client is thread-safe
        return list(pool.map(lambda key: client.get_object(Bucket=parsed.netloc, Key=key)["Body"].read(), keys))


def _local_files(target: Target) -> list[bytes]:
    """The bytes of every file under a ``file://`` target's root."""
    root = Path(urlsplit(target.url).path)
    return [path.read_bytes() for path in root.rglob("*") if path.is_file()]


async def _mongodb_leftovers(history: Any, secret: bytes) -> tuple[int, int]:
    """MongoDB: (batches holding ``secret``, orphan batches and tombstones) in the target's database."""
    import bson

    # Heads and batches share one collection: a head sits at s = 2**62, above every batch.
    documents = await history.driver.database.collection("history").find({}).to_list()
    heads = [d for d in documents if d.get("s") == 2**62]
    live = {(h["_id"], h.get("x")) for h in heads if h.get("z") is None}
    tombstones = sum(1 for h in heads if h.get("z") is not None)
    batches = [d for d in documents if d.get("s") != 2**62]
    holding = sum(1 for b in batches if secret in bson.encode(b))
    orphans = sum(1 for b in batches if (b.get("k"), b.get("x")) not in live)
    return holding, orphans + tombstones


def _postgresql_rows(target: Target, secret: bytes) -> int:
    """PostgreSQL: the message rows of the target's database whose payload holds ``secret``."""
    import psycopg

    with psycopg.connect(target.url, autocommit=True) as connection:
        row = connection.execute(
            "SELECT count(*) FROM agent_stores_messages WHERE position(%s::bytea in payload) > 0", (secret,)
        ).fetchone()
    assert row is not None
    return int(row[0])


async def _leftovers(target: Target, history: Any, secret: str) -> tuple[int | None, int | None]:
    """What still holds ``secret`` in the raw store, and orphans (MongoDB); ``None`` where not inspected.

    S3 and fsspec: every object or file under the store's prefix or root, byte for byte.
    MongoDB: every batch document. PostgreSQL: every message row. SQLite and Redis delete in one
    atomic statement or script.
    """
    marker = secret.encode()
    if target.backend == "s3":
        return sum(1 for data in await asyncio.to_thread(_s3_objects, target) if marker in data), None
    if target.backend == "fsspec":
        return sum(1 for data in await asyncio.to_thread(_local_files, target) if marker in data), None
    if target.backend == "mongodb":
        return await _mongodb_leftovers(history, marker)
    if target.backend == "postgresql":
        return await asyncio.to_thread(_postgresql_rows, target, marker), None
    return None, None


def _doomed(secret: str, index: int) -> list[Message]:
    return [
        Message(role="user", contents=[f"{secret} question {index}"], message_id=f"d{index}:a"),
        Message(role="assistant", contents=[f"{secret} answer {index}"], message_id=f"d{index}:b"),
    ]


async def _delete_round(target: Target, tmp_path: Path, finisher: str, round_: int) -> dict[str, Any]:
    session = f"del-{uuid.uuid4().hex[:8]}"
    secret = f"doomed-{uuid.uuid4().hex}"
    rng = random.Random()
    async with open_stores(target.url) as stores:
        history = stores.history_provider(source_id=SOURCE_ID)
        for index in range(DELETE_SAVES):
            await history.save_messages(session, _doomed(secret, index))
        everything = [m.message_id for m in await history.get_messages(session)]  # a full read: a checkpoint
        assert len(everything) == 2 * DELETE_SAVES
        window = stores.history_provider(source_id=SOURCE_ID, max_messages=6)
        assert len(await window.get_messages(session)) == 6  # a windowed read: a tail

    stepwise = target.backend in STEPWISE
    # Object logs: freeze after the reset segment and up to half the blanks. MongoDB: after the head is retired.
    freeze_after = (rng.randint(1, DELETE_SAVES // 2) if target.backend != "mongodb" else 1) if stepwise else 0
    deleter = Writer(
        target,
        f"deleter-{finisher}",
        tmp_path / f"delete-{finisher}-{round_}.out",
        lambda: delete_main(target.url, session, freeze_after),
    )
    try:
        if stepwise:
            seen = await asyncio.to_thread(deleter.wait_for_line, "frozen", "deleted")
            assert seen == "frozen", "the delete finished before the point it was to be killed at"
        else:
            await asyncio.to_thread(deleter.wait_for_line, "deleting")
            await asyncio.sleep(rng.uniform(0, 0.004))
        deleter.kill()
        assert await asyncio.to_thread(deleter.wait, 10) == -signal.SIGKILL
    finally:
        if deleter.alive():
            deleter.kill()
            deleter.wait(10)
    returned = "deleted" in deleter.lines()

    async with open_stores(target.url) as stores:
        history = stores.history_provider(source_id=SOURCE_ID)
        after_kill = [m.message_id for m in await history.get_messages(session)]
        # A delete is all or nothing for a reader: past its commit point nothing reads back.
        assert after_kill in ([], everything), f"a killed delete left {len(after_kill)} of {len(everything)} messages"
        committed = not after_kill
        assert committed or not stepwise, "frozen after its commit point, yet the messages still read back"
        left_by_kill, _ = await _leftovers(target, history, secret)
        if stepwise:  # also proves the raw scan finds the text where it is
            assert left_by_kill, "the kill landed after the erasure finished: nothing was interrupted"

        if finisher == "delete":
            await history.delete_session(session)
        elif finisher == "purge":
            await history.purge_expired()
        else:
            await history.save_messages(session, [Message(role="user", contents=["after"], message_id="after")])
        stored = [m.message_id for m in await history.get_messages(session)]
        expected_after = ["after"] if finisher == "save" else []
        if committed or finisher == "delete":
            assert stored == expected_after, f"deleted messages read back after the {finisher}: {stored[:6]}…"
        else:  # the delete never happened; a purge or a save keeps the live session
            assert stored == everything + expected_after
        assert await history.count_messages(session) == len(stored)  # type: ignore[attr-defined]
        holding, orphans = await _leftovers(target, history, secret)
        if committed or finisher == "delete":
            assert not holding, f"{holding} objects still hold the deleted text after the {finisher}"
        assert not orphans, f"{orphans} orphan batches or tombstones remain after the {finisher}"
        # The session goes on.
        await history.save_messages(session, [Message(role="user", contents=["later"], message_id="later")])
        assert [m.message_id for m in await history.get_messages(session)] == [*stored, "later"]
    return {
        "rounds": 1,
        "saves": DELETE_SAVES,
        "killed_before_return": 0 if returned else 1,
        "committed": 1 if committed else 0,
        "left_by_kill": left_by_kill,
        "readable_after": len([m for m in stored if m in everything]) if committed or finisher == "delete" else 0,
        "holding_after": holding,
        "orphans_after": orphans,
    }


async def test_a_delete_killed_half_way_is_finished_by_the_next_delete_purge_or_save(
    target: Target, tmp_path: Path
) -> None:
    """A process SIGKILLed inside ``delete_session`` of a long session: the next delete, purge or save finishes it.

    On S3 and fsspec the deleting process is frozen after writing the reset segment and blanking
    some of the older segments (a random number, up to half), on MongoDB after retiring the head
    and before removing the batches, then SIGKILLed there; SQLite's and Redis's deletes are one
    atomic statement or script, killed after a random delay of up to 4 ms. Then a later
    ``delete_session``, ``purge_expired`` or save (one round each): no deleted message reads
    back, no object, file or batch under the store still holds the deleted text (the raw bytes
    are searched), no orphan batch or tombstone remains (MongoDB), and the session takes new saves.
    """
    for round_ in range(DELETE_ROUNDS):
        for finisher in FINISHERS:
            found = await _delete_round(target, tmp_path, finisher, round_)
            record({"suite": "kill-delete", "backend": target.backend, "finishers": ", ".join(FINISHERS), **found})


# -- compare-and-set under kills -------------------------------------------------------------

CAS_PROCESSES = 6 if HEAVY else 4
CAS_KILLED = CAS_PROCESSES // 2
CAS_ROUNDS = 3 if HEAVY else 1
SURVIVOR_INCREMENTS = 10


def _cas_round(target: Target, tmp_path: Path, session: str, round_: int) -> tuple[list[Writer], list[Writer]]:
    rng = random.Random()
    victims: list[Writer] = []
    survivors: list[Writer] = []
    for index in range(CAS_PROCESSES):
        name, killed = f"c{index}", index < CAS_KILLED
        increments = 100_000 if killed else SURVIVOR_INCREMENTS
        writer = Writer(
            target,
            name,
            tmp_path / f"cas-{round_}-{name}.out",
            lambda name=name, increments=increments: cas_main(target.url, session, name, increments),
        )
        (victims if killed else survivors).append(writer)
    _kill_victims_and_finish(victims, survivors, rng, delay=0.02)
    return victims, survivors


async def test_killed_compare_and_set_writers_lose_no_update(target: Target, tmp_path: Path) -> None:
    """N processes increment one session's counter by compare-and-set while half of them are SIGKILLed.

    Each writer reads the snapshot and its version through the session store's driver
    (``snapshot_key``) and writes it back on that version (``if_version``; ``if_absent`` for the
    first), retrying on ``StoreConflictError``; each increment also records ``WRITER:i`` in the
    state. Then every acknowledged increment is applied exactly once, at most the one in flight
    of each killed writer beyond them, the counter equals the increments recorded, and the
    session reads through ``get`` and takes a plain ``set``.
    """
    for round_ in range(CAS_ROUNDS):
        session = f"cas-{uuid.uuid4().hex[:8]}"
        victims, survivors = await asyncio.to_thread(_cas_round, target, tmp_path, session, round_)
        writers = [*victims, *survivors]
        async with open_stores(target.url) as stores:
            sessions = stores.session_store()
            restored = await sessions.get(session)
            assert restored is not None
            applied: list[str] = list(restored.state[LOG])
            counts = Counter(applied)
            duplicated = sum(n - 1 for n in counts.values() if n > 1)
            assert duplicated == 0, f"applied twice: {[k for k, n in counts.items() if n > 1]}"
            assert restored.state[COUNT] == len(applied), "the counter and the recorded increments disagree"
            lost = 0
            in_flight_applied = 0
            for writer in writers:
                acked = writer.acks()
                mine = [int(entry.split(":")[1]) for entry in applied if entry.startswith(f"{writer.name}:")]
                assert mine == sorted(mine), f"{writer.name}'s increments out of order: {mine}"
                lost += sum(1 for i in acked if i not in mine)
                extra = set(mine) - set(acked)
                assert extra <= ({len(acked)} if writer in victims else set()), f"{writer.name}: applied {extra}"
                in_flight_applied += len(extra)
            assert lost == 0, "an acknowledged increment is missing (a lost update)"
            conflicts = sum(int(line.split()[1]) for w in writers for line in w.lines() if line.startswith("conflict "))
            restored.state[COUNT] += 1
            await sessions.set(session, restored)
            again = await sessions.get(session)
            assert again is not None and again.state[COUNT] == len(applied) + 1
        record(
            {
                "suite": "kill-cas",
                "backend": target.backend,
                "rounds": 1,
                "processes": CAS_PROCESSES,
                "kills": len(victims),
                "acknowledged": sum(len(w.acks()) for w in writers),
                "counter": len(applied),
                "in_flight_applied": in_flight_applied,
                "conflicts": conflicts,
                "lost": lost,
                "duplicated": duplicated,
            }
        )


def _kill_victims_and_finish(
    victims: list[Writer], survivors: list[Writer], rng: random.Random, *, delay: float
) -> None:
    """SIGKILL each victim after 1 to 6 acknowledgements and up to ``delay`` s more; survivors must finish cleanly."""
    try:
        for victim in victims:
            victim.wait_for_acks(rng.randint(1, 6))
            time.sleep(rng.uniform(0, delay))
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
