"""What 1,000 agents on one Redis spend their time on: decode-cache hits, collections, steps per second.

Run: ``uv run --group bench benchmarks/thousand_agents_probe.py`` (``--help`` for the options).
One local ``redis-server``; the rows of ``many_agents_bench.py`` (every agent loads its newest
40 of a 200-message session and saves one turn per step), run in alternating order within each
repetition:

* ``RedisSession``: openai-agents' ``RedisSession``, the reference;
* ``ours``: ours with the library's default decode cache;
* ``ours big``: ours with ``cache_bytes=--cache-bytes`` (the cache keeps every missed record
  while it has room, so a budget that holds the windows in use is warm after one step).

Per row: steps/s, p99, the collector's share of wall time and its collections by generation,
the decode cache's hit rate over the steps, and each row's ratio to ``RedisSession`` in the
same repetition. Counts and ratios, never an assertion. Results as JSON on stdout and in
``--out``.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import many_agents_bench as many
from _subjects_redis import _redis  # pyright: ignore[reportPrivateUsage]
from agent_stores.core import codec


class _Collections:
    """A ``gc.callbacks`` entry: seconds and count of collections per generation while ``on``."""

    def __init__(self) -> None:
        self.seconds = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]
        self.on = False
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if not self.on:
            return
        if phase == "start":
            self._started = time.perf_counter()
            return
        generation = info["generation"]
        self.seconds[generation] += time.perf_counter() - self._started
        self.count[generation] += 1


async def _row(label: str, url: str, args: argparse.Namespace) -> dict[str, Any]:
    store: many.Store = many.OpenAIAgentsRedis() if label == "RedisSession" else many.Ours()
    many._OursBase.cache_bytes = None if label == "ours" else args.cache_bytes  # pyright: ignore[reportPrivateUsage]
    lookups = {"hits": 0, "misses": 0}
    count = codec.DecodeCache._count  # pyright: ignore[reportPrivateUsage]
    decode_new = codec.DecodeCache._decode_new  # pyright: ignore[reportPrivateUsage]
    collections = _Collections()

    def counted(self: codec.DecodeCache, hits: int) -> None:
        if collections.on:
            lookups["hits"] += hits
        count(self, hits)

    def decoded(self: codec.DecodeCache, *args: Any) -> Any:
        if collections.on:
            lookups["misses"] += 1
        return decode_new(self, *args)

    start, stop = many._Census.start, many._Census.stop  # pyright: ignore[reportPrivateUsage]

    def started(self: Any) -> None:
        start(self)
        collections.on = True

    def stopped(self: Any) -> None:
        collections.on = False
        stop(self)

    config = many.Config(
        agents=(args.agents,), steps=args.steps, session=200, window=40, out=args.out, backends=("redis",), idle=None
    )
    codec.DecodeCache._count = counted  # pyright: ignore[reportPrivateUsage]
    codec.DecodeCache._decode_new = decoded  # pyright: ignore[reportPrivateUsage]
    many._Census.start, many._Census.stop = started, stopped  # pyright: ignore[reportPrivateUsage]
    gc.callbacks.append(collections)
    try:
        row = await many.run_row(store, url, args.agents, config)
    finally:
        gc.callbacks.remove(collections)
        many._Census.start, many._Census.stop = start, stop  # pyright: ignore[reportPrivateUsage]
        codec.DecodeCache._count = count  # pyright: ignore[reportPrivateUsage]
        codec.DecodeCache._decode_new = decode_new  # pyright: ignore[reportPrivateUsage]
    looked = lookups["hits"] + lookups["misses"]
    return {
        "row": label,
        "steps_per_s": row["steps_per_s"],
        "p99_ms": row["p99_ms"],
        "collector": row["collector"],
        "collections": collections.count,
        "collector_seconds": collections.seconds,
        "hit_rate": lookups["hits"] / looked if looked else None,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    labels = ["RedisSession", "ours", "ours big"]
    reps: list[list[dict[str, Any]]] = []
    with _redis() as (url, description):
        for rep in range(args.reps):
            order = labels if rep % 2 == 0 else labels[::-1]
            rows: list[dict[str, Any]] = []
            for label in order:
                print(f"rep {rep + 1}/{args.reps}: {label}", file=sys.stderr, flush=True)
                rows.append(await _row(label, url, args))
            reference = next(r for r in rows if r["row"] == "RedisSession")["steps_per_s"]
            for row in rows:
                row["vs_redis_session"] = row["steps_per_s"] / reference
            reps.append(rows)
    summary = {
        label: {
            key: statistics.median(r[key] for rows in reps for r in rows if r["row"] == label)
            for key in ("steps_per_s", "p99_ms", "collector", "vs_redis_session")
        }
        for label in labels
    }
    return {
        "server": description,
        "load_average": " / ".join(f"{v:.1f}" for v in os.getloadavg()),
        "config": {"agents": args.agents, "steps": args.steps, "reps": args.reps, "cache_bytes": args.cache_bytes},
        "medians": summary,
        "reps": reps,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--agents", type=int, default=1000, help="agents at once (default 1000)")
    parser.add_argument("--steps", type=int, default=10, help="steps per agent (default 10)")
    parser.add_argument("--reps", type=int, default=2, help="repetitions, order alternating (default 2)")
    parser.add_argument("--cache-bytes", type=int, default=192 << 20, help="ours big: cache_bytes (default 192 MiB)")
    parser.add_argument("--out", type=Path, default=many.DEFAULT_OUT / "thousand", help="results directory")
    args = parser.parse_args(argv)
    summary = asyncio.run(run(args))
    args.out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(summary, indent=2) + "\n"
    (args.out / f"probe-{args.agents}-{args.steps}.json").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
