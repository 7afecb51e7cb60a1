"""In one process, saves of new ids through ``put_in_order`` (one round trip) against the same saves put one by one.

``python one_trip_vs_two_probe.py URLS`` (``URLS``: the file ``save_cpu_probe.py serve`` writes),
run with the branch's interpreter. Two checkpoint storages share one driver per backend: "one
trip" uses the driver as it is; "two trips" sees it without ``put_in_order``, so the core puts
the record (if absent) then the entry, one after the other: what main does for a new id. They
alternate in 20 blocks of 50 saves (the order flipped every block), so both meet the same load;
the medians of the blocks' milliseconds per save are printed, wall and process CPU.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from save_cpu_probe import _checkpoint  # pyright: ignore[reportPrivateUsage]

from agent_stores.core import open_stores
from agent_stores.core.checkpoints import ObjectCheckpointStorage

BLOCKS, SAVES = 20, 50


class WithoutPutInOrder:
    """The driver underneath, without its ``put_in_order``: the core falls back to one put after the other."""

    def __init__(self, driver: Any) -> None:
        self._driver = driver

    def __getattr__(self, name: str) -> Any:
        if name == "put_in_order":
            raise AttributeError(name)
        return getattr(self._driver, name)


async def compare(name: str, url: str, **options: Any) -> dict[str, Any]:
    stores = open_stores(url, **options)
    driver = stores.object_driver()
    subjects = {
        "one trip": ObjectCheckpointStorage(driver, namespace=f"one-{uuid.uuid4().hex[:8]}"),
        "two trips": ObjectCheckpointStorage(WithoutPutInOrder(driver), namespace=f"two-{uuid.uuid4().hex[:8]}"),
    }
    wall: dict[str, list[float]] = {k: [] for k in subjects}
    cpu: dict[str, list[float]] = {k: [] for k in subjects}
    try:
        for storage in subjects.values():  # warm-up: connections, tables, scripts
            for index in range(10):
                await storage.save(_checkpoint("warm", index, None))
        for block in range(BLOCKS):
            order = list(subjects) if block % 2 else list(reversed(subjects))
            for label in order:
                checkpoints = [_checkpoint("wf", block * SAVES + i, None) for i in range(SAVES)]
                c, w = time.process_time(), time.perf_counter()
                for checkpoint in checkpoints:
                    await subjects[label].save(checkpoint)
                wall[label].append((time.perf_counter() - w) / SAVES * 1000)
                cpu[label].append((time.process_time() - c) / SAVES * 1000)
    finally:
        await stores.aclose()
    row: dict[str, Any] = {"backend": name}
    for label in subjects:
        row[f"{label} wall ms"] = round(statistics.median(wall[label]), 3)
        row[f"{label} cpu ms"] = round(statistics.median(cpu[label]), 3)
    row["wall two / one"] = round(row["two trips wall ms"] / row["one trip wall ms"], 2)
    return row


async def main(urls: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        runs = [
            ("SQLite", f"sqlite:///{Path(directory) / 'probe.db'}", {}),
            ("Redis", urls["redis"], {"key_prefix": f"p{uuid.uuid4().hex[:8]}:"}),
            ("PostgreSQL", urls["postgresql"], {}),
            ("MongoDB stand-in", urls["mongodb"], {}),
        ]
        for name, url, options in runs:
            print(json.dumps(await compare(name, url, **options)), flush=True)


if __name__ == "__main__":
    asyncio.run(main(json.loads(Path(sys.argv[1]).read_text())))
