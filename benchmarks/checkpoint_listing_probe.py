"""Checkpoint listings of one big workflow: wall and CPU time of each, on one backend.

Fills ``--big`` tiny checkpoints (``--full``: the bench's ~6 kB ones; 16 saves at a time), then
times ``list_checkpoint_ids`` and ``list_checkpoints`` five times each, alternating, and prints
one JSON line of medians: wall milliseconds and this process's CPU milliseconds
(``time.process_time``: the event loop and its worker threads, not the server), and the part of
each listing spent in the cyclic garbage collector (``gc.callbacks``: ``*_gc`` milliseconds,
``*_full`` collections of the oldest generation). CPU time is what
a change to our decoding moves; on a shared machine it moves less with the load than wall time
(not nothing: read pairs run side by side). Run it from two checkouts in turn (before and after)
and compare the lines::

    uv run --group bench benchmarks/checkpoint_listing_probe.py redis --label after

``s3`` runs on SeaweedFS (``weed mini``, or ``$AGENT_STORES_S3_URL``), where a listing is one
GET per checkpoint: ``--rounds`` fewer than five keep a 10,000 run short.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import checkpoints_bench as bench

_ROUNDS = 5


class _CollectorClock:
    """Milliseconds spent in collections and full collections counted, while in ``gc.callbacks``."""

    def __init__(self) -> None:
        self.ms = 0.0
        self.full = 0
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.ms += 1000 * (time.perf_counter() - self._start)
            self.full += info["generation"] == 2


async def probe(store: str, big: int, label: str, *, full: bool = False, rounds: int = _ROUNDS) -> dict[str, Any]:
    """Fill a workflow of ``big`` checkpoints on ``store`` and return the medians of its listings."""
    from _subjects_redis import _redis  # pyright: ignore[reportPrivateUsage]

    with contextlib.ExitStack() as stack:
        directory = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        if store == "redis":
            stack.enter_context(_redis())
        opener = {"redis": bench._redis_stores, "fsspec": bench._fsspec, "sqlite": bench._sqlite, "s3": bench._s3}  # pyright: ignore[reportPrivateUsage]
        stores = opener[store](directory)
        storage = stores.checkpoint_storage()
        previous: str | None = None
        checkpoints: list[Any] = []
        for index in range(big):
            checkpoint = (bench.make_checkpoint if full else bench.make_tiny_checkpoint)("wf", index, previous)
            checkpoints.append(checkpoint)
            previous = checkpoint.checkpoint_id
        gate = asyncio.Semaphore(16)

        async def save(checkpoint: Any) -> None:
            async with gate:
                await storage.save(checkpoint)

        await asyncio.gather(*(save(c) for c in checkpoints))
        samples: dict[str, list[float]] = {
            f"{n}_{m}": [] for n in ("ids", "list") for m in ("wall", "cpu", "gc", "full")
        }
        clock = _CollectorClock()
        gc.callbacks.append(clock)
        for _ in range(rounds):
            for name, listing in (("ids", storage.list_checkpoint_ids), ("list", storage.list_checkpoints)):
                clock.ms, clock.full = 0.0, 0
                wall, cpu = time.perf_counter(), time.process_time()
                await listing(workflow_name="wf")
                samples[f"{name}_wall"].append(1000 * (time.perf_counter() - wall))
                samples[f"{name}_cpu"].append(1000 * (time.process_time() - cpu))
                samples[f"{name}_gc"].append(clock.ms)
                samples[f"{name}_full"].append(clock.full)
        gc.callbacks.remove(clock)
        await stores.aclose()
    medians = {name: round(statistics.median(values)) for name, values in samples.items()}
    size = "6 kB" if full else "tiny"
    return {"store": store, "side": label, "size": size, "load": round(os.getloadavg()[0], 1), **medians}


def main() -> None:
    parser = argparse.ArgumentParser(description="Checkpoint listings of one big workflow: wall and CPU time.")
    parser.add_argument("store", choices=["redis", "fsspec", "sqlite", "s3"])
    parser.add_argument("--big", type=int, default=10_000, help="checkpoints in the workflow (default 10,000)")
    parser.add_argument("--label", default="", help="a name for this checkout in the output line")
    parser.add_argument("--full", action="store_true", help="the bench's ~6 kB checkpoints instead of tiny ones")
    parser.add_argument("--rounds", type=int, default=_ROUNDS, help=f"listings of each kind (default {_ROUNDS})")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(probe(args.store, args.big, args.label, full=args.full, rounds=args.rounds))))


if __name__ == "__main__":
    main()
