"""What each store's steps leave for Python's collector: collections made, objects promoted to the oldest generation.

Run: ``uv run --group bench benchmarks/collector_census.py`` (``--help`` for the options). On one
local Redis, the many-agents benchmark's Redis stores (ours and openai-agents' ``RedisSession``;
``--stores`` as there; ``--backend memory``: ours on ``memory://`` and the framework's
``InMemoryHistoryProvider``, with no I/O) each run ``--agents`` agents at once, every agent loading its newest
``--window`` messages and saving one turn per step, as ``many_agents_bench.py`` does. Before the
steps every object alive is frozen (``gc.freeze``), and after each full collection its
survivors are frozen too, so the objects found in the oldest generation at the next full
collection, and at the end, are exactly those promoted there during the steps, each counted
once. Reported per store: young, middle and full collections per 1,000 steps, and the objects
promoted to the oldest generation per step, by type. These are the objects a full collection
has to walk and the reason it comes: Python runs one when the objects promoted since the last
reach a quarter of those that survived it. Counts, not timings: they do not move with the
machine's load. Results go to ``benchmarks/results/collector_census.md`` and ``.json`` (``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import gc
import json
import os
import platform
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import many_agents_bench as many
from _payloads import make_turns

DEFAULT_OUT = Path(__file__).resolve().parent / "results"
_CONFIG_KEYS = ("agents", "steps", "session", "window", "reps", "stores", "backend", "cache_bytes")


async def census(store: many.Store, url: str, agents: int, steps: int, session: int, window: int) -> dict[str, Any]:
    """Run the steps of ``agents`` agents on ``store``; count collections and what they promoted."""
    await store.open(url, window)
    try:
        span = session // 2 + steps
        await asyncio.gather(*(store.prefill(f"agent-{i}", make_turns(i * span, session // 2)) for i in range(agents)))
        turns = [make_turns(i * span + session // 2, steps) for i in range(agents)]
        promoted: collections.Counter[str] = collections.Counter()
        collections_made = [0, 0, 0]

        def count(phase: str, info: dict[str, int]) -> None:
            if phase == "start" and info["generation"] == 2:
                promoted.update(type(o).__qualname__ for o in gc.get_objects(generation=2))
            elif phase == "stop":
                collections_made[info["generation"]] += 1
                if info["generation"] == 2:
                    gc.freeze()  # its survivors were counted: the next full collection counts only new ones

        async def agent(index: int) -> None:
            for turn in turns[index]:
                await store.step(f"agent-{index}", turn)

        gc.collect()
        gc.freeze()
        gc.callbacks.append(count)
        try:
            await asyncio.gather(*(agent(i) for i in range(agents)))
        finally:
            gc.callbacks.remove(count)
        promoted.update(type(o).__qualname__ for o in gc.get_objects(generation=2))
        gc.unfreeze()
    finally:
        await store.close()
    done = agents * steps
    return {
        "store": store.name,
        "agents": agents,
        "steps": done,
        "collections_per_1000_steps": [n * 1000 / done for n in collections_made],
        "promoted_per_step": sum(promoted.values()) / done,
        "promoted_by_type": {name: n / done for name, n in promoted.most_common()},
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from _subjects_redis import _redis  # pyright: ignore[reportPrivateUsage]

    ours = many.OURS[args.backend]
    peers = [f for f in many.STORES if f.backend == args.backend and f is not ours and args.stores in f.name]
    missing = {f.name: why for f in peers if (why := many._missing(f())) is not None}  # pyright: ignore[reportPrivateUsage]
    for name, why in missing.items():
        print(f"skipped {name}: {why}", file=sys.stderr, flush=True)
    factories = [ours] + [f for f in peers if f.name not in missing]
    rows: list[dict[str, Any]] = []
    with _redis() if args.backend == "redis" else many.SERVERS[args.backend]() as server:
        url, description = server
        for rep in range(args.reps):
            for factory in factories if rep % 2 == 0 else factories[::-1]:
                print(f"rep {rep + 1}/{args.reps}: {factory.name}", file=sys.stderr, flush=True)
                rows.append(
                    await census(factory(), url, args.agents, args.steps, args.session, args.window) | {"rep": rep}
                )
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, python {platform.python_version()}",
        "server": description,
        "config": {k: getattr(args, k) for k in _CONFIG_KEYS},
        "rows": rows,
        "skipped": missing,
    }


def render_markdown(summary: dict[str, Any]) -> str:
    cfg = summary["config"]
    lines = [
        "# What the collector is left with",
        "",
        f"- date: {summary['date']}; {summary['machine']}; {cfg.get('backend', 'redis')} server: {summary['server']}",
        f"- {cfg['agents']} agents at once, {cfg['steps']} steps each, sessions of {cfg['session']} messages, loads"
        f" of the newest {cfg['window']}; {cfg['reps']} repetitions (one row each)"
        + (f"; ours with `cache_bytes={cfg['cache_bytes']}`" if cfg.get("cache_bytes") is not None else ""),
        "- collections per 1,000 steps: young / middle / full; promoted per step: objects that reached the oldest"
        " generation during the steps (everything alive before them frozen, each full collection's survivors"
        " frozen after it was counted), divided by the steps; the commonest types beside it",
        "",
        "| store | rep | collections per 1,000 steps | promoted per step | commonest promoted types (per step) |",
        "|---|---:|---|---:|---|",
    ]
    for row in summary["rows"]:
        young, middle, full = row["collections_per_1000_steps"]
        kinds = ", ".join(f"{name} {n:.1f}" for name, n in list(row["promoted_by_type"].items())[:8])
        lines.append(
            f"| {row['store']} | {row['rep'] + 1} | {young:.0f} / {middle:.1f} / {full:.2f} |"
            f" {row['promoted_per_step']:.1f} | {kinds} |"
        )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--agents", type=int, default=100, help="agents at once (default 100)")
    parser.add_argument("--steps", type=int, default=20, help="steps per agent (default 20)")
    parser.add_argument("--session", type=int, default=200, help="messages per session before the run (default 200)")
    parser.add_argument("--window", type=int, default=40, help="messages per load (default 40)")
    parser.add_argument("--reps", type=int, default=2, help="repetitions, the stores' order alternating (default 2)")
    parser.add_argument(
        "--stores", default="RedisSession", help="besides ours, the Redis stores whose name contains this"
    )
    parser.add_argument(
        "--backend",
        default="redis",
        choices=("redis", "memory"),
        help="redis (default), or memory: ours on memory:// and the framework's InMemoryHistoryProvider, no I/O",
    )
    parser.add_argument(
        "--cache-bytes", type=int, help="decode cache budget of ours (cache_bytes; default: the library's)"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results directory (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    many._OursBase.cache_bytes = args.cache_bytes  # pyright: ignore[reportPrivateUsage]
    summary = asyncio.run(run(args))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "collector_census.json").write_text(json.dumps(summary, indent=2) + "\n")
    (args.out / "collector_census.md").write_text(render_markdown(summary))
    print(render_markdown(summary))
    return summary


if __name__ == "__main__":
    main()
