"""``list_checkpoint_ids`` on S3 (SeaweedFS) with and without the lean listings, side by side in one run.

Fills one workflow's index with ``--entries`` index entries (the keys a listing reads; no
records: the index alone decides), then, in rotated order per repetition, times:

* ``lean``: the storage over a driver whose client skims listings (what ``open_stores`` makes);
* ``botocore``: the same over a plain client (a client the user passes in), every listed object
  parsed by botocore into a dict with a ``datetime``;
* ``raw boto3``: ``list_objects_v2`` pages of 1,000 with a plain client and nothing else (keys only).

With ``--gets``, every entry is then read once with raw boto3 (32 threads) and through our
driver's ``get_many`` (256 at a time, as ``list_checkpoints`` asks): one GET per checkpoint is
what bounds ``list_checkpoints`` on S3.

Nothing asserts a speed. Results: ``benchmarks/results/checkpoint-listing/s3-lean-<entries>.{json,md}``.

    uv run --group bench benchmarks/s3_listing_bench.py --entries 10000 --reps 5
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_framework import WorkflowCheckpoint

RESULTS = Path(__file__).resolve().parent / "results" / "checkpoint-listing"
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def _client(*, lean: bool) -> Any:
    from _subjects_s3 import _client as plain_client  # pyright: ignore[reportPrivateUsage]
    from agent_stores.s3._listing import skim_listings

    client = plain_client()
    if lean:
        skim_listings(client)
    return client


def _fill(bucket: str, keys: list[str]) -> None:
    client = _client(lean=False)
    with ThreadPoolExecutor(32) as pool:
        list(pool.map(lambda key: client.put_object(Bucket=bucket, Key=key, Body=b"{}"), keys))


def _raw_list(client: Any, bucket: str, prefix: str) -> int:
    request: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "MaxKeys": 1000}
    count = 0
    while True:
        answer = client.list_objects_v2(**request)
        count += len([o["Key"] for o in answer.get("Contents", ())])
        if not answer.get("IsTruncated"):
            return count
        request["ContinuationToken"] = answer["NextContinuationToken"]


async def run(entries: int, reps: int, with_gets: bool = False) -> dict[str, Any]:
    from _subjects_s3 import _bucket, _declared, s3_server  # pyright: ignore[reportPrivateUsage]
    from agent_stores.core.checkpoints import ObjectCheckpointStorage
    from agent_stores.s3 import S3ObjectDriver

    server, _ = s3_server()
    ordered = not _declared()  # SeaweedFS lists in path order (see _subjects_s3)
    bucket = _bucket(_client(lean=False))
    options = {"ordered_listing": ordered, "path_keys": not ordered}
    storages = {
        name: ObjectCheckpointStorage(
            S3ObjectDriver(_client(lean=name == "lean"), bucket, owns_client=True, **options), owns_driver=True
        )
        for name in ("lean", "botocore")
    }
    any_storage = storages["lean"]
    keys = [
        any_storage._index_key(  # pyright: ignore[reportPrivateUsage]
            WorkflowCheckpoint(
                workflow_name="wf",
                graph_signature_hash="h",
                checkpoint_id=str(uuid.uuid4()),
                timestamp=(_EPOCH + timedelta(milliseconds=i)).isoformat(),
            )
        )
        for i in range(entries)
    ]
    prefix = any_storage._index_prefix("wf")  # pyright: ignore[reportPrivateUsage]
    started = time.perf_counter()
    await asyncio.to_thread(_fill, bucket, keys)
    filled = time.perf_counter() - started
    raw_client = _client(lean=False)

    async def lean() -> int:
        return len(await storages["lean"].list_checkpoint_ids(workflow_name="wf"))

    async def parsed() -> int:
        return len(await storages["botocore"].list_checkpoint_ids(workflow_name="wf"))

    async def raw() -> int:
        return await asyncio.to_thread(_raw_list, raw_client, bucket, prefix)

    subjects: dict[str, Callable[[], Any]] = {"lean": lean, "botocore": parsed, "raw boto3": raw}
    times: dict[str, list[float]] = {name: [] for name in subjects}
    for name, subject in subjects.items():  # warm-up: clients, connections, the bucket check
        assert await subject() == entries, name
    names = list(subjects)
    for rep in range(reps):
        for name in names[rep % len(names) :] + names[: rep % len(names)]:
            began = time.perf_counter()
            count = await subjects[name]()
            times[name].append((time.perf_counter() - began) * 1000)
            assert count == entries, (name, count)
    gets: dict[str, float] = {}
    if with_gets:  # the ceiling of list_checkpoints: one GET per checkpoint, whoever sends them
        with ThreadPoolExecutor(32) as pool:
            began = time.perf_counter()
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: list(pool.map(lambda k: raw_client.get_object(Bucket=bucket, Key=k)["Body"].read(), keys))
            )
            gets["raw boto3, 32 threads"] = (time.perf_counter() - began) * 1000
        driver: Any = storages["lean"].driver
        began = time.perf_counter()
        for start in range(0, len(keys), 256):  # as list_checkpoints asks for them
            await driver.get_many(keys[start : start + 256])
        gets["ours: get_many, 256 at a time"] = (time.perf_counter() - began) * 1000
    for storage in storages.values():
        await storage.aclose()
    rows = [
        {
            "subject": name,
            "median_ms": round(statistics.median(values), 1),
            "min_ms": round(min(values), 1),
            "all_ms": [round(v, 1) for v in values],
            "x_botocore": round(statistics.median(b / v for b, v in zip(times["botocore"], values, strict=True)), 2),
        }
        for name, values in times.items()
    ]
    return {
        "entries": entries,
        "reps": reps,
        "fill_seconds": round(filled, 1),
        "server": f"{server.description} via {server.via}",
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform()},
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "rows": rows,
        "gets_ms": {name: round(value, 1) for name, value in gets.items()},
    }


def markdown(summary: dict[str, Any]) -> str:
    lines = [
        "# list_checkpoint_ids on S3: lean listings against botocore's parse",
        "",
        f"- date: {summary['date']}; {summary['machine']['cpus']} CPUs, python {summary['machine']['python']}; "
        f"load average at the end {' / '.join(str(x) for x in summary['load_average'])} "
        "(a shared machine: read the ratios)",
        f"- server: {summary['server']}",
        f"- {summary['entries']:,} index entries of one workflow, {summary['reps']} repetitions in rotated order; "
        "`x botocore`: median of per-repetition ratios, the botocore row's time over the row's",
        "",
        "| subject | median ms | min ms | x botocore |",
        "|---|---:|---:|---:|",
    ]
    lines += [
        f"| {r['subject']} | {r['median_ms']:,} | {r['min_ms']:,} | {r['x_botocore']:.2f}x |" for r in summary["rows"]
    ]
    if summary.get("gets_ms"):
        lines += ["", f"GET of each of the {summary['entries']:,} entries (one pass each):", ""]
        lines += [f"- {name}: {value:,} ms" for name, value in summary["gets_ms"].items()]
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--entries", type=int, default=10_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--gets", action="store_true", help="also GET every entry once (list_checkpoints' ceiling)")
    parser.add_argument("--out", type=Path, default=None, help="results path without suffix")
    args = parser.parse_args(argv)
    summary = asyncio.run(run(args.entries, args.reps, args.gets))
    out: Path = args.out or RESULTS / f"s3-lean-{args.entries}"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(summary, indent=2) + "\n")
    out.with_suffix(".md").write_text(markdown(summary))
    print(markdown(summary))
    return summary


if __name__ == "__main__":
    main()
