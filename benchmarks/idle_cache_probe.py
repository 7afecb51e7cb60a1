"""What the default decode cache costs a small process, and what it gives back once many sessions went quiet.

Run: ``uv run --group bench benchmarks/idle_cache_probe.py`` (``--help`` for the options), with
each checkout's own interpreter to compare two versions of the library. No server: the records
are the many-agents benchmark's turns (``_payloads.make_turns``), loaded through one
``DecodeCache()`` of the library's default budget with ``log=`` (as a history provider loads),
each agent keeping its latest window as a model call does.

1. ``--small`` agents take ``--steps`` steps: the process's peak RSS (``getrusage``) and what
   the cache is charged.
2. Then ``--agents`` agents load their window once each (a burst of sessions), and their windows
   are dropped: what the cache is charged, and what Python holds of what the burst allocated
   (``tracemalloc``, after a full collection).
3. Then every agent goes quiet for ``--idle`` seconds (the cache opened with
   ``max_idle=--idle``, where the library has it) and the ``--small`` agents take one more step:
   the same two once idle entries are forgotten.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import sys
import time
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _payloads import make_turns
from agent_stores.core import codec

MiB = 1 << 20


def _held() -> float:
    # What Python holds of what it allocated since tracemalloc started, after a full collection.
    gc.collect()
    return tracemalloc.get_traced_memory()[0] / MiB


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--small", type=int, default=5, help="agents of the small process (default 5)")
    parser.add_argument("--steps", type=int, default=20, help="steps of each small agent (default 20)")
    parser.add_argument("--agents", type=int, default=1000, help="sessions of the burst (default 1000)")
    parser.add_argument("--session", type=int, default=200, help="records per log before the steps (default 200)")
    parser.add_argument("--window", type=int, default=40, help="records per load (default 40)")
    parser.add_argument("--idle", type=float, default=2.0, help="seconds the sessions go quiet (default 2)")
    parser.add_argument("--out", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)
    span = args.session // 2 + args.steps + 1

    def records(index: int) -> list[bytes]:
        return [codec.encode_message(m) for t in make_turns(index * span, span) for m in t.messages]

    idle_option = "max_idle" in codec.DecodeCache.__init__.__code__.co_varnames
    cache: Any = codec.DecodeCache(max_idle=args.idle) if idle_option else codec.DecodeCache()
    logs = [records(index) for index in range(args.small)]
    held: list[list[Any]] = [[] for _ in range(args.agents)]

    def step(agents: range, at: int) -> None:
        end = args.session + 2 * at
        for index in agents:
            held[index] = codec.decode_messages(logs[index][end - args.window : end], cache=cache, log=("probe", index))

    for at in range(args.steps):
        step(range(args.small), at)
    small = {
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "cache_charged_mib": cache.entries.cost / MiB,
    }
    logs += [records(index) for index in range(args.small, args.agents)]
    tracemalloc.start()  # what the burst and the quiet step allocate, and what of it stays
    step(range(args.small, args.agents), 0)
    for index in range(args.small, args.agents):
        held[index] = []
    burst = {"python_held_mib": _held(), "cache_charged_mib": cache.entries.cost / MiB}
    time.sleep(args.idle * 1.05)
    step(range(args.small), args.steps)
    quiet = {
        "python_held_mib": _held(),
        "cache_charged_mib": cache.entries.cost / MiB,
        "entries": len(cache.entries),
    }
    result = {
        "python": sys.executable,
        "default_cache_bytes": codec.DEFAULT_CACHE_BYTES,
        "cache_idle": args.idle if idle_option else None,
        "small": small,
        "after_burst": burst,
        "after_idle": quiet,
    }
    print(json.dumps(result, indent=2))
    if args.out is not None:
        args.out.write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    main()
