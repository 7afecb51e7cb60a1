"""``agent-stores migrate`` Redis -> S3 (SeaweedFS): one item at a time against the default concurrency.

Seeds ``--sessions`` sessions on a Redis server (each ``--messages`` messages and a session
snapshot), then migrates them into a fresh S3 prefix once per concurrency given, timing the
whole command (plan, copy, verify) as ``agent_stores.cli`` runs it. Servers: the Redis and S3
servers the other benchmarks use (local binaries on free loopback ports, or
``$AGENT_STORES_REDIS_URL`` / ``$AGENT_STORES_S3_URL``). Nothing asserts a speed.

    uv run benchmarks/migrate_bench.py                      # 1,000 sessions, concurrency 1 and 16
    uv run benchmarks/migrate_bench.py --sessions 10000 --concurrency 1 16 64
    uv run benchmarks/migrate_bench.py --s3-rtt-ms 10   # each S3 request waits 10 ms, as across a network

On loopback servers a migration is bound by the client's CPU (a few ms per S3 request), which
concurrency cannot add on a small machine; ``--s3-rtt-ms`` adds the round trip a store across a
network has, which is what concurrency overlaps.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
import uuid
from collections.abc import Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from unittest.mock import patch

from agent_framework import AgentSession, Message

sys.path.insert(0, str(Path(__file__).parent))

RESULTS = Path(__file__).parent / "results"


async def seed(url: str, sessions: int, messages: int) -> None:
    from agent_stores.core import open_stores

    async with open_stores(url) as stores:
        history = stores.history_provider()
        snapshots = stores.session_store()
        semaphore = asyncio.Semaphore(32)

        async def one(index: int) -> None:
            async with semaphore:
                session_id = f"session-{index}"
                batch = [
                    Message(
                        role="user" if i % 2 == 0 else "assistant", contents=[f"turn {i} of {session_id}: " + "x" * 200]
                    )
                    for i in range(messages)
                ]
                await history.save_messages(session_id, batch)
                session = AgentSession(session_id=session_id)
                session.state["turns"] = messages // 2
                await snapshots.set(session_id, session)

        await asyncio.gather(*(one(i) for i in range(sessions)))


def _s3_session(rtt_ms: float, requests: dict[str, int], stack: ExitStack) -> None:
    """Count the S3 requests of the stores' own clients in ``requests``, each waiting ``rtt_ms`` first.

    The loopback server answers in well under a millisecond, so on it a migration is bound by
    CPU, not by waiting; a store across a network is not. The wait is a ``before-send`` hook
    on the ``boto3.Session`` the S3 backend makes its clients from (the worker thread sleeps,
    as it would blocked on a socket); the count a ``before-call`` hook. ``stack`` puts the
    backend's own session back.
    """
    import boto3

    from agent_stores.s3 import _connect

    def count(model: Any, **_: Any) -> None:
        requests[model.name] = requests.get(model.name, 0) + 1

    session = boto3.Session()
    session.events.register("before-call.s3", count)
    if rtt_ms:
        session.events.register("before-send.s3", lambda **_: time.sleep(rtt_ms / 1000))
    stack.enter_context(patch.dict(_connect._SESSIONS, {None: session}))  # pyright: ignore[reportPrivateUsage]


def run(sessions: int, messages: int, concurrencies: Sequence[int], s3_rtt_ms: float = 0.0) -> dict[str, Any]:
    from _subjects_redis import _redis  # pyright: ignore[reportPrivateUsage]
    from _subjects_s3 import _url, s3_server  # pyright: ignore[reportPrivateUsage]
    from agent_stores.cli._migrate import migrate

    with ExitStack() as stack:
        redis_url, redis_description = stack.enter_context(_redis())
        server, endpoint = s3_server()
        # The CLI reads S3 credentials from the environment, as a user's shell gives them.
        credentials = {"AWS_ACCESS_KEY_ID": endpoint.access_key, "AWS_SECRET_ACCESS_KEY": endpoint.secret_key}
        stack.enter_context(patch.dict(os.environ, {k: v for k, v in credentials.items() if v is not None}))
        requests: dict[str, int] = {}
        _s3_session(s3_rtt_ms, requests, stack)
        source = f"{redis_url}?key_prefix=migrate-{uuid.uuid4().hex[:8]}:"
        started = time.perf_counter()
        asyncio.run(seed(source, sessions, messages))
        seeded = time.perf_counter() - started
        rows: list[dict[str, Any]] = []
        for concurrency in concurrencies:
            bucket = endpoint.create_bucket("migrate-bench")
            target = _url(bucket, prefix=f"c{concurrency}-{uuid.uuid4().hex[:6]}")
            requests.clear()
            started, cpu = time.perf_counter(), time.process_time()
            report = asyncio.run(migrate(source, target, concurrency=concurrency))
            elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
            assert report.ok, [i.to_json() for i in report.failures][:3]
            rows.append(
                {
                    "concurrency": concurrency,
                    "seconds": round(elapsed, 2),
                    "items": len(report.items),
                    "items_per_second": round(len(report.items) / elapsed, 1),
                    # CPU seconds of this process (every thread): what a loaded machine slows least.
                    "cpu_ms_per_session": round(cpu * 1000 / sessions, 2),
                    "s3_requests_per_session": {k: round(v / sessions, 2) for k, v in sorted(requests.items())},
                    "load_average": [round(x, 1) for x in os.getloadavg()],
                }
            )
            print(
                f"concurrency {concurrency:>3}: {elapsed:8.2f} s, {len(report.items) / elapsed:8.1f} items/s, "
                f"CPU {rows[-1]['cpu_ms_per_session']} ms per session, "
                f"S3 requests per session {rows[-1]['s3_requests_per_session']}, load {rows[-1]['load_average']}",
                flush=True,
            )
        base = rows[0]["seconds"]
        for row in rows:
            row["speedup_vs_first"] = round(base / row["seconds"], 2)
        return {
            "sessions": sessions,
            "messages_per_session": messages,
            "seed_seconds": round(seeded, 2),
            "s3_round_trip_ms": s3_rtt_ms,
            "servers": {"redis": redis_description, "s3": f"{server.description} via {server.via}"},
            "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
            # Other work may share the machine: the load average at the end says how much.
            "load_average": [round(x, 1) for x in os.getloadavg()],
            "rows": rows,
        }


def markdown(summary: dict[str, Any]) -> str:
    lines = [
        "# agent-stores migrate: Redis -> S3",
        "",
        f"{summary['sessions']:,} sessions of {summary['messages_per_session']} messages and a snapshot each "
        f"({summary['rows'][0]['items']:,} items); plan, copy and verify timed together."
        + (
            f" Every S3 request waits {summary['s3_round_trip_ms']:g} ms first (a simulated network round trip)."
            if summary.get("s3_round_trip_ms")
            else ""
        ),
        "",
        "| concurrency | seconds | items/s | speed-up vs the first row | CPU ms per session"
        " | S3 requests per session | load average |",
        "|---:|---:|---:|---:|---:|---|---|",
    ]
    lines += [
        f"| {r['concurrency']} | {r['seconds']:.2f} | {r['items_per_second']:.1f} | {r['speedup_vs_first']:.2f}x"
        f" | {r.get('cpu_ms_per_session', '')}"
        f" | {', '.join(f'{k} {v:g}' for k, v in r.get('s3_requests_per_session', {}).items())}"
        f" | {' / '.join(str(x) for x in r.get('load_average', []))} |"
        for r in summary["rows"]
    ]
    lines += ["", "- servers: " + "; ".join(f"{k}: {v}" for k, v in summary["servers"].items())]
    lines += [f"- machine: {summary['machine']}"]
    if "load_average" in summary:
        lines += [f"- load average at the end: {' / '.join(str(x) for x in summary['load_average'])} (shared machine)"]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16])
    parser.add_argument(
        "--s3-rtt-ms", type=float, default=0.0, help="simulated network round trip of each S3 request (default 0)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "migrate", help="results path without suffix")
    args = parser.parse_args(argv)
    summary = run(args.sessions, args.messages, args.concurrency, args.s3_rtt_ms)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(json.dumps(summary, indent=2) + "\n")
    args.out.with_suffix(".md").write_text(markdown(summary))
    print(markdown(summary))
    return summary


if __name__ == "__main__":
    main()
