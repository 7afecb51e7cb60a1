"""Where the slowest steps of 1,000 agents on one Redis go: collections, cache misses, pipelines, the loop.

Run: ``uv run --group bench benchmarks/tail_probe.py`` (``--help`` for the options). One local
``redis-server``; the rows of ``many_agents_bench.py`` (every agent loads its newest 40 of a
200-message session and saves one turn per step; all agents at once on one event loop and one
store), ours (``cache_bytes=--cache-bytes``) and openai-agents' ``RedisSession`` in alternating
order within each repetition. Nothing else runs during the steps (no object census).

Recorded with timestamps (``time.perf_counter``, seconds from the first step's start):

* every step: its agent and number, start, end of its load, end of its save, and for ours the
  decode cache's lookups during its load that were served and that were decoded afresh;
* every collection (``gc.callbacks``): generation, start, end, the process's CPU time in it
  (which other work on the machine does not stretch, as it does the wall time), objects collected;
* every pipeline or lone command ours' Redis batcher sent: start, end, commands in it;
* the event loop's lateness: a timer due every ``--tick`` seconds, and how late it ran (the
  longest a callback or a collection held the loop since the timer was due).

Each step is then attributed: the collection time (full, middle, young) that overlapped it,
the longest loop stall within it, and its cache misses, compared between the steps above the
row's p95 and the steps at or below its p50; and the p99 the row would have with the
overlapping full collections (or all collections) taken out of each step (a bound: removing a
pause also lets later work start earlier, which this does not model). Raw records go to
``--out/<row>-rep<N>.jsonl.gz`` (one JSON object a line, ``kind`` first; gzip), the summary to
``--out/tail.json``. Counts, timings and ratios; never an assertion.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import contextvars
import gc
import gzip
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import many_agents_bench as many
from _payloads import make_turns
from _subjects_redis import _redis  # pyright: ignore[reportPrivateUsage]
from agent_stores.core import codec

DEFAULT_OUT = many.DEFAULT_OUT / "p99"

#: The step an agent's task is running (decode cache lookups are counted into it).
_STEP: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar("step", default=None)


class _Recorder:
    """Collections, batcher sends and loop lateness, timestamped from ``origin``."""

    def __init__(self, tick: float) -> None:
        self.origin = time.perf_counter()
        self.collections: list[tuple[int, float, float, int]] = []
        self.sends: list[tuple[float, float, int]] = []
        self.lateness: list[tuple[float, float]] = []
        self.tick = tick
        self.collection_cpu: list[float] = []  # the process's CPU time of each collection, in order
        self._gc_started = 0.0
        self._gc_cpu = 0.0
        self._timer: asyncio.TimerHandle | None = None
        self._due = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
            self._gc_cpu = time.process_time()
            return
        now, cpu = time.perf_counter(), time.process_time()
        self.collections.append(
            (info["generation"], self._gc_started - self.origin, now - self.origin, info.get("collected", 0))
        )
        self.collection_cpu.append(cpu - self._gc_cpu)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        self._due = loop.time() + self.tick
        self._timer = loop.call_at(self._due, self._ticked)

    def _ticked(self) -> None:
        loop = asyncio.get_running_loop()
        now = loop.time()
        self.lateness.append((time.perf_counter() - self.origin, now - self._due))
        self._due = now + self.tick
        self._timer = loop.call_at(self._due, self._ticked)

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


def _hook_cache() -> Any:
    """Count each load's decode cache hits and fresh decodes into the running step; returns the undo."""
    share, decode_new, count = codec.DecodeCache.share, codec.DecodeCache._decode_new, codec.DecodeCache._count  # pyright: ignore[reportPrivateUsage]

    def counted(self: codec.DecodeCache, hits: int) -> None:
        step = _STEP.get()
        if step is not None:
            step["hits"] = step.get("hits", 0) + hits
        count(self, hits)

    def decoded(self: codec.DecodeCache, *args: Any) -> Any:
        step = _STEP.get()
        if step is not None:
            step["misses"] = step.get("misses", 0) + 1
        return decode_new(self, *args)

    codec.DecodeCache._count = counted  # pyright: ignore[reportPrivateUsage]
    codec.DecodeCache._decode_new = decoded  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]

    def undo() -> None:
        codec.DecodeCache.share = share
        codec.DecodeCache._decode_new = decode_new  # pyright: ignore[reportPrivateUsage]
        codec.DecodeCache._count = count  # pyright: ignore[reportPrivateUsage]

    return undo


def _hook_batcher(recorder: _Recorder) -> Any:
    """Timestamp every pipeline or lone command ours' batcher sends; returns the undo."""
    from agent_stores.redis._batching import CommandBatcher  # pyright: ignore[reportPrivateUsage]

    send = CommandBatcher._send  # pyright: ignore[reportPrivateUsage]

    async def timed(self: Any, batch: Any) -> None:
        started = time.perf_counter()
        try:
            await send(self, batch)
        finally:
            recorder.sends.append((started - recorder.origin, time.perf_counter() - recorder.origin, len(batch)))

    CommandBatcher._send = timed  # pyright: ignore[reportPrivateUsage]

    def undo() -> None:
        CommandBatcher._send = send  # pyright: ignore[reportPrivateUsage]

    return undo


async def _row(label: str, url: str, args: argparse.Namespace, rep: int) -> dict[str, Any]:
    store: many.Store = many.OpenAIAgentsRedis() if label == "RedisSession" else many.Ours()
    many._OursBase.cache_bytes = args.cache_bytes  # pyright: ignore[reportPrivateUsage]
    await store.open(url, args.window)
    steps: list[dict[str, Any]] = []
    try:
        sessions = [f"agent-{index}" for index in range(args.agents)]
        span = args.session // 2 + args.steps
        prefill = asyncio.Semaphore(20)

        async def fill(index: int) -> None:
            async with prefill:
                await store.prefill(sessions[index], make_turns(index * span, args.session // 2))

        await asyncio.gather(*(fill(index) for index in range(args.agents)))
        turns = [make_turns(index * span + args.session // 2, args.steps) for index in range(args.agents)]
        gc.collect()  # no garbage left by the prefill or the row before
        freezer = many._Freezer(args.gc_freeze)  # pyright: ignore[reportPrivateUsage]
        freezer.start()
        recorder = _Recorder(args.tick)
        undo_cache = _hook_cache()
        undo_batcher = _hook_batcher(recorder)
        gc.callbacks.append(recorder)

        async def agent(index: int) -> None:
            session_id = sessions[index]
            for number, turn in enumerate(turns[index]):
                step: dict[str, Any] = {"agent": index, "number": number}
                _STEP.set(step)
                step["start"] = time.perf_counter() - recorder.origin
                await _load_and_save(store, session_id, turn, step, recorder.origin)
                step["end"] = time.perf_counter() - recorder.origin
                _STEP.set(None)
                steps.append(step)

        try:
            recorder.start()
            cpu = time.process_time()
            await asyncio.gather(*(agent(index) for index in range(args.agents)))
            cpu = time.process_time() - cpu
        finally:
            recorder.stop()
            gc.callbacks.remove(recorder)
            undo_batcher()
            undo_cache()
            freezer.stop()
    finally:
        await store.close()
    path = args.out / f"{label.replace(' ', '-')}-rep{rep}.jsonl.gz"
    with gzip.open(path, "wt") as out:
        for step in steps:
            out.write(json.dumps({"kind": "step", **step}) + "\n")
        for (generation, start, end, collected), seconds_in in zip(
            recorder.collections, recorder.collection_cpu, strict=True
        ):
            record = {"generation": generation, "start": start, "end": end, "cpu": seconds_in, "collected": collected}
            out.write(json.dumps({"kind": "collection", **record}) + "\n")
        for start, end, size in recorder.sends:
            out.write(json.dumps({"kind": "send", "start": start, "end": end, "commands": size}) + "\n")
        for at, late in recorder.lateness:
            out.write(json.dumps({"kind": "lateness", "at": at, "late": late}) + "\n")
    summary = attribute(steps, recorder.collections, recorder.sends, recorder.lateness)
    spent = list(zip((g for g, *_ in recorder.collections), recorder.collection_cpu, strict=True))
    summary["full_cpu_ms"] = [round(seconds * 1000, 1) for g, seconds in spent if g == 2]
    summary["collection_cpu_s"] = [sum(seconds for g, seconds in spent if g == generation) for generation in (0, 1, 2)]
    summary["row"] = label
    summary["cpu_s"] = cpu
    summary["raw"] = path.name
    return summary


async def _load_and_save(store: many.Store, session_id: str, turn: Any, step: dict[str, Any], origin: float) -> None:
    # The store's step split in two, to timestamp the end of the load.
    if isinstance(store, many.OpenAIAgentsRedis):
        session = store._session(session_id)  # pyright: ignore[reportPrivateUsage]
        await session.get_items(limit=store._window)  # pyright: ignore[reportPrivateUsage]
        step["loaded"] = time.perf_counter() - origin
        await session.add_items(list(turn.items))
        return
    provider: Any = getattr(store, "_provider")  # noqa: B009 (ours' provider, a private attribute of the benchmark's store)
    await provider.get_messages(session_id)
    step["loaded"] = time.perf_counter() - origin
    await provider.save_messages(session_id, list(turn.messages))


def _overlap(start: float, end: float, spans: Sequence[tuple[float, float]], starts: Sequence[float]) -> float:
    total = 0.0
    for index in range(max(0, bisect.bisect_right(starts, start) - 1), len(spans)):
        span_start, span_end = spans[index]
        if span_start >= end:
            break
        total += max(0.0, min(end, span_end) - max(start, span_start))
    return total


def _p(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def attribute(
    steps: Sequence[dict[str, Any]],
    collections: Sequence[tuple[int, float, float, int]],
    sends: Sequence[tuple[float, float, int]],
    lateness: Sequence[tuple[float, float]],
) -> dict[str, Any]:
    """Per step: collection time by generation, longest loop stall and cache misses; the tail against the middle."""
    spans = {generation: sorted((s, e) for g, s, e, _ in collections if g == generation) for generation in (0, 1, 2)}
    starts = {generation: [s for s, _ in spans[generation]] for generation in spans}
    late_at = [at for at, _ in lateness]
    sorted_sends = sorted(sends)
    send_starts = [s for s, _, _ in sorted_sends]
    rows: list[dict[str, float]] = []
    for step in steps:
        start, end = step["start"], step["end"]
        first = bisect.bisect_left(late_at, start)
        last = bisect.bisect_right(late_at, end)
        in_step = [late for _, late in lateness[first:last]]
        waits = [
            e - s
            for s, e, _ in sorted_sends[bisect.bisect_left(send_starts, start) : bisect.bisect_right(send_starts, end)]
        ]
        rows.append(
            {
                "latency": end - start,
                "load": step["loaded"] - start,
                "save": end - step["loaded"],
                "full": _overlap(start, end, spans[2], starts[2]),
                "middle": _overlap(start, end, spans[1], starts[1]),
                "young": _overlap(start, end, spans[0], starts[0]),
                "fulls": sum(1 for s, e in spans[2] if s < end and e > start),
                "stall": max(in_step, default=0.0),
                "misses": step.get("misses", 0),
                "hits": step.get("hits", 0),
                "first": float(step["number"] == 0),
                "send_s": statistics.fmean(waits) if waits else 0.0,
            }
        )
    latencies = [r["latency"] for r in rows]
    p50, p95, p99 = _p(latencies, 0.5), _p(latencies, 0.95), _p(latencies, 0.99)
    tail = [r for r in rows if r["latency"] > p95]
    middle = [r for r in rows if r["latency"] <= p50]
    warm = [r for r in rows if not r["first"]]  # the steps after each agent's first
    warm_p50, warm_p95 = _p([r["latency"] for r in warm], 0.5), _p([r["latency"] for r in warm], 0.95)
    warm_tail = [r for r in warm if r["latency"] > warm_p95]
    warm_middle = [r for r in warm if r["latency"] <= warm_p50]

    def means(group: Sequence[dict[str, float]]) -> dict[str, float]:
        return {key: statistics.fmean(r[key] for r in group) for key in rows[0]} if group else {}

    wall = max(s["end"] for s in steps) - min(s["start"] for s in steps)
    gc_seconds = [sum(e - s for s, e in spans[g]) for g in (0, 1, 2)]
    return {
        "steps": len(rows),
        "wall_s": wall,
        "steps_per_s": len(rows) / wall,
        "p50_ms": p50 * 1000,
        "p95_ms": p95 * 1000,
        "p99_ms": p99 * 1000,
        "p99_without_full_ms": _p([r["latency"] - r["full"] for r in rows], 0.99) * 1000,
        "p99_without_any_collection_ms": _p([r["latency"] - r["full"] - r["middle"] - r["young"] for r in rows], 0.99)
        * 1000,
        "collections": [len(spans[g]) for g in (0, 1, 2)],
        "collection_s": gc_seconds,
        "full_ms": [round((e - s) * 1000, 1) for s, e in spans[2]],
        "middle_ms_median": statistics.median([(e - s) * 1000 for s, e in spans[1]]) if spans[1] else None,
        "young_ms_median": statistics.median([(e - s) * 1000 for s, e in spans[0]]) if spans[0] else None,
        "lateness_p99_ms": _p([late for _, late in lateness], 0.99) * 1000 if lateness else None,
        "lateness_max_ms": max((late for _, late in lateness), default=0.0) * 1000,
        "sends": len(sends),
        "commands_per_send": statistics.fmean(n for _, _, n in sends) if sends else None,
        "send_ms_median": statistics.median((e - s) * 1000 for s, e, _ in sends) if sends else None,
        "tail_above_p95": means(tail),
        "middle_at_or_below_p50": means(middle),
        "tail_share_overlapping_a_full": sum(1 for r in tail if r["fulls"]) / len(tail) if tail else None,
        "middle_share_overlapping_a_full": sum(1 for r in middle if r["fulls"]) / len(middle) if middle else None,
        "warm_p50_ms": warm_p50 * 1000,
        "warm_p99_ms": _p([r["latency"] for r in warm], 0.99) * 1000,
        "warm_p99_without_full_ms": _p([r["latency"] - r["full"] for r in warm], 0.99) * 1000,
        "warm_tail_above_p95": means(warm_tail),
        "warm_middle_at_or_below_p50": means(warm_middle),
        "warm_tail_share_overlapping_a_full": (
            sum(1 for r in warm_tail if r["fulls"]) / len(warm_tail) if warm_tail else None
        ),
        "warm_middle_share_overlapping_a_full": (
            sum(1 for r in warm_middle if r["fulls"]) / len(warm_middle) if warm_middle else None
        ),
    }


def attribute_raw(path: Path) -> dict[str, Any]:
    """:func:`attribute` of the raw records a row wrote (``<row>-rep<N>.jsonl.gz``)."""
    steps: list[dict[str, Any]] = []
    collections: list[tuple[int, float, float, int]] = []
    sends: list[tuple[float, float, int]] = []
    lateness: list[tuple[float, float]] = []
    with gzip.open(path, "rt") as lines:
        for record in map(json.loads, lines):
            kind = record["kind"]
            if kind == "step":
                steps.append(record)
            elif kind == "collection":
                collections.append((record["generation"], record["start"], record["end"], record["collected"]))
            elif kind == "send":
                sends.append((record["start"], record["end"], record["commands"]))
            else:
                lateness.append((record["at"], record["late"]))
    return attribute(steps, collections, sends, lateness)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    labels = [label for label in ("ours", "RedisSession") if label in args.rows]
    reps: list[list[dict[str, Any]]] = []
    with _redis() as (url, description):
        for rep in range(args.reps):
            order = labels if rep % 2 == 0 else labels[::-1]
            rows: list[dict[str, Any]] = []
            for label in order:
                print(f"rep {rep + 1}/{args.reps}: {label}", file=sys.stderr, flush=True)
                rows.append(await _row(label, url, args, rep + 1))
            reps.append(rows)
    return {
        "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, python {platform.python_version()}",
        "server": description,
        "load_average": " / ".join(f"{v:.1f}" for v in os.getloadavg()),
        "config": {
            key: getattr(args, key)
            for key in ("agents", "steps", "session", "window", "reps", "cache_bytes", "gc_freeze", "tick")
        },
        "reps": reps,
    }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--agents", type=int, default=1000, help="agents at once (default 1000)")
    parser.add_argument("--steps", type=int, default=10, help="steps per agent (default 10)")
    parser.add_argument("--session", type=int, default=200, help="messages per session before the run (default 200)")
    parser.add_argument("--window", type=int, default=40, help="messages per load (default 40)")
    parser.add_argument("--reps", type=int, default=1, help="repetitions, order alternating (default 1)")
    parser.add_argument("--rows", default="ours,RedisSession", help="rows to run (default ours,RedisSession)")
    parser.add_argument("--cache-bytes", type=int, default=192 << 20, help="ours: cache_bytes (default 192 MiB)")
    parser.add_argument(
        "--gc-freeze",
        choices=many._Freezer.MODES,  # pyright: ignore[reportPrivateUsage]
        help="as many_agents_bench.py's --gc-freeze, every row alike (default: the collector as Python sets it)",
    )
    parser.add_argument("--tick", type=float, default=0.005, help="loop lateness timer period in s (default 0.005)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results directory (default {DEFAULT_OUT})")
    parser.add_argument(
        "--attribute", nargs="+", type=Path, help="only attribute these raw files again (.jsonl.gz), print the summary"
    )
    args = parser.parse_args(argv)
    if args.attribute:
        print(json.dumps({str(path): attribute_raw(path) for path in args.attribute}, indent=2))
        return
    args.rows = [r.strip() for r in str(args.rows).split(",") if r.strip()]
    args.out.mkdir(parents=True, exist_ok=True)
    summary = asyncio.run(run(args))
    text = json.dumps(summary, indent=2) + "\n"
    (args.out / "tail.json").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
