"""How close a history append on S3 and MongoDB is to the floor's bare write, and what a versioned write costs.

Run: ``uv run --group bench benchmarks/append_ceiling_probe.py`` (a few minutes; ``--calls``,
``--reps`` and ``--only`` to change it). Starts SeaweedFS (``weed mini``) and the nx-27017
MongoDB stand-in on free loopback ports, as the history benchmark does (nx-27017 is NOT MongoDB:
a SQLite-backed reimplementation of its wire protocol), and measures these appends of one agent
turn (two messages, the history benchmark's turns), one call at a time, the rows taking turns
every ``--block`` appends so that a change in the shared machine's load falls on all of them
alike, in repetitions with the rows' order rotated each time:

S3 (boto3 calls in a thread pool, as the history benchmark's floor makes them):

- the floor's bare write: ``put_object`` of the turn's JSON Lines at a new key;
- the least versioned write: the same ``put_object`` with ``IfNoneMatch="*"`` (a conditional
  create, which a second writer of the same slot loses), and that plus the write-token metadata
  that lets ours recognise its own write when botocore retries a PUT whose answer was lost;
- ours' S3 driver alone: ``put(..., if_absent=True)`` of the segment object ours writes (the
  conditional PUT with its write token, without the object log's bookkeeping);
- ours: ``ObjectLogDriver.append`` of the two records (one segment object, claimed with
  ``IfNoneMatch="*"``) through ``open_stores``'s driver;
- the history benchmark's pair: the floor encoding the messages then ``put_object``, and ours
  ``S3HistoryProvider.save_messages``.

MongoDB (pymongo's ``AsyncMongoClient``):

- the floor's bare write: ``insert_many`` of two documents (session id, a sequence number kept
  in this process, the payload) under a unique (session, seq) index;
- the least versioned write: ``insert_one`` of one document holding both records, under a
  unique (log, seq) index (the writer knows the end it appended, so no read);
- the least versioned write that also sees a delete or expiry of the log: the batch and the
  head's conditional refresh in one ``bulk_write`` (what ours sends), built by hand;
- that on a collection with ours' two expiry indexes too (a TTL index on the date ``e``, an
  index on the expiry ``t``): the same command on the same indexes as ours;
- ours: ``MongoDBLogDriver.append`` through ``open_stores``'s driver;
- the history benchmark's pair: the floor encoding then ``insert_many``, and ours
  ``MongoDBHistoryProvider.save_messages``.

Per row: wall and client CPU (``time.process_time``: this process, every thread; and of it the
event loop's thread, ``time.thread_time``) per append,
the server process's CPU per append (``/proc``: the process listening on the server's port),
requests (botocore ``before-send`` events; pymongo command listeners) and bytes sent per append
(S3: body and headers; MongoDB: the BSON of the commands). Results go to
``benchmarks/results/append-ceiling/probe.md`` and ``probe.json`` (see ``--out``). Medians over
repetitions; nothing here asserts a speed. Timings on a shared machine are noisy.
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
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import msgspec

from _payloads import Turn, make_turns

DEFAULT_OUT = Path(__file__).parent / "results" / "append-ceiling"
_encode = msgspec.json.Encoder().encode


@dataclass
class Counter:
    """Requests and bytes sent, counted by client hooks while ``active``."""

    requests: int = 0
    sent: int = 0
    active: bool = True


@dataclass
class Row:
    """One way of appending a turn: ``step(i)`` appends the i-th turn of the row's session."""

    name: str
    step: Callable[[int], Awaitable[None]]
    close: Callable[[], Awaitable[None]] = field(default=lambda: asyncio.sleep(0))


def _payloads(turn: Turn) -> list[bytes]:
    return [_encode(m.to_dict()) for m in turn.messages]


def _records(turn: Turn) -> list[Any]:
    from agent_stores.core import LogRecord

    return [LogRecord(hashlib.sha256(p).hexdigest()[:32], p) for p in _payloads(turn)]


# -- S3 ---------------------------------------------------------------------------------------


def _s3_session(counter: Counter) -> Any:
    import boto3

    from _subjects_s3 import s3_server

    _, endpoint = s3_server()
    session = boto3.Session(**endpoint.client_kwargs())

    def sent(request: Any, **_: Any) -> None:
        if counter.active:
            counter.requests += 1
            size = int(request.headers.get("Content-Length") or 0)  # the body, however botocore holds it
            counter.sent += size + sum(len(k) + len(str(v)) + 4 for k, v in request.headers.items())

    session.events.register("before-send.s3", sent)  # clients made from the session afterwards fire it
    return session


async def _s3_rows(counter: Counter, turns: list[Turn], rep: int) -> list[Row]:
    from botocore.config import Config

    from _subjects_s3 import _url, s3_server
    from agent_stores.core import open_stores
    from agent_stores.core.objectlog._format import Segment, encode, new_token
    from agent_stores.s3._driver import WRITE_TOKEN

    _, endpoint = s3_server()
    session = _s3_session(counter)
    pool = ThreadPoolExecutor(32)
    loop = asyncio.get_running_loop()
    client: Any = session.client(  # the floor's client (benchmarks/_subjects_s3.py)
        "s3",
        endpoint_url=endpoint.endpoint_url,
        config=Config(max_pool_connections=32, s3={"addressing_style": "path"}),
    )
    bucket = f"probe-{uuid.uuid4().hex[:12]}"
    client.create_bucket(Bucket=bucket)
    bodies = [b"\n".join(_payloads(t)) for t in turns]
    records = [_records(t) for t in turns]

    def put(prefix: str, **extra: Any) -> Callable[[int], Awaitable[None]]:
        async def step(i: int) -> None:
            key, body = f"{prefix}/{rep}/{i:012d}", bodies[i]
            await loop.run_in_executor(pool, lambda: client.put_object(Bucket=bucket, Key=key, Body=body, **extra))

        return step

    async def encode_put(i: int) -> None:
        body = b"\n".join(_encode(m.to_dict()) for m in turns[i].messages)
        key = f"pair/{rep}/{i:012d}"
        await loop.run_in_executor(pool, lambda: client.put_object(Bucket=bucket, Key=key, Body=body))

    stores = open_stores(_url(bucket, "ours"), session=session)
    driver: Any = stores.log_driver()
    provider: Any = stores.history_provider()
    version: list[Any] = [None]
    log = f"probe-{rep}"

    async def ours(i: int) -> None:
        version[0] = await driver.append(log, records[i], expected_version=version[0], session_id=log)

    async def driver_put(i: int) -> None:
        batch = records[i]
        digests, payloads = [r.digest for r in batch], [r.payload for r in batch]
        segment = Segment(i + 1, 1, 2 * i, log, None, digests, payloads, 1, new_token())
        await driver.objects.put(f"puts/{log}/seg{10**12 - i:012d}", encode(segment), if_absent=True)

    async def save(i: int) -> None:
        await provider.save_messages(f"probe-{rep}", turns[i].messages)

    async def close() -> None:
        await stores.aclose()
        client.close()
        pool.shutdown()

    token = {WRITE_TOKEN: uuid.uuid4().hex}
    return [
        Row("floor: put_object", put("floor")),
        Row('least versioned: put_object IfNoneMatch="*"', put("versioned", IfNoneMatch="*")),
        Row("least versioned + write-token metadata", put("token", IfNoneMatch="*", Metadata=token)),
        Row("ours' S3 driver alone: put(if_absent) of the segment", driver_put),
        Row("ours: ObjectLogDriver.append", ours),
        Row("history pair, floor: encode + put_object", encode_put),
        Row("history pair, ours: S3HistoryProvider.save_messages", save, close),
    ]


# -- MongoDB ----------------------------------------------------------------------------------


def _listener(counter: Counter) -> Any:
    import bson
    from pymongo import monitoring

    class Listener(monitoring.CommandListener):
        def started(self, event: monitoring.CommandStartedEvent) -> None:
            if counter.active:
                counter.requests += 1
                counter.sent += len(bson.encode(event.command))

        def succeeded(self, event: monitoring.CommandSucceededEvent) -> None:
            pass

        def failed(self, event: monitoring.CommandFailedEvent) -> None:
            pass

    return Listener()


async def _mongodb_rows(counter: Counter, turns: list[Turn], rep: int) -> list[Row]:
    from bson import ObjectId
    from pymongo import AsyncMongoClient, ReplaceOne

    from _subjects_mongodb import _database_url, mongodb_server
    from agent_stores.core import open_stores

    listener = _listener(counter)
    name = f"probe_{uuid.uuid4().hex[:12]}"
    client: Any = AsyncMongoClient(mongodb_server(), event_listeners=[listener])
    database = client[name]
    floor, pair, least, aware, indexed = (database[c] for c in ("floor", "pair", "least", "aware", "indexed"))
    await floor.create_index([("session_id", 1), ("seq", 1)], unique=True)
    await pair.create_index([("session_id", 1), ("seq", 1)], unique=True)
    await least.create_index([("k", 1), ("s", 1)], unique=True)
    for collection in (aware, indexed):
        await collection.create_index([("k", 1), ("x", 1), ("s", 1)], unique=True)
    # ours' expiry indexes (agent_stores.mongodb._database): the TTL monitor's date, the exact expiry
    await indexed.create_index([("e", 1)], expireAfterSeconds=0)
    await indexed.create_index([("t", 1)])
    payloads = [_payloads(t) for t in turns]
    records = [_records(t) for t in turns]
    log = f"probe-{rep}"
    epoch = uuid.uuid4().hex[:16]
    never = 2**62
    for collection in (aware, indexed):
        await collection.insert_one({"_id": log, "k": log, "x": epoch, "s": never, "sid": log, "t": never})

    async def bare(i: int) -> None:
        docs = [{"session_id": log, "seq": 2 * i + j, "payload": p} for j, p in enumerate(payloads[i])]
        await floor.insert_many(docs)

    async def encode_insert(i: int) -> None:
        docs = [
            {"session_id": log, "seq": 2 * i + j, "payload": _encode(m.to_dict())}
            for j, m in enumerate(turns[i].messages)
        ]
        await pair.insert_many(docs)

    async def versioned(i: int) -> None:
        batch = records[i]
        doc = {"k": log, "s": 2 * i, "n": 2, "d": [r.digest for r in batch], "p": [r.payload for r in batch]}
        await least.insert_one(doc)

    def delete_aware(collection: Any) -> Callable[[int], Awaitable[None]]:
        async def step(i: int) -> None:
            await _delete_aware(collection, i)

        return step

    async def _delete_aware(collection: Any, i: int) -> None:
        batch = records[i]
        doc = {
            "_id": ObjectId(),
            "k": log,
            "x": epoch,
            "s": 2 * i,
            "n": 2,
            "d": [r.digest for r in batch],
            "p": [r.payload for r in batch],
        }
        head = {"_id": log, "k": log, "x": epoch, "s": never, "sid": log, "t": never}
        now = round(time.time() * 1000)
        result = await collection.bulk_write(
            [
                ReplaceOne({"_id": doc["_id"]}, doc, upsert=True),
                ReplaceOne({"_id": log, "x": epoch, "t": {"$gt": now}}, head),
            ]
        )
        assert result.matched_count == 1

    stores = open_stores(_database_url(name), client_options={"event_listeners": [listener]})
    driver: Any = stores.log_driver()
    provider: Any = stores.history_provider()
    version: list[Any] = [None]

    async def ours(i: int) -> None:
        version[0] = await driver.append(log, records[i], expected_version=version[0], session_id=log)

    async def save(i: int) -> None:
        await provider.save_messages(log, turns[i].messages)

    async def close() -> None:
        await stores.aclose()
        await client.drop_database(name)
        await client.close()

    return [
        Row("floor: insert_many (2 documents)", bare),
        Row("least versioned: insert_one (1 document, unique index)", versioned),
        Row("least delete-aware: bulk_write(batch upsert, head refresh)", delete_aware(aware)),
        Row("the same + ours' two expiry indexes (e: TTL, t)", delete_aware(indexed)),
        Row("ours: MongoDBLogDriver.append", ours),
        Row("history pair, floor: encode + insert_many", encode_insert),
        Row("history pair, ours: MongoDBHistoryProvider.save_messages", save, close),
    ]


# -- the run ----------------------------------------------------------------------------------

BUILDERS: dict[str, Callable[[Counter, list[Turn], int], Awaitable[list[Row]]]] = {
    "s3": _s3_rows,
    "mongodb": _mongodb_rows,
}


def _server_pid(port: int) -> int | None:
    """The process listening on loopback ``port`` (from ``/proc``), or ``None`` when not found."""
    inodes: set[str] = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                parts = line.split()
                if parts[3] == "0A" and int(parts[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(f"socket:[{parts[9]}]")
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") in inodes for fd in os.listdir(f"/proc/{pid}/fd")):
                return int(pid)
    return None


def _cpu_of(pid: int | None) -> float:
    """Seconds of CPU (user and system, every thread) process ``pid`` used so far; 0 when unknown."""
    if pid is None:
        return 0.0
    with contextlib.suppress(OSError):
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return 0.0


async def _repetition(
    backend: str, calls: int, block: int, rep: int, server: int | None
) -> dict[str, dict[str, float]]:
    """One pass: every row ``calls`` appends (after 10 unmeasured ones), in blocks of ``block``.

    The rows take turns block by block (in an order rotated by ``rep``), so a change in the
    machine's load falls on every row alike.
    """
    counter = Counter()
    turns = make_turns(0, calls + 10)
    rows = await BUILDERS[backend](counter, turns, rep)
    totals = {
        row.name: {
            "wall_us": 0.0,
            "cpu_us": 0.0,
            "loop_cpu_us": 0.0,
            "server_cpu_us": 0.0,
            "requests": 0.0,
            "bytes_sent": 0.0,
        }
        for row in rows
    }
    try:
        order = rows[rep % len(rows) :] + rows[: rep % len(rows)]
        counter.active = False
        for row in order:
            for i in range(10):  # warm: connections, the log's first segment, the provider's caches
                await row.step(i)
        counter.active = True
        for start in range(10, calls + 10, block):
            for row in order:
                counter.requests = counter.sent = 0
                served = _cpu_of(server)
                cpu, loop, wall = time.process_time(), time.thread_time(), time.perf_counter()
                for i in range(start, min(start + block, calls + 10)):
                    await row.step(i)
                wall = time.perf_counter() - wall
                loop = time.thread_time() - loop
                cpu = time.process_time() - cpu
                total = totals[row.name]
                total["wall_us"] += wall * 1e6
                total["cpu_us"] += cpu * 1e6
                total["loop_cpu_us"] += loop * 1e6
                total["server_cpu_us"] += (_cpu_of(server) - served) * 1e6
                total["requests"] += counter.requests
                total["bytes_sent"] += counter.sent
    finally:
        for row in rows:
            await row.close()
    return {name: {k: v / calls for k, v in total.items()} for name, total in totals.items()}


@contextlib.contextmanager
def _servers(backends: list[str]) -> Iterator[dict[str, str]]:
    """Start the servers (once per process, stopped at exit) and say which ran."""
    described: dict[str, str] = {}
    if "s3" in backends:
        from _subjects_s3 import s3_server

        server, endpoint = s3_server()
        described["s3"] = server.description
        described["s3 port"] = str(urlsplit(endpoint.endpoint_url).port)
    if "mongodb" in backends:
        from _subjects_mongodb import SERVER, mongodb_server

        described["mongodb port"] = str(urlsplit(mongodb_server()).port)
        described["mongodb"] = SERVER["description"]
    yield described


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 2)


def run(backends: list[str], calls: int, block: int, reps: int) -> dict[str, Any]:
    """Measure every backend; return the medians and the paired ratios."""
    results: dict[str, Any] = {}
    with _servers(backends) as described:
        for backend in backends:
            server = _server_pid(int(described[f"{backend} port"]))
            runs = [asyncio.run(_repetition(backend, calls, block, rep, server)) for rep in range(reps)]
            names = list(runs[0])
            floor = names[0]
            rows = {
                name: {k: _median([r[name][k] for r in runs]) for k in runs[0][name]}
                | {
                    "wall_spread": [
                        round(min(r[name]["wall_us"] for r in runs), 1),
                        round(max(r[name]["wall_us"] for r in runs), 1),
                    ],
                    "rate_vs_floor": _median([r[floor]["wall_us"] / r[name]["wall_us"] for r in runs]),
                }
                for name in names
            }
            pair = [n for n in names if n.startswith("history pair")]
            results[backend] = {
                "server": described[backend],
                "server_cpu_measured": server is not None,
                "rows": rows,
                "history_pair_rate": _median([r[pair[0]]["wall_us"] / r[pair[1]]["wall_us"] for r in runs]),
            }
    return results


def render(results: dict[str, Any], calls: int, block: int, reps: int, load_before: str) -> str:
    """The results as Markdown."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    lines = [
        "# Appends on S3 and MongoDB next to the floor's bare write",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {os.cpu_count()} CPUs;"
        f" load average {load_before} before, {load} after (a shared machine: other work ran alongside)",
        f"- {calls} appends of one turn (2 messages) per row and repetition, one at a time, the rows taking turns"
        f" every {block} appends (in an order rotated each repetition), {reps} repetitions; medians (wall:"
        " min..max over repetitions)",
        "- client CPU: `time.process_time` of this process (every thread), of it the event loop's thread"
        " (`time.thread_time`: ours' bookkeeping and the hop to boto3's thread; boto3 itself runs in a worker"
        " thread, pymongo in the loop); server CPU: the listening server"
        " process's user + system time (`/proc`, clock ticks, so coarse per block, fine in the sum)",
        "- rate vs floor: the floor's wall time over the row's, paired per repetition (above 1: faster than the floor)",
        "- run: `uv run --group bench benchmarks/append_ceiling_probe.py`",
        "",
    ]
    for backend, data in results.items():
        lines += [
            f"## {backend}: {data['server']}",
            "",
            "| append of one turn | wall µs | rate vs floor | client CPU µs | of it, event loop | server CPU µs"
            " | requests | bytes sent |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for name, row in data["rows"].items():
            low, high = row["wall_spread"]
            lines.append(
                f"| {name} | {row['wall_us']:,.0f} ({low:,.0f}..{high:,.0f}) | {row['rate_vs_floor']:.2f}x"
                f" | {row['cpu_us']:,.0f} | {row['loop_cpu_us']:,.0f} | {row['server_cpu_us']:,.0f}"
                f" | {row['requests']:.2f} | {row['bytes_sent']:,.0f} |"
            )
        lines += ["", f"- history pair, ours ÷ floor (paired): {data['history_pair_rate']:.2f}x", ""]
    return "\n".join(lines)


def main() -> None:
    """Run the probe and write its results."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--calls", type=int, default=300, help="appends per row and repetition (default 300)")
    parser.add_argument("--block", type=int, default=20, help="appends per row before the next row's turn (default 20)")
    parser.add_argument("--reps", type=int, default=6, help="repetitions (default 6: each row first once)")
    parser.add_argument("--only", default="s3,mongodb", help="backends, comma-separated (default s3,mongodb)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results directory (default {DEFAULT_OUT})")
    args = parser.parse_args()
    load_before = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    backends = [b for b in args.only.split(",") if b]
    results = run(backends, args.calls, args.block, args.reps)
    markdown = render(results, args.calls, args.block, args.reps, load_before)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "probe.md").write_text(markdown + "\n", encoding="utf-8")
    (args.out / "probe.json").write_text(
        json.dumps({"calls": args.calls, "block": args.block, "reps": args.reps, "results": results}, indent=2) + "\n",
        encoding="utf-8",
    )
    print(markdown)


if __name__ == "__main__":
    main()
