"""Client CPU of one S3 GET and one PUT on the client our backend makes, and where botocore spends it.

Makes the client exactly as ``from_url`` does (``client_factory`` of an ``s3://`` URL against
SeaweedFS, or ``$AGENT_STORES_S3_URL``), then on one thread, one request after another:
``--count`` GETs of one ``--size``-byte object, ``--count`` plain PUTs and ``--count``
conditional PUTs (``If-None-Match: *`` of fresh keys, with the write token, as a history save
sends). Prints one JSON line per operation: this process's CPU microseconds per request
(``time.process_time``: the client only, the server is another process) and wall microseconds.
``--options`` adds URL options (``&name=value...``) to the client's URL, so two settings can be
compared from one checkout. ``--profile DIR`` also writes a cProfile of each operation
(``DIR/<op>.pstats``) and prints its costliest botocore steps, grouped::

    uv run --group bench benchmarks/s3_client_cpu_probe.py --count 2000 --profile /tmp/prof
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _subjects_s3 import _bucket, _client, _session, _url, s3_server  # pyright: ignore[reportPrivateUsage]

#: Groups of botocore/boto3 functions, by the (file fragment, function) that roots each step. A
#: root matching several functions (``to_string`` of the whole User-Agent and of each of its parts)
#: counts its costliest, which holds the others when they nest.
_STEPS: dict[str, list[tuple[str, str]]] = {
    "endpoint ruleset resolution": [("regions.py", "construct_endpoint"), ("regions.py", "resolve_auth_scheme")],
    "parameter validation": [("validate.py", "validate")],
    "request serialization": [("serialize.py", "serialize_to_request")],
    "SigV4 signing": [("signers.py", "sign")],
    "checksum compute (request)": [("httpchecksum.py", "resolve_request_checksum_algorithm")],
    "checksum apply (request)": [("httpchecksum.py", "apply_request_checksum")],
    "checksum validation (response)": [("httpchecksum.py", "handle_checksum_body")],
    "Content-MD5 (request)": [("handlers.py", "conditionally_calculate_md5"), ("handlers.py", "calculate_md5")],
    "HTTP send (urllib3, socket)": [("endpoint.py", "_send")],
    "User-Agent string": [("useragent.py", "to_string")],
    "response parsing": [("parsers.py", "parse")],
    "of which Last-Modified (dateutil)": [("utils.py", "parse_timestamp")],
    "retry handler": [("retryhandler.py", "__call__"), ("retries/standard.py", "needs_retry")],
    "body read": [("response.py", "read")],
}


def _per_call(run: Callable[[], None], count: int) -> dict[str, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"client_cpu_us": round(1e6 * cpu / count, 1), "wall_us": round(1e6 * wall / count, 1)}


def _steps(stats: pstats.Stats, count: int) -> dict[str, float]:
    found: dict[str, float] = {}
    table: dict[Any, Any] = stats.stats  # type: ignore[attr-defined]
    for step, roots in _STEPS.items():
        total = 0.0
        for fragment, name in roots:
            matched = [
                ct
                for (path, _line, function), (_cc, _nc, _tt, ct, _callers) in table.items()
                if fragment in path and function == name
            ]
            total += max(matched, default=0.0)
        if total:
            found[step] = round(1e6 * total / count, 1)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description="Client CPU per S3 GET and PUT, and where botocore spends it.")
    parser.add_argument("--count", type=int, default=2000, help="requests per operation (default 2,000)")
    parser.add_argument("--size", type=int, default=5400, help="bytes per object (default 5,400)")
    parser.add_argument("--options", default="", help="URL options added to the client's URL (&name=value...)")
    parser.add_argument("--profile", type=Path, default=None, help="write cProfile stats of each operation here")
    args = parser.parse_args()

    from agent_stores.s3._connect import client_factory, parse_s3_url  # pyright: ignore[reportPrivateUsage]
    from agent_stores.s3._driver import WRITE_TOKEN  # pyright: ignore[reportPrivateUsage]

    server, _ = s3_server()
    setup = _client()
    bucket = _bucket(setup)
    setup.close()
    client: Any = client_factory(parse_s3_url(_url(bucket) + args.options), _session())()
    body = os.urandom(args.size // 2).hex().encode()[: args.size]
    client.put_object(Bucket=bucket, Key="probe/object", Body=body)
    fresh = [f"probe/new/{uuid.uuid4()}" for _ in range(args.count + 10)]
    for key in fresh[:10]:  # warm-up of the conditional path
        client.put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*", Metadata={WRITE_TOKEN: "x"})
    for _ in range(10):
        client.get_object(Bucket=bucket, Key="probe/object")["Body"].read()

    def gets() -> None:
        for _ in range(args.count):
            with client.get_object(Bucket=bucket, Key="probe/object")["Body"] as answer:
                answer.read()

    def puts() -> None:
        for _ in range(args.count):
            client.put_object(Bucket=bucket, Key="probe/plain", Body=body)

    def creates() -> None:
        token = uuid.uuid4().hex
        for key in fresh[10:]:
            client.put_object(Bucket=bucket, Key=key, Body=body, IfNoneMatch="*", Metadata={WRITE_TOKEN: token})

    print(json.dumps({"server": f"{server.description} via {server.via}", "options": args.options}))
    for name, run in (("GET", gets), ("PUT", puts), ("PUT If-None-Match", creates)):
        if args.profile is None:
            print(json.dumps({"op": name, "count": args.count, **_per_call(run, args.count)}))
            continue
        args.profile.mkdir(parents=True, exist_ok=True)
        profiler = cProfile.Profile(time.process_time)  # CPU, not waiting on the server
        measured = _per_call(lambda run=run, profiler=profiler: profiler.runcall(run), args.count)
        stats = pstats.Stats(profiler)
        stats.dump_stats(args.profile / f"{name.replace(' ', '-')}.pstats")
        steps = _steps(stats, args.count)
        print(json.dumps({"op": name, "count": args.count, "profiled": measured, "steps_us": steps}))
    client.close()


if __name__ == "__main__":
    main()
