"""Client CPU and wall time per checkpoint save of a new id, on SQLite, Redis, PostgreSQL and the MongoDB stand-in.

``python save_cpu_probe.py serve FILE``: start a local Redis, PostgreSQL and the nx-27017
stand-in, write their URLs to ``FILE`` and keep them up until interrupted.

``python save_cpu_probe.py probe FILE``: with the interpreter of the checkout to measure, open
checkpoint storage on each server (SQLite: a fresh file) and time 300 saves of new ids (~6 kB,
one lineage) after 50 warm-up saves; print one JSON line per backend: seconds of process CPU
(every thread: aiosqlite's worker included) and of wall time per save. Servers run in other
processes, so their CPU is not counted: what is counted is the client's.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

SAVES = 300
WARM_UP = 50


def serve(path: Path) -> None:
    from agent_stores.testing.servers.mongodb import nx27017_server
    from agent_stores.testing.servers.postgresql import local_postgresql
    from agent_stores.testing.servers.redis import local_redis

    with local_redis() as redis, local_postgresql() as postgresql, nx27017_server() as mongodb:
        path.write_text(json.dumps({"redis": redis.url, "postgresql": postgresql.url, "mongodb": mongodb.url}))
        with contextlib.suppress(KeyboardInterrupt):
            while True:
                time.sleep(1)


def _checkpoint(workflow: str, index: int, previous: str | None) -> Any:
    from agent_framework import WorkflowCheckpoint

    return WorkflowCheckpoint(
        workflow_name=workflow,
        graph_signature_hash="probe",
        checkpoint_id=str(uuid.uuid4()),
        previous_checkpoint_id=previous,
        timestamp=(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=index)).isoformat(),
        state={"step": index, "notes": "x" * 6000},
        iteration_count=index,
    )


async def _probe(name: str, url: str, **options: Any) -> dict[str, Any]:
    from agent_stores.core import open_stores

    stores = open_stores(url, **options)
    try:
        storage = stores.checkpoint_storage(namespace=f"probe-{uuid.uuid4().hex[:8]}")
        previous: str | None = None
        checkpoints = []
        for index in range(WARM_UP + SAVES):
            checkpoints.append(_checkpoint("wf", index, previous))
            previous = checkpoints[-1].checkpoint_id
        for checkpoint in checkpoints[:WARM_UP]:
            await storage.save(checkpoint)
        cpu, wall = time.process_time(), time.perf_counter()
        for checkpoint in checkpoints[WARM_UP:]:
            await storage.save(checkpoint)
        cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
        return {"backend": name, "cpu_ms_per_save": cpu / SAVES * 1000, "wall_ms_per_save": wall / SAVES * 1000}
    finally:
        await stores.aclose()


async def probe(urls: dict[str, str]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        runs = [
            ("SQLite", f"sqlite:///{Path(directory) / 'probe.db'}", {}),
            ("Redis", urls["redis"], {"key_prefix": f"p{uuid.uuid4().hex[:8]}:"}),
            ("PostgreSQL", urls["postgresql"], {}),
            ("MongoDB stand-in", urls["mongodb"], {}),
        ]
        for name, url, options in runs:
            print(json.dumps(await _probe(name, url, **options)), flush=True)


if __name__ == "__main__":
    mode, file = sys.argv[1], Path(sys.argv[2])
    if mode == "serve":
        serve(file)
    else:
        asyncio.run(probe(json.loads(file.read_text())))
