"""Writers racing on one session of an object-store log: how many saves give up, and what a save costs.

Run: ``uv run benchmarks/contention_bench.py`` (``--backends fsspec --saves 40`` for a short run).

Each repetition starts ``--writers`` processes (6 by default) on one new session of one store:
a SeaweedFS bucket (``s3``, the server of ``_subjects_s3.py``) and a local folder (``fsspec``).
They start together (a line on their standard input) and each saves ``--saves`` pairs of messages without
pause (``--pause S``: a random pause of up to S seconds between saves). A save that gives up
after its retries (``StoreConflictError``) is retried by the writer, as an application would,
and counted. Afterwards every pair must be stored exactly once, adjacent, each writer's pairs in
its own order. Reported per backend: saves, saves that gave up, lost claims per save (appends
that conflicted), the most attempts one save took, save latency (median, p99, slowest) and
saves/s of all writers together. ``--legacy`` adds the same run with a driver whose lost claim
reads the log again before the next try (the claim path before the fair claims), side by side.
Writes ``benchmarks/results/<--name>.json`` and ``.md`` (``contention`` by default); nothing
asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

warnings.filterwarnings("ignore")

HERE = Path(__file__).resolve().parent
DEFAULT_OUT = HERE / "results"
SOURCE_ID = "contention"


# -- the writer process ---------------------------------------------------------------------


async def _writer(url: str, session: str, name: str, saves: int, pause: float, legacy: bool) -> None:
    import random

    from agent_framework import Message

    from agent_stores.core import StoreConflictError, open_stores

    stats: dict[str, Any] = {"appends": 0, "lost": 0}
    async with open_stores(url) as stores:
        history: Any = stores.history_provider(source_id=SOURCE_ID)
        if legacy:
            _make_legacy(history)
        view: Any = history.driver
        append = view.append

        async def counted(*args: Any, **kwargs: Any) -> Any:
            stats["appends"] += 1
            try:
                return await append(*args, **kwargs)
            except StoreConflictError:
                stats["lost"] += 1
                raise

        view.append = counted
        await history.count_messages(f"{session}-warm")  # connected before the start
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)  # the start signal
        rng = random.Random(name)
        latencies: list[float] = []
        attempts: list[int] = []
        gave_up = 0
        started = time.perf_counter()
        for index in range(saves):
            pair = [
                Message(role="user", contents=[f"{name}:{index}:a"], message_id=f"{name}:{index}:a"),
                Message(role="assistant", contents=[f"{name}:{index}:b"], message_id=f"{name}:{index}:b"),
            ]
            began = time.perf_counter()
            before = stats["appends"]
            while True:
                try:
                    await history.save_messages(session, pair)
                    break
                except StoreConflictError:
                    gave_up += 1
            latencies.append(time.perf_counter() - began)
            attempts.append(stats["appends"] - before)
            if pause:
                await asyncio.sleep(rng.uniform(0, pause))
        elapsed = time.perf_counter() - started
    print(
        json.dumps(
            {
                "writer": name,
                "saves": saves,
                "gave_up": gave_up,
                "lost": stats["lost"],
                "appends": stats["appends"],
                "attempts": attempts,
                "latencies": latencies,
                "elapsed": elapsed,
            }
        ),
        flush=True,
    )


def _make_legacy(history: Any) -> None:
    """The claims before fair claims (``fair_claims=False``): a lost claim's retry reads the log's end."""
    from agent_stores.core import ObjectLogDriver

    inner: Any = history.driver
    for _ in range(4):
        if isinstance(inner, ObjectLogDriver):
            inner.fair_claims = False
            return
        inner = getattr(inner, "driver", None)
    raise RuntimeError("the history provider is not over an ObjectLogDriver")


# -- the parent -----------------------------------------------------------------------------


def _targets(backends: list[str], root: Path) -> dict[str, tuple[str, dict[str, str]]]:
    """Per backend: a URL factory's base and the environment a writer needs."""
    found: dict[str, tuple[str, dict[str, str]]] = {}
    if "fsspec" in backends:
        found["fsspec"] = (f"file://{root}/fsspec-{{run}}", {})
    if "s3" in backends:
        sys.path.insert(0, str(HERE))
        from _subjects_s3 import _client, _url, s3_server  # pyright: ignore[reportPrivateUsage]

        _, endpoint = s3_server()
        client = _client()
        bucket = f"contention-{uuid.uuid4().hex[:12]}"
        client.create_bucket(Bucket=bucket)
        client.close()
        # A local server without credentials takes any: botocore still needs some to sign.
        env = {
            "AWS_ACCESS_KEY_ID": endpoint.access_key or "local",
            "AWS_SECRET_ACCESS_KEY": endpoint.secret_key or "local",
        }
        os.environ.update(env)  # for the verifying read of this process
        found["s3"] = (_url(bucket, "bench-{run}"), env)
    return found


async def _verify(url: str, session: str, writers: int, saves: int) -> dict[str, int]:
    from agent_stores.core import open_stores

    async with open_stores(url) as stores:
        history = stores.history_provider(source_id=SOURCE_ID)
        stored = [m.message_id or "" for m in await history.get_messages(session)]
    counts = Counter(stored)
    duplicated = sum(n - 1 for n in counts.values() if n > 1)
    lost = 0
    for w in range(writers):
        name = f"w{w}"
        indices = [int(m.split(":")[1]) for m in stored if m.startswith(f"{name}:") and m.endswith(":a")]
        if indices != sorted(indices):
            raise AssertionError(f"{name}'s saves out of order")
        lost += len(set(range(saves)) - set(indices))
        for i in indices:
            a = stored.index(f"{name}:{i}:a")
            if stored[a + 1 : a + 2] != [f"{name}:{i}:b"]:
                raise AssertionError(f"save {name}:{i} torn")
    if duplicated or lost:
        raise AssertionError(f"{lost} saves lost, {duplicated} messages duplicated")
    return {"stored": len(stored), "lost": lost, "duplicated": duplicated}


def _run_once(url: str, env: dict[str, str], writers: int, saves: int, pause: float, legacy: bool) -> dict[str, Any]:
    session = f"race-{uuid.uuid4().hex[:8]}"
    procs: list[subprocess.Popen[str]] = []
    for w in range(writers):
        args = [sys.executable, __file__, "--worker", url, session, f"w{w}", str(saves), str(pause)]
        if legacy:
            args.append("--legacy")
        procs.append(
            subprocess.Popen(
                args,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env={**os.environ, **env},
                cwd=str(HERE),
            )
        )
    for proc in procs:
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()
        if line != "ready":
            raise RuntimeError(f"a writer did not start: {line!r}")
    started = time.perf_counter()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    results = []
    for proc in procs:
        out, _ = proc.communicate(timeout=900)
        if proc.returncode:
            raise RuntimeError(f"a writer failed ({proc.returncode})")
        results.append(json.loads(out.strip().splitlines()[-1]))
    wall = time.perf_counter() - started
    checked = asyncio.run(_verify(url, session, writers, saves))
    pairs = sorted(((x, a) for r in results for x, a in zip(r["latencies"], r["attempts"], strict=True)), reverse=True)
    latencies = sorted(x for r in results for x in r["latencies"])
    attempts = [a for r in results for a in r["attempts"]]
    total = writers * saves
    return {
        "saves": total,
        "gave_up": sum(r["gave_up"] for r in results),
        "lost_claims": sum(r["lost"] for r in results),
        "lost_claims_per_save": sum(r["lost"] for r in results) / total,
        "most_attempts": max(attempts),
        "p50_ms": statistics.median(latencies) * 1000,
        "p99_ms": latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))] * 1000,
        "max_ms": latencies[-1] * 1000,
        "saves_per_s": total / wall,
        "wall_s": wall,
        "slowest_saves_s_attempts": [(round(x, 3), a) for x, a in pairs[:10]],
        **checked,
    }


def _table(rows: list[dict[str, Any]]) -> str:
    head = (
        "| Backend | Claims | Reps | Writers | Saves | Saves that gave up | Lost claims per save | Most attempts"
        " | p50 (ms) | p99 (ms) | Slowest (ms) | Saves/s (all writers) | Lost | Duplicated |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
    )
    lines = [
        f"| {r['backend']} | {r['claims']} | {r['reps']} | {r['writers']} | {r['saves']:,} | {r['gave_up']} | "
        f"{r['lost_claims_per_save']:.2f} | {r['most_attempts']} | {r['p50_ms']:.1f} | {r['p99_ms']:.1f} | "
        f"{r['max_ms']:.0f} | {r['saves_per_s']:.0f} | {r['lost']} | {r['duplicated']} |"
        for r in rows
    ]
    return head + "\n".join(lines) + "\n"


def _summarise(backend: str, claims: str, writers: int, runs: list[dict[str, Any]]) -> dict[str, Any]:
    saves = sum(r["saves"] for r in runs)
    return {
        "backend": backend,
        "claims": claims,
        "reps": len(runs),
        "writers": writers,
        "saves": saves,
        "gave_up": sum(r["gave_up"] for r in runs),
        "lost_claims_per_save": sum(r["lost_claims"] for r in runs) / saves,
        "most_attempts": max(r["most_attempts"] for r in runs),
        "p50_ms": statistics.median(r["p50_ms"] for r in runs),
        "p99_ms": max(r["p99_ms"] for r in runs),
        "max_ms": max(r["max_ms"] for r in runs),
        "saves_per_s": statistics.median(r["saves_per_s"] for r in runs),
        "lost": sum(r["lost"] for r in runs),
        "duplicated": sum(r["duplicated"] for r in runs),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--backends", nargs="+", default=["s3", "fsspec"], choices=["s3", "fsspec"])
    parser.add_argument("--writers", type=int, default=6)
    parser.add_argument("--saves", type=int, default=100, help="saves per writer per repetition")
    parser.add_argument("--pause", type=float, default=0.0, help="most seconds a writer pauses between saves")
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--legacy", action="store_true", help="also run the claim path before fair claims")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--name", default="contention", help="file name of the results (without suffix)")
    args = parser.parse_args(argv)
    variants = [("fair", False), *([("before (read after a lost claim)", True)] if args.legacy else [])]
    rows: list[dict[str, Any]] = []
    samples: dict[str, list[dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        targets = _targets(args.backends, work)
        run = 0
        for backend, (url_format, env) in targets.items():
            runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in variants}
            for rep in range(args.reps):
                order = variants if rep % 2 == 0 else list(reversed(variants))  # alternate: noise shared
                for label, legacy in order:
                    run += 1
                    found = _run_once(url_format.format(run=run), env, args.writers, args.saves, args.pause, legacy)
                    print(f"{backend} {label} rep {rep}: {json.dumps(found)}", flush=True)
                    runs[label].append(found)
            for label, _ in variants:
                rows.append(_summarise(backend, label, args.writers, runs[label]))
                samples[f"{backend}/{label}"] = runs[label]
    table = _table(rows)
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    meta = {
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
        "options": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }
    (args.out / f"{args.name}.json").write_text(json.dumps({"meta": meta, "rows": rows, "samples": samples}, indent=1))
    (args.out / f"{args.name}.md").write_text(
        f"# Writers racing on one session (`contention_bench.py`)\n\n"
        f"{args.writers} writer processes, {args.saves} saves each per repetition, pause up to {args.pause} s; "
        f"{platform.platform()}, {os.cpu_count()} CPUs (a shared machine: latencies are noisy, compare rows of one "
        f"run).\n\n" + table
    )


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        url, session, name, saves, pause = sys.argv[2:7]
        asyncio.run(_writer(url, session, name, int(saves), float(pause), "--legacy" in sys.argv[7:]))
    else:
        main()
