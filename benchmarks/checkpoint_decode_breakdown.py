"""Where a checkpoint listing's time per record goes: each decode step alone, with the collector's share.

Encodes ``--count`` of the bench's ~6 kB checkpoints (``--tiny``: its tiny ones) as stored records,
then runs each step over all of them, keeping every result alive as a listing does, and prints one
JSON line per step: this thread's CPU milliseconds with the cyclic garbage collector on (as an
application runs), the part of it spent in collections (``gc.callbacks``, by generation), and the
same step with the collector off. Steps:

- ``msgspec_parse``: msgspec's JSON parse of the records, nothing else (the floor of any decode);
- ``json_loads``: the standard library's parse, as ``FileCheckpointStorage`` reads a file;
- ``header``: our envelope parse and field checks (:func:`agent_stores.core.checkpoints._header`);
- ``plain_check``: our scan deciding that the framework's value decode would return the value as is;
- ``framework_value_decode``: the framework's ``decode_checkpoint_value`` of parsed records;
- ``checkpoint_init``: ``WorkflowCheckpoint(**fields)`` of decoded records;
- ``ours_decode``: our whole decode of one record (``decode_record``), what a listing runs;
- ``framework_decode``: the framework's own path (``json.loads``, ``decode_checkpoint_value``,
  ``WorkflowCheckpoint.from_dict``), the ceiling for building checkpoints with its classes;
- ``framework_deepcopy``: ``copy.deepcopy`` of built checkpoints (``InMemoryCheckpointStorage``).

The originals stay alive throughout (as in ``checkpoints_bench.py``), so the heap a full collection
walks is the bench's. Run it from two checkouts in turn to compare::

    uv run --group bench benchmarks/checkpoint_decode_breakdown.py --label after
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import msgspec
from agent_framework import WorkflowCheckpoint
from agent_framework._workflows._checkpoint_encoding import decode_checkpoint_value

import checkpoints_bench as bench
from agent_stores.core import checkpoints as ours

_ROUNDS = 3


class _CollectorClock:
    """Milliseconds spent in collections, by generation, while installed in ``gc.callbacks``."""

    def __init__(self) -> None:
        self.ms = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]
        self._start = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            generation = int(info["generation"])
            self.ms[generation] += 1000 * (time.perf_counter() - self._start)
            self.count[generation] += 1

    def reset(self) -> None:
        self.ms = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]


def _run(
    step: Callable[[], list[Any]], clock: _CollectorClock, *, collector: bool
) -> tuple[float, list[float], list[int]]:
    gc.collect()
    was_enabled = gc.isenabled()
    if not collector:
        gc.disable()
    clock.reset()
    start = time.thread_time()
    kept = step()
    cpu = 1000 * (time.thread_time() - start)
    if was_enabled:
        gc.enable()
    del kept
    return cpu, list(clock.ms), list(clock.count)


def breakdown(count: int, *, tiny: bool, label: str, only: set[str] | None = None) -> list[dict[str, Any]]:
    """Time each step over ``count`` records; one row per step (medians of ``_ROUNDS``)."""
    make = bench.make_tiny_checkpoint if tiny else bench.make_checkpoint
    originals: list[WorkflowCheckpoint] = []
    previous: str | None = None
    for index in range(count):
        checkpoint = make("wf", index, previous)
        originals.append(checkpoint)
        previous = checkpoint.checkpoint_id
    allowed: frozenset[str] = frozenset()
    records = [ours.encode_record(cp, allowed_types=allowed) for cp in originals]
    parser = msgspec.json.Decoder()
    bodies: list[dict[str, Any]] = [parser.decode(r)["checkpoint"] for r in records]
    plain_records = sum(ours._plain(r) for r in records)  # pyright: ignore[reportPrivateUsage]
    steps: dict[str, Callable[[], list[Any]]] = {
        "msgspec_parse": lambda: [parser.decode(r) for r in records],
        "json_loads": lambda: [json.loads(r) for r in records],
        "header": lambda: [ours._header(r, where="x") for r in records],  # pyright: ignore[reportPrivateUsage]
        "plain_check": lambda: [ours._plain(r) for r in records],  # pyright: ignore[reportPrivateUsage]
        "framework_value_decode": lambda: [decode_checkpoint_value(b, allowed_types=allowed) for b in bodies],
        "checkpoint_init": lambda: [WorkflowCheckpoint(**b) for b in bodies],
        "ours_decode": lambda: [ours.decode_record(r, allowed_types=allowed, where="x") for r in records],
        "framework_decode": lambda: [
            WorkflowCheckpoint.from_dict(decode_checkpoint_value(json.loads(r)["checkpoint"], allowed_types=allowed))
            for r in records
        ],
        "framework_deepcopy": lambda: [copy.deepcopy(cp) for cp in originals],
    }
    clock = _CollectorClock()
    gc.callbacks.append(clock)
    rows: list[dict[str, Any]] = []
    try:
        for name, step in steps.items():
            if only and name not in only:
                continue
            on: list[tuple[float, list[float], list[int]]] = []
            off: list[float] = []
            for _ in range(_ROUNDS):  # alternating, so load on a shared machine hits both alike
                on.append(_run(step, clock, collector=True))
                off.append(_run(step, clock, collector=False)[0])
            middle = sorted(on, key=lambda sample: sample[0])[len(on) // 2]
            rows.append(
                {
                    "step": name,
                    "side": label,
                    "size": "tiny" if tiny else "6 kB",
                    "records": count,
                    "plain_records": plain_records,
                    "cpu_ms": round(middle[0]),
                    "us_per_record": round(1000 * middle[0] / count, 1),
                    "gc_ms_by_generation": [round(ms) for ms in middle[1]],
                    "collections_by_generation": middle[2],
                    "cpu_ms_collector_off": round(statistics.median(off)),
                    "load": round(os.getloadavg()[0], 1),
                    "core": os.path.dirname(ours.__file__),
                }
            )
    finally:
        gc.callbacks.remove(clock)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description="Checkpoint decode, step by step, with the collector's share.")
    parser.add_argument("--count", type=int, default=10_000, help="records (default 10,000)")
    parser.add_argument("--tiny", action="store_true", help="the bench's tiny checkpoints instead of ~6 kB ones")
    parser.add_argument("--label", default="", help="a name for this checkout in the output lines")
    parser.add_argument("--steps", default="", help="comma-separated steps to run (default all)")
    args = parser.parse_args()
    for row in breakdown(args.count, tiny=args.tiny, label=args.label, only=set(filter(None, args.steps.split(",")))):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
