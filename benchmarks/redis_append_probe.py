"""Where a Redis history append spends its time next to the floor's bare ``RPUSH``: server and client.

Run: ``uv run --group bench benchmarks/redis_append_probe.py`` (about a minute; ``--calls`` and
``--reps`` to change it). Starts a local ``redis-server`` (and ``valkey-server`` when there is
one) on a free port, like the test fixtures, and measures on each, in repetitions (the
scripts' order rotated each time):

- server time per call (``INFO commandstats``, ``usec_per_call``) of the floor's ``RPUSH`` of
  two payloads, and of ``EVALSHA`` of: an empty script (what running any script costs), the
  least a versioned, de-duplicated append on this key layout does (``GET`` the epoch, ``LLEN``,
  compare, ``RPUSH`` the digests, ``RPUSH`` the payloads), that plus the ``PTTL`` which finds a
  TTL to drop, and ``LOG_APPEND`` itself on its steady path;
- client CPU and wall time per call of ``RedisLogDriver.append`` (an owned connection, as
  ``open_stores`` makes) and of the floor's ``RPUSH`` (``redis.asyncio.Redis.from_url``, as the
  history benchmark's floor does), one call at a time.

Results go to ``benchmarks/results/redis-append/probe.md`` and ``probe.json`` (see ``--out``).
Medians over repetitions; nothing here asserts a speed. Timings on a shared machine are noisy.

``--cluster`` measures the client side on a Redis Cluster instead (a local 3-primary cluster
and a single server, like the history benchmark's cluster rows): client CPU and wall per call
of ``RedisLogDriver.append`` on the cluster, of redis-py's ``RedisCluster`` doing the floor's
``RPUSH``, and of the single-server floor; with ``--profile N``, the functions where N of our
cluster appends spend their client CPU (cProfile, by own time). Results go to
``cluster-probe.md`` and ``cluster-probe.json``, or ``--name`` instead of ``cluster-probe``.
With ``--agents N`` (and ``--cluster``) also the client CPU and wall per append of ``N`` appends
issued at once, each to a log of its own, as ``N`` agents served by one process issue them
(they go in pipelines, one per primary), ``--calls`` appends in all per repetition.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import os
import statistics
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import redis.asyncio as aredis

from agent_stores.core import LogRecord
from agent_stores.redis import RedisConnection
from agent_stores.redis._driver import RedisLogDriver
from agent_stores.redis._scripts import LOG_APPEND

DEFAULT_OUT = Path(__file__).parent / "results" / "redis-append"

#: A chat message's JSON, the size of the history benchmark's short turns.
PAYLOAD = b'{"type":"message","role":"user","contents":[{"type":"text","text":"' + b"x" * 180 + b'"}]}'

#: The scripts compared with the floor, by row name: the script runs on keys m, d, v with ARGV
#: expected version, ttl, two digests, two payloads (LOG_APPEND's steady-path call).
SCRIPTS: dict[str, str] = {
    "EVALSHA: empty script (return 1)": "return 1",
    "EVALSHA: least versioned append (GET, LLEN, RPUSH d, RPUSH m)": """
local epoch = redis.call('GET', KEYS[3])
local length = redis.call('LLEN', KEYS[1])
if not epoch or epoch .. ':' .. length ~= ARGV[1] then return {''} end
redis.call('RPUSH', KEYS[2], ARGV[3], ARGV[4])
redis.call('RPUSH', KEYS[1], ARGV[5], ARGV[6])
return length + 2
""",
    "EVALSHA: least versioned append + PTTL": """
local epoch = redis.call('GET', KEYS[3])
local length = redis.call('LLEN', KEYS[1])
if not epoch or epoch .. ':' .. length ~= ARGV[1] then return {''} end
if redis.call('PTTL', KEYS[3]) > 0 then return {'', 1} end
redis.call('RPUSH', KEYS[2], ARGV[3], ARGV[4])
redis.call('RPUSH', KEYS[1], ARGV[5], ARGV[6])
return length + 2
""",
    "EVALSHA: ours, LOG_APPEND (steady path)": LOG_APPEND,
}
FLOOR_ROW = "RPUSH: the floor (two payloads)"


def _servers() -> Iterator[Callable[[], contextlib.AbstractContextManager[Any]]]:
    from agent_stores.testing.servers.redis import local_redis, local_valkey

    yield local_redis
    yield local_valkey


async def _server_costs(url: str, calls: int, rotate: int) -> dict[str, float]:
    """Server microseconds per call of each row, one pass, the scripts in an order rotated by ``rotate``."""
    client = aredis.Redis.from_url(url)
    out: dict[str, float] = {}
    try:
        await client.delete("floor")  # pyright: ignore[reportUnknownMemberType]
        await client.config_resetstat()  # pyright: ignore[reportUnknownMemberType]
        for _ in range(calls):
            await client.execute_command("RPUSH", "floor", PAYLOAD, PAYLOAD)  # pyright: ignore[reportUnknownMemberType]
        stats = await client.info("commandstats")  # pyright: ignore[reportUnknownMemberType]
        out[FLOOR_ROW] = float(stats["cmdstat_rpush"]["usec_per_call"])
        rows = list(SCRIPTS.items())
        for name, source in rows[rotate % len(rows) :] + rows[: rotate % len(rows)]:
            sha = await client.script_load(source)  # pyright: ignore[reportUnknownMemberType]
            await client.delete("m", "d", "v")  # pyright: ignore[reportUnknownMemberType]
            await client.set("v", "e")  # pyright: ignore[reportUnknownMemberType]
            await client.config_resetstat()  # pyright: ignore[reportUnknownMemberType]
            length = 0
            for _ in range(calls):
                reply = await client.evalsha(sha, 3, "m", "d", "v", f"e:{length}", "", "d1", "d2", PAYLOAD, PAYLOAD)  # pyright: ignore[reportUnknownMemberType, reportGeneralTypeIssues]
                if source != "return 1":  # an append: its reply is the new length, the next version's
                    length = int(reply)  # pyright: ignore[reportUnknownArgumentType]
            stats = await client.info("commandstats")  # pyright: ignore[reportUnknownMemberType]
            out[name] = float(stats["cmdstat_evalsha"]["usec_per_call"])
        await client.delete("floor", "m", "d", "v")  # pyright: ignore[reportUnknownMemberType]
    finally:
        await client.aclose()
    return out


async def _client_costs(url: str, calls: int) -> dict[str, dict[str, float]]:
    """Client CPU and wall microseconds per call of the driver's append and the floor's RPUSH."""
    records = [
        [LogRecord(hashlib.sha256(f"{i}/{j}".encode()).hexdigest()[:32], PAYLOAD) for j in range(2)]
        for i in range(calls + 1)
    ]
    connection = RedisConnection.from_url(url, key_prefix=f"probe-{os.getpid()}:")
    driver = RedisLogDriver(connection)
    floor = aredis.Redis.from_url(url)
    out: dict[str, dict[str, float]] = {}
    try:
        version = await driver.append("probe", records[0], expected_version=None, session_id="probe")
        await floor.execute_command("RPUSH", "probe-floor", PAYLOAD)  # pyright: ignore[reportUnknownMemberType]
        cpu, wall = time.process_time(), time.perf_counter()
        for batch in records[1:]:
            version = await driver.append("probe", batch, expected_version=version, session_id="probe")
        out["ours: RedisLogDriver.append"] = {
            "cpu_us": (time.process_time() - cpu) / calls * 1e6,
            "wall_us": (time.perf_counter() - wall) / calls * 1e6,
        }
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(calls):
            await floor.execute_command("RPUSH", "probe-floor", PAYLOAD, PAYLOAD)  # pyright: ignore[reportUnknownMemberType]
        out["floor: RPUSH"] = {
            "cpu_us": (time.process_time() - cpu) / calls * 1e6,
            "wall_us": (time.perf_counter() - wall) / calls * 1e6,
        }
        await driver.delete("probe")
        await floor.delete("probe-floor")  # pyright: ignore[reportUnknownMemberType]
    finally:
        await driver.aclose()
        await floor.aclose()
    return out


async def _timed(calls: int, call: Callable[[int], Any]) -> dict[str, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    for i in range(calls):
        await call(i)
    return {"cpu_us": (time.process_time() - cpu) / calls * 1e6, "wall_us": (time.perf_counter() - wall) / calls * 1e6}


async def _cluster_client_costs(cluster_url: str, single_url: str, calls: int) -> dict[str, dict[str, float]]:
    """Client CPU and wall microseconds per call: our append on the cluster, RPUSH on the cluster and on one server."""
    records = [
        [LogRecord(hashlib.sha256(f"{i}/{j}".encode()).hexdigest()[:32], PAYLOAD) for j in range(2)]
        for i in range(calls + 1)
    ]
    connection = RedisConnection.from_url(cluster_url, key_prefix=f"probe-{os.getpid()}:")
    driver = RedisLogDriver(connection)
    cluster = aredis.RedisCluster.from_url(cluster_url.replace("redis+cluster://", "redis://").split(",")[0])
    single = aredis.Redis.from_url(single_url)
    version: list[Any] = [await driver.append("probe", records[0], expected_version=None, session_id="probe")]
    out: dict[str, dict[str, float]] = {}
    try:
        await cluster.execute_command("RPUSH", "probe-floor", PAYLOAD)  # pyright: ignore[reportUnknownMemberType]
        await single.execute_command("RPUSH", "probe-floor", PAYLOAD)  # pyright: ignore[reportUnknownMemberType]

        async def ours(i: int) -> None:
            version[0] = await driver.append("probe", records[i + 1], expected_version=version[0], session_id="probe")

        out["ours on the cluster: RedisLogDriver.append"] = await _timed(calls, ours)
        out["redis-py RedisCluster: RPUSH"] = await _timed(
            calls,
            lambda _: cluster.execute_command("RPUSH", "probe-floor", PAYLOAD, PAYLOAD),  # pyright: ignore[reportUnknownMemberType, reportUnknownLambdaType]
        )
        out["floor, one server: RPUSH"] = await _timed(
            calls,
            lambda _: single.execute_command("RPUSH", "probe-floor", PAYLOAD, PAYLOAD),  # pyright: ignore[reportUnknownMemberType, reportUnknownLambdaType]
        )
        await driver.delete("probe")
        await cluster.delete("probe-floor")  # pyright: ignore[reportUnknownMemberType]
        await single.delete("probe-floor")  # pyright: ignore[reportUnknownMemberType]
    finally:
        await driver.aclose()
        await cluster.aclose()
        await single.aclose()
    return out


async def _cluster_pipeline_costs(cluster_url: str, calls: int, agents: int) -> dict[str, dict[str, float]]:
    """Client CPU and wall microseconds per append, and per ``LLEN``, when ``agents`` are issued at once (pipelined)."""
    connection = RedisConnection.from_url(cluster_url, key_prefix=f"pipelined-{os.getpid()}-{uuid.uuid4().hex[:6]}:")
    driver = RedisLogDriver(connection)
    steps = max(1, calls // agents)
    logs = [f"agent-{n}" for n in range(agents)]
    try:
        versions: list[Any] = list(
            await asyncio.gather(
                *(
                    driver.append(log, [LogRecord(f"{n:032x}", PAYLOAD)], expected_version=None, session_id=log)
                    for n, log in enumerate(logs)
                )
            )
        )

        async def append(n: int, step: int) -> None:
            batch = [LogRecord(f"{step:016x}{n:015x}{j}", PAYLOAD) for j in range(2)]
            versions[n] = await driver.append(logs[n], batch, expected_version=versions[n], session_id=logs[n])

        cpu, wall = time.process_time(), time.perf_counter()
        for step in range(steps):
            await asyncio.gather(*(append(n, step) for n in range(agents)))
        done = steps * agents
        appends = {
            "cpu_us": (time.process_time() - cpu) / done * 1e6,
            "wall_us": (time.perf_counter() - wall) / done * 1e6,
        }
        cpu, wall = time.process_time(), time.perf_counter()
        for _ in range(steps):
            await asyncio.gather(*(driver.length(log) for log in logs))
        lengths = {
            "cpu_us": (time.process_time() - cpu) / done * 1e6,
            "wall_us": (time.perf_counter() - wall) / done * 1e6,
        }
        await asyncio.gather(*(driver.delete(log) for log in logs))
    finally:
        await driver.aclose()
    return {"appends": appends, "lengths": lengths}


async def _cluster_profile(cluster_url: str, calls: int) -> str:
    """cProfile of ``calls`` of our appends on the cluster: the top functions by own time."""
    import cProfile
    import io
    import pstats

    connection = RedisConnection.from_url(cluster_url, key_prefix=f"profile-{os.getpid()}:")
    driver = RedisLogDriver(connection)
    records = [[LogRecord(f"{i:032x}", PAYLOAD), LogRecord(f"{i:031x}x", PAYLOAD)] for i in range(calls + 1)]
    try:
        version = await driver.append("p", records[0], expected_version=None, session_id="p")
        profile = cProfile.Profile()
        profile.enable()
        for batch in records[1:]:
            version = await driver.append("p", batch, expected_version=version, session_id="p")
        profile.disable()
        await driver.delete("p")
    finally:
        await driver.aclose()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(25)
    return text.getvalue()


def run_cluster(calls: int, reps: int, profile: int, agents: int = 0) -> dict[str, Any]:
    """The cluster measurements: medians over ``reps``, and the profile of ``profile`` appends (0: none)."""
    from agent_stores.testing.servers.redis import local_redis, local_redis_cluster

    with local_redis_cluster() as cluster, local_redis() as single:
        runs = [asyncio.run(_cluster_client_costs(cluster.url, single.url, calls)) for _ in range(reps)]
        if agents:
            for run in runs:
                pipelined = asyncio.run(_cluster_pipeline_costs(cluster.url, calls, agents))
                run[f"ours on the cluster: {agents} appends at once (pipelined)"] = pipelined["appends"]
                run[f"ours on the cluster: {agents} LLEN at once (pipelined)"] = pipelined["lengths"]
        text = asyncio.run(_cluster_profile(cluster.url, profile)) if profile else ""
    ours, floor = "ours on the cluster: RedisLogDriver.append", "floor, one server: RPUSH"
    return {
        "servers": [cluster.description, single.description],
        "client": {name: {k: _median([r[name][k] for r in runs]) for k in ("cpu_us", "wall_us")} for name in runs[0]},
        "paired_wall_ratio_floor_over_ours": _median([r[floor]["wall_us"] / r[ours]["wall_us"] for r in runs]),
        "paired_cpu_gap_us": _median([r[ours]["cpu_us"] - r[floor]["cpu_us"] for r in runs]),
        "profile": text,
    }


def render_cluster(results: dict[str, Any], calls: int, reps: int) -> str:
    """The cluster results as Markdown."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        "# Redis Cluster append: client cost next to the floor's bare RPUSH",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} CPUs, load average {load}",
        f"- servers: {'; '.join(results['servers'])}",
        f"- {calls} calls per row and repetition, {reps} repetitions; medians",
        "",
        "| client side, one call at a time | CPU µs | wall µs |",
        "|---|---:|---:|",
    ]
    for name, value in results["client"].items():
        lines.append(f"| {name} | {value['cpu_us']:.1f} | {value['wall_us']:.1f} |")
    lines += [
        "",
        f"- floor ÷ ours on the cluster, wall, paired per repetition:"
        f" {results['paired_wall_ratio_floor_over_ours']:.2f}x; client CPU ours minus the floor's:"
        f" {results['paired_cpu_gap_us']} µs per call",
    ]
    if results["profile"]:
        lines += ["", "```", results["profile"].strip(), "```"]
    return "\n".join(lines)


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def run(calls: int, reps: int) -> dict[str, Any]:
    """Measure on every server that starts; return the medians."""
    from agent_stores.testing.servers import ServerUnavailable

    results: dict[str, Any] = {}
    for start in _servers():
        try:
            context = start()
            server = context.__enter__()
        except ServerUnavailable as err:
            results[start.__name__] = {"skipped": str(err)}
            continue
        try:
            server_runs: list[dict[str, float]] = []
            client_runs: list[dict[str, dict[str, float]]] = []
            for rep in range(reps):
                server_runs.append(asyncio.run(_server_costs(server.url, calls, rep)))
                client_runs.append(asyncio.run(_client_costs(server.url, calls)))
        finally:
            context.__exit__(None, None, None)
        server_us = {name: _median([r[name] for r in server_runs]) for name in server_runs[0]}
        client = {
            name: {k: _median([r[name][k] for r in client_runs]) for k in ("cpu_us", "wall_us")}
            for name in client_runs[0]
        }
        ours, floor = client["ours: RedisLogDriver.append"], client["floor: RPUSH"]
        results[server.description] = {
            "server_usec_per_call": server_us,
            "server_spread": {
                name: [min(r[name] for r in server_runs), max(r[name] for r in server_runs)] for name in server_us
            },
            "client": client,
            "paired_wall_ratio_floor_over_ours": _median(
                [r["floor: RPUSH"]["wall_us"] / r["ours: RedisLogDriver.append"]["wall_us"] for r in client_runs]
            ),
            "paired_cpu_ratio_floor_over_ours": _median(
                [r["floor: RPUSH"]["cpu_us"] / r["ours: RedisLogDriver.append"]["cpu_us"] for r in client_runs]
            ),
            "wall_gap_us": round(ours["wall_us"] - floor["wall_us"], 1),
        }
    return results


def render(results: dict[str, Any], calls: int, reps: int) -> str:
    """The results as Markdown."""
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [
        "# Redis append: server and client cost next to the floor's bare RPUSH",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} CPUs, load average {load}"
        " (a shared machine: other work ran alongside)",
        f"- {calls} calls per row and repetition, {reps} repetitions, the scripts' order rotated each time;"
        " medians (min..max)",
        "- run: `uv run --group bench benchmarks/redis_append_probe.py`",
        "",
    ]
    for server, data in results.items():
        lines += [f"## {server}", ""]
        if "skipped" in data:
            lines += [f"skipped: {data['skipped']}", ""]
            continue
        lines += ["| server side, one call | µs per call (INFO commandstats) |", "|---|---:|"]
        for name, value in data["server_usec_per_call"].items():
            low, high = data["server_spread"][name]
            lines.append(f"| {name} | {value:.2f} ({low:.2f}..{high:.2f}) |")
        lines += ["", "| client side, one call at a time | CPU µs | wall µs |", "|---|---:|---:|"]
        for name, value in data["client"].items():
            lines.append(f"| {name} | {value['cpu_us']:.1f} | {value['wall_us']:.1f} |")
        lines += [
            "",
            f"- ours ÷ floor, paired per repetition: wall rate {data['paired_wall_ratio_floor_over_ours']:.2f}x,"
            f" CPU {data['paired_cpu_ratio_floor_over_ours']:.2f}x (above 1: ours cheaper); wall gap"
            f" {data['wall_gap_us']} µs per call",
            "",
        ]
    return "\n".join(lines)


def main() -> None:
    """Run the probe and write its results."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=2000, help="calls per row and repetition (default 2000)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results directory (default {DEFAULT_OUT})")
    parser.add_argument("--cluster", action="store_true", help="the client side on a local Redis Cluster instead")
    parser.add_argument("--profile", type=int, default=0, help="with --cluster: profile this many appends")
    parser.add_argument("--name", default="cluster-probe", help="with --cluster: the results' file name")
    parser.add_argument("--agents", type=int, default=0, help="with --cluster: also this many appends at once")
    args = parser.parse_args()
    if args.cluster:
        results = run_cluster(args.calls, args.reps, args.profile, args.agents)
        markdown = render_cluster(results, args.calls, args.reps)
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / f"{args.name}.md").write_text(markdown + "\n", encoding="utf-8")
        (args.out / f"{args.name}.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        print(markdown)
        return
    results = run(args.calls, args.reps)
    markdown = render(results, args.calls, args.reps)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "probe.md").write_text(markdown + "\n", encoding="utf-8")
    (args.out / "probe.json").write_text(
        json.dumps({"calls": args.calls, "reps": args.reps, "results": results}, indent=2) + "\n", encoding="utf-8"
    )
    print(markdown)


if __name__ == "__main__":
    main()
