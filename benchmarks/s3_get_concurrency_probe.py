"""What concurrency buys for one GET per object on S3: boto3 threads, and our driver's ``get_many``.

Puts ``--count`` objects of ``--size`` bytes (the bench's ~6 kB checkpoints by default) in a
bucket of their own, then reads them all once per setting: raw boto3 ``get_object`` on N threads
(each thread its share, one after another, as ``get_many`` does) and our ``S3ObjectDriver.get_many``
with ``max_concurrency`` N, alternating, for each N of ``--threads``. Prints one JSON line per run:
wall milliseconds, GETs per second, this process's CPU milliseconds per GET (botocore's request
building, signing and parsing, the GIL's share included) and the server's (read from ``/proc`` for
a server this process started; ``null`` for a server given by URL). On a machine with few cores
the client's CPU per GET, not the number in flight, bounds the rate. ``--client ours`` reads
through the client the stores make for an ``s3://`` URL (``client_config``, lean answers) instead
of a plain boto3 client, so checkouts can be compared on the client they ship::

    uv run --group bench benchmarks/s3_get_concurrency_probe.py --count 2000 --threads 1,4,16,32,64
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Any

from _subjects_s3 import _bucket, _client, _session, _url, s3_server  # pyright: ignore[reportPrivateUsage]


def _children_cpu() -> float | None:
    """CPU seconds (user + system) of this process's child processes still running (the server)."""
    total = 0.0
    ticks = os.sysconf("SC_CLK_TCK")
    found = False
    for task in Path("/proc").iterdir():
        if not task.name.isdigit():
            continue
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == os.getpid():  # ppid
            total += (int(fields[11]) + int(fields[12])) / ticks
            found = True
    return total if found else None


def _raw(client: Any, bucket: str, keys: list[str], threads: int) -> None:
    def share(index: int) -> int:
        size = 0
        for key in keys[index::threads]:
            size += len(client.get_object(Bucket=bucket, Key=key)["Body"].read())
        return size

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(share, range(threads)))


async def _ours(client: Any, bucket: str, keys: list[str], threads: int) -> None:
    from agent_stores.s3 import S3ObjectDriver

    driver = S3ObjectDriver(client, bucket, max_concurrency=threads, ordered_listing=False, path_keys=True)
    try:
        for start in range(0, len(keys), 256):  # as a listing asks: 256 records at a time
            await driver.get_many(keys[start : start + 256])
    finally:
        await driver.aclose()


def _measure(name: str, threads: int, count: int, run: Any) -> dict[str, Any]:
    server_before = _children_cpu()
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    server_after = _children_cpu()
    server = None if server_before is None or server_after is None else server_after - server_before
    return {
        "subject": name,
        "threads": threads,
        "gets": count,
        "wall_ms": round(1000 * wall),
        "gets_per_s": round(count / wall),
        "client_cpu_us_per_get": round(1e6 * cpu / count),
        "server_cpu_us_per_get": None if server is None else round(1e6 * server / count),
        "load": round(os.getloadavg()[0], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="GET concurrency on S3: boto3 threads and our get_many.")
    parser.add_argument("--count", type=int, default=2000, help="objects (default 2,000)")
    parser.add_argument("--size", type=int, default=5400, help="bytes per object (default 5,400, a ~6 kB checkpoint)")
    parser.add_argument("--threads", default="1,4,16,32,64", help="comma-separated concurrency settings")
    parser.add_argument("--client", choices=("plain", "ours"), default="plain", help="plain boto3, or the stores' own")
    args = parser.parse_args()
    server, _ = s3_server()
    client = _client()  # max_pool_connections=32: more threads than that would reopen connections
    bucket = _bucket(client)
    body = os.urandom(args.size // 2).hex().encode()
    keys = [f"ck/records/{uuid.uuid4()}.json" for _ in range(args.count)]
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(lambda key: client.put_object(Bucket=bucket, Key=key, Body=body), keys))
    print(
        json.dumps(
            {"server": f"{server.description} via {server.via}", "objects": args.count, "size": args.size}
            | {"client": args.client}
        )
    )
    for threads in (int(t) for t in args.threads.split(",")):
        if args.client == "ours":
            reader = _ours_client(bucket, threads)
        else:
            reader = client if threads <= 32 else _client_with_pool(threads)
        print(json.dumps(_measure("raw boto3", threads, args.count, partial(_raw, reader, bucket, keys, threads))))
        ours = partial(asyncio.run, _ours(reader, bucket, keys, threads))
        print(json.dumps(_measure("ours get_many", threads, args.count, ours)))


def _ours_client(bucket: str, size: int) -> Any:
    """The client ``from_url`` makes for this bucket, with a pool of ``size`` connections."""
    from agent_stores.s3._connect import client_factory, parse_s3_url  # pyright: ignore[reportPrivateUsage]

    return client_factory(parse_s3_url(f"{_url(bucket)}&max_concurrency={size}"), _session())()


def _client_with_pool(size: int) -> Any:
    import boto3
    from botocore.config import Config

    _, endpoint = s3_server()
    session = boto3.Session(**endpoint.client_kwargs())
    return session.client(
        "s3",
        endpoint_url=endpoint.endpoint_url,
        config=Config(max_pool_connections=size, s3={"addressing_style": "path"}),
    )


if __name__ == "__main__":
    main()
