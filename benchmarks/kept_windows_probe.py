"""What a decode cache keeps alive for the collector as many agents slide their windows: objects, CPU.

Run: ``uv run --group bench benchmarks/kept_windows_probe.py`` (``--help`` for the options). No
server: ``--agents`` logs, each ``--session`` records of the many-agents benchmark's turns
(``_payloads.make_turns``), and ``--steps`` loads per log of its newest ``--window`` records
through one ``DecodeCache(--cache-bytes)`` with ``log=`` (as a history provider loads), the
window moving on by one 2-message turn per step, agents taking turns as on one event loop.
Automatic collections are off during the loads (the loads' CPU time is the cache's own); then
reported: the objects the collector tracks (``len(gc.get_objects())`` after a full collection,
less those before the loads, per agent), the shared messages the cache keeps per agent, the
wall and CPU time of one full collection (median of ``--collections``), and the loads' CPU time
per load. Counts first: they do not move with the machine's load. Run it with each checkout's
own interpreter to compare two versions of the library.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _payloads import make_turns
from agent_stores.core import codec


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--agents", type=int, default=1000, help="logs loaded in turn (default 1000)")
    parser.add_argument("--steps", type=int, default=20, help="loads per log (default 20)")
    parser.add_argument("--session", type=int, default=200, help="records per log before the steps (default 200)")
    parser.add_argument("--window", type=int, default=40, help="records per load (default 40)")
    parser.add_argument("--cache-bytes", type=int, default=192 << 20, help="the cache's budget (default 192 MiB)")
    parser.add_argument("--collections", type=int, default=5, help="full collections timed (default 5)")
    args = parser.parse_args(argv)
    span = args.session // 2 + args.steps
    logs = [
        [codec.encode_message(m) for t in make_turns(index * span, span) for m in t.messages]
        for index in range(args.agents)
    ]
    cache = codec.DecodeCache(args.cache_bytes)
    gc.collect()
    before = len(gc.get_objects())
    held: list[list[Any]] = [[] for _ in range(args.agents)]  # each agent keeps its latest window, as a model call does
    automatic = gc.isenabled()
    gc.disable()
    try:
        cpu = time.process_time()
        for step in range(args.steps):
            end = args.session + 2 * step
            for index, records in enumerate(logs):
                held[index] = codec.decode_messages(records[end - args.window : end], cache=cache, log=("probe", index))
        cpu = time.process_time() - cpu
        gc.collect()
        tracked = len(gc.get_objects()) - before
        walls: list[float] = []
        cpus: list[float] = []
        for _ in range(args.collections):
            wall, started = time.perf_counter(), time.process_time()
            gc.collect()
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - started)
    finally:
        if automatic:
            gc.enable()
    kept = sum(1 for key in cache.entries._entries if type(key) is tuple and len(key) == 3)  # pyright: ignore[reportPrivateUsage]
    result = {
        "config": vars(args),
        "python": sys.version.split()[0],
        "library": str(Path(codec.__file__).resolve().parents[4]),
        "tracked_per_agent": tracked / args.agents,
        "shared_messages_kept_per_agent": kept / args.agents,
        "full_collection_ms": statistics.median(walls) * 1000,
        "full_collection_cpu_ms": statistics.median(cpus) * 1000,
        "load_cpu_us": cpu / (args.agents * args.steps) * 1e6,
        "cache": repr(cache),
    }
    print(json.dumps(result, indent=2))
    return result


if __name__ == "__main__":
    main()
