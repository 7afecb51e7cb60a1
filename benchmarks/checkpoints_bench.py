"""Workflow checkpoint storage, side by side: save / load / ``get_latest`` on every backend.

Run: ``uv run --group bench benchmarks/checkpoints_bench.py`` (``--quick`` for a smoke run,
``--help`` for every option). Rows:

* ``framework FileCheckpointStorage`` (the reference every row is also compared with) and
  ``framework InMemoryCheckpointStorage``;
* per backend (SQLite file, Redis, MongoDB, S3, fsspec local directory, PostgreSQL): ``ours`` is
  ``open_stores(url).checkpoint_storage()``, and ``raw driver (floor)`` is the same backend's
  object driver used directly, with no checkpoint rules: the framework's encoding (encode, the
  restore check ``FileCheckpointStorage`` makes, ``json.dumps``), one record put and one
  newest-first index put per save, one get per load, one listing of one key plus one get per
  ``get_latest``; no replace-by-id, no retention, no tie ordering, no expiry.
* ``PostgreSQL: langgraph-checkpoint-postgres`` (peer): LangGraph's ``AsyncPostgresSaver`` on
  the same server (its own database, tables by its ``setup()``), holding the same checkpoints:
  the framework's encoding of each checkpoint as the one channel value of a LangGraph
  checkpoint whose id sorts by the checkpoint's timestamp (a LangGraph thread per workflow),
  so ``get_latest`` is its ``aget_tuple`` of the thread and a listing is its ``alist``. It
  connects as LangGraph documents (autocommit, ``dict_row``, server-side prepared statements,
  so not through a transaction-mode pooler); ours runs without prepared statements.

Workloads, per repetition (fresh stores, subjects in rotated order, so machine noise is shared):
``--saves`` checkpoints saved one after another as one workflow's lineage (saves/s), ``--loads``
loads of random ones among them (loads/s), ``--latest`` calls of ``get_latest`` on that
workflow (calls/s). Then, once per subject, a workflow of ``--big`` checkpoints (saved
``--concurrency`` at a time; the prefill time is recorded too; ``--tiny`` makes them tiny): the
latency of ``get_latest`` (median of 5), of ``list_checkpoint_ids`` and of
``list_checkpoints`` (each the median of ``_LISTINGS``, alternating). Ratios are medians of
per-repetition ratios.
Nothing here asserts a speed. Results: ``benchmarks/results/checkpoints.md`` and
``checkpoints.json`` (see ``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import platform
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from agent_framework import FileCheckpointStorage, InMemoryCheckpointStorage, WorkflowCheckpoint
from agent_framework._workflows._checkpoint_encoding import decode_checkpoint_value, encode_checkpoint_value

from _payloads import make_turns

DEFAULT_OUT = Path(__file__).resolve().parent / "results"
FILE_REFERENCE = "framework FileCheckpointStorage"
_PACKAGES = ("agent-framework-core", "agent-stores-core", "agent-stores-sqlite", "agent-stores-redis",
             "agent-stores-mongodb", "agent-stores-s3", "agent-stores-fsspec", "agent-stores-postgresql", "redis",
             "pymongo", "boto3", "fsspec", "psycopg", "langgraph-checkpoint-postgres")  # fmt: skip
_EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
_LISTINGS = 3  # timed listings of the big workflow per store (the median is reported)


# -- payloads --------------------------------------------------------------------------------


def make_checkpoint(workflow: str, index: int, previous: str | None) -> WorkflowCheckpoint:
    """A realistic checkpoint: a 12-message conversation, two executors' states, an outbox.

    About 6 kB of JSON; timestamps one millisecond apart, increasing with ``index``.
    """
    turns = make_turns(index, 6)
    conversation = [m.to_dict() for t in turns for m in t.messages]
    return WorkflowCheckpoint(
        workflow_name=workflow,
        graph_signature_hash="a3f1c2" * 10,
        checkpoint_id=str(uuid.uuid4()),
        previous_checkpoint_id=previous,
        timestamp=(_EPOCH + timedelta(milliseconds=index)).isoformat(),
        state={
            "conversation": conversation,
            "outbox": [{"data": {"text": f"draft {index}"}, "source_id": "planner", "target_id": "writer"}],
            "_executor_state": {
                "planner": {"step": index, "plan": ["research", "draft", "review"]},
                "writer": {"drafts": index % 5, "done": False},
            },
        },
        iteration_count=index,
        metadata={"superstep": index},
    )


def make_tiny_checkpoint(workflow: str, index: int, previous: str | None) -> WorkflowCheckpoint:
    """A tiny checkpoint (a few hundred bytes): listing cost without the record sizes."""
    return WorkflowCheckpoint(
        workflow_name=workflow,
        graph_signature_hash="a3f1c2",
        checkpoint_id=str(uuid.uuid4()),
        previous_checkpoint_id=previous,
        timestamp=(_EPOCH + timedelta(milliseconds=index)).isoformat(),
        state={"step": index},
        iteration_count=index,
    )


# -- subjects ----------------------------------------------------------------------------------


class RawDriverCheckpoints:
    """The floor: a backend's object driver used directly, with the framework's encoding and nothing else."""

    def __init__(self, driver: Any) -> None:
        from agent_stores.core.keys import key_segment

        self._driver = driver
        self._segment = key_segment
        self._root = f"floor-{uuid.uuid4().hex[:8]}/"

    def _record(self, checkpoint_id: str) -> str:
        return f"{self._root}r/{self._segment(checkpoint_id)}"

    def _index(self, workflow: str) -> str:
        return f"{self._root}w/{self._segment(workflow)}/"

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        from agent_stores.core.checkpoints import checkpoint_order_key

        encoded = encode_checkpoint_value(checkpoint.to_dict())
        decode_checkpoint_value(encoded, allowed_types=frozenset())  # the restore check FileCheckpointStorage makes
        data = json.dumps(encoded, ensure_ascii=False).encode()
        index = f"{self._index(checkpoint.workflow_name)}{checkpoint_order_key(checkpoint)}.{checkpoint.checkpoint_id}"
        record = self._record(checkpoint.checkpoint_id)
        await asyncio.gather(self._driver.put(record, data), self._driver.put(index, b"1"))
        return checkpoint.checkpoint_id

    async def _load_key(self, key: str) -> WorkflowCheckpoint:
        stored = await self._driver.get(key)
        if stored is None:
            raise KeyError(key)
        return WorkflowCheckpoint.from_dict(decode_checkpoint_value(json.loads(stored.data), allowed_types=frozenset()))

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        return await self._load_key(self._record(checkpoint_id))

    async def get_latest(self, *, workflow_name: str) -> WorkflowCheckpoint | None:
        page = await self._driver.list(self._index(workflow_name), delimiter=None, limit=1)
        if not page.keys:
            return None
        return await self._load_key(self._record(page.keys[0].rsplit("/", 1)[1].split(".", 1)[1]))

    async def list_checkpoint_ids(self, *, workflow_name: str) -> list[str]:
        prefix, after, ids = self._index(workflow_name), None, []
        while True:
            page = await self._driver.list(prefix, delimiter=None, after=after, limit=1000)
            ids.extend(k.rsplit("/", 1)[1].split(".", 1)[1] for k in page.keys)
            if len(page.keys) < 1000:
                return ids[::-1]
            after = page.keys[-1]

    async def list_checkpoints(self, *, workflow_name: str) -> list[WorkflowCheckpoint]:
        ids = await self.list_checkpoint_ids(workflow_name=workflow_name)
        gate = asyncio.Semaphore(32)

        async def one(checkpoint_id: str) -> WorkflowCheckpoint:
            async with gate:
                return await self.load(checkpoint_id)

        return list(await asyncio.gather(*(one(i) for i in ids)))


class Subject:
    """One checkpoint storage under test; ``open`` sets ``storage``."""

    name = ""
    backend = "framework"
    floor = FILE_REFERENCE
    requires: tuple[str, ...] = ()
    storage: Any

    async def open(self, directory: Path) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        """Release what ``open`` acquired."""


class FrameworkFile(Subject):
    name = FILE_REFERENCE

    async def open(self, directory: Path) -> None:
        self.storage = FileCheckpointStorage(directory / "framework-file")


class FrameworkInMemory(Subject):
    name = "framework InMemoryCheckpointStorage"

    async def open(self, directory: Path) -> None:
        self.storage = InMemoryCheckpointStorage()


class _Backend(Subject):
    """A backend's row through ``open_stores``: ours, or (``raw``) its object driver directly."""

    raw = False
    module = ""

    def _open_stores(self, directory: Path) -> Any:
        raise NotImplementedError

    async def open(self, directory: Path) -> None:
        self._stores = self._open_stores(directory)
        if self.raw:
            self.storage = RawDriverCheckpoints(self._stores.object_driver())
        else:
            self.storage = self._stores.checkpoint_storage()

    async def close(self) -> None:
        await self._stores.aclose()


def _pair(backend: str, module: str, opener: Callable[[Path], Any]) -> tuple[type[_Backend], type[_Backend]]:
    floor_name = f"{backend}: raw driver (floor)"

    def make(raw: bool) -> type[_Backend]:
        attrs = {
            "name": floor_name if raw else f"{backend}: ours",
            "backend": backend,
            "floor": floor_name,
            "raw": raw,
            "requires": (module,),
            "_open_stores": lambda self, directory: opener(directory),  # pyright: ignore[reportUnknownLambdaType]
        }
        return type(f"{backend.title()}{'Floor' if raw else 'Ours'}", (_Backend,), attrs)

    return make(True), make(False)


def _sqlite(directory: Path) -> Any:
    from agent_stores.core import open_stores

    return open_stores(f"sqlite:///{directory / f'ck-{uuid.uuid4().hex[:8]}.db'}")


def _redis_stores(directory: Path) -> Any:
    from _subjects_redis import server_url
    from agent_stores.core import open_stores

    return open_stores(server_url("redis"), key_prefix=f"ck-{uuid.uuid4().hex[:8]}:")


def _mongodb(directory: Path) -> Any:
    from _subjects_mongodb import _database_url  # pyright: ignore[reportPrivateUsage]
    from agent_stores.core import open_stores

    return open_stores(_database_url(f"ck_{uuid.uuid4().hex[:12]}"))


def _s3(directory: Path) -> Any:
    from _subjects_s3 import _bucket, _client, _session, _url  # pyright: ignore[reportPrivateUsage]
    from agent_stores.core import open_stores

    return open_stores(_url(_bucket(_client()), prefix="ck"), session=_session())


def _fsspec(directory: Path) -> Any:
    from agent_stores.core import open_stores

    return open_stores(f"file://{directory / f'fsspec-{uuid.uuid4().hex[:8]}'}")


class _PostgreSQLBackend(_Backend):
    """A PostgreSQL row: ours or the raw driver, on a database of its own (dropped at close)."""

    async def open(self, directory: Path) -> None:
        from _subjects_postgresql import create_database
        from _subjects_redis import server_url

        self._url = create_database(server_url("postgresql"), prefix="ck")
        await super().open(directory)
        # Tables made and the pool opened before the clock starts, as the LangGraph row's setup().
        await self.storage.get_latest(workflow_name="warm-up")

    def _open_stores(self, directory: Path) -> Any:
        from agent_stores.core import open_stores

        return open_stores(self._url)

    async def close(self) -> None:
        from _subjects_postgresql import drop_database
        from _subjects_redis import server_url

        await super().close()
        drop_database(server_url("postgresql"), self._url)


class _LangGraphCheckpoints:
    """The framework's checkpoints in LangGraph's ``AsyncPostgresSaver``: one LangGraph thread per workflow.

    Each checkpoint is stored as a LangGraph checkpoint whose one channel value is the
    framework's encoding of it, under an id that sorts by its timestamp (LangGraph returns a
    thread's newest checkpoint by id). The ids of this run are remembered in memory (a
    checkpoint id alone does not name its LangGraph thread).
    """

    def __init__(self, saver: Any) -> None:
        self._saver = saver
        self._where: dict[str, tuple[str, str]] = {}

    @staticmethod
    def _config(thread: str, lg_id: str | None = None) -> dict[str, Any]:
        configurable = {"thread_id": thread, "checkpoint_ns": ""}
        if lg_id is not None:
            configurable["checkpoint_id"] = lg_id
        return {"configurable": configurable}

    async def save(self, checkpoint: WorkflowCheckpoint) -> str:
        encoded = encode_checkpoint_value(checkpoint.to_dict())
        decode_checkpoint_value(encoded, allowed_types=frozenset())  # the restore check FileCheckpointStorage makes
        micros = round(datetime.fromisoformat(checkpoint.timestamp).timestamp() * 1_000_000)
        lg_id = f"{micros:020d}|{checkpoint.checkpoint_id}"  # later timestamps sort last, as LangGraph expects
        thread = checkpoint.workflow_name
        lg_checkpoint = {
            "v": 2, "id": lg_id, "ts": checkpoint.timestamp, "channel_values": {"workflow": encoded},
            "channel_versions": {"workflow": lg_id}, "versions_seen": {}, "pending_sends": [], "updated_channels": None,
        }  # fmt: skip
        await self._saver.aput(self._config(thread), lg_checkpoint, {}, {"workflow": lg_id})
        self._where[checkpoint.checkpoint_id] = (thread, lg_id)
        return checkpoint.checkpoint_id

    @staticmethod
    def _decode(found: Any) -> WorkflowCheckpoint:
        return WorkflowCheckpoint.from_dict(
            decode_checkpoint_value(found.checkpoint["channel_values"]["workflow"], allowed_types=frozenset())
        )

    async def load(self, checkpoint_id: str) -> WorkflowCheckpoint:
        thread, lg_id = self._where[checkpoint_id]
        found = await self._saver.aget_tuple(self._config(thread, lg_id))
        if found is None:
            raise KeyError(checkpoint_id)
        return self._decode(found)

    async def get_latest(self, *, workflow_name: str) -> WorkflowCheckpoint | None:
        found = await self._saver.aget_tuple(self._config(workflow_name))
        return None if found is None else self._decode(found)

    async def list_checkpoint_ids(self, *, workflow_name: str) -> list[str]:
        found = [f async for f in self._saver.alist(self._config(workflow_name))]
        return [f.checkpoint["id"].split("|", 1)[1] for f in reversed(found)]

    async def list_checkpoints(self, *, workflow_name: str) -> list[WorkflowCheckpoint]:
        found = [self._decode(f) async for f in self._saver.alist(self._config(workflow_name))]
        return found[::-1]


class LangGraphPostgres(Subject):
    name = "PostgreSQL: langgraph-checkpoint-postgres"
    backend = "PostgreSQL"
    floor = "PostgreSQL: raw driver (floor)"
    requires = ("langgraph.checkpoint.postgres.aio", "agent_stores.postgresql")

    async def open(self, directory: Path) -> None:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        from _subjects_postgresql import create_database
        from _subjects_redis import server_url

        self._url = create_database(server_url("postgresql"), prefix="lg")
        self._context = AsyncPostgresSaver.from_conn_string(self._url)
        saver = await self._context.__aenter__()
        await saver.setup()
        self.storage = _LangGraphCheckpoints(saver)

    async def close(self) -> None:
        from _subjects_postgresql import drop_database
        from _subjects_redis import server_url

        await self._context.__aexit__(None, None, None)
        drop_database(server_url("postgresql"), self._url)


def _pg_pair() -> tuple[type[_Backend], type[_Backend]]:
    floor, ours = _pair("PostgreSQL", "agent_stores.postgresql", lambda directory: None)
    return (
        type("PostgresqlFloor", (_PostgreSQLBackend, floor), {}),
        type("PostgresqlOurs", (_PostgreSQLBackend, ours), {}),
    )


SUBJECTS: tuple[type[Subject], ...] = (
    FrameworkFile,
    FrameworkInMemory,
    *_pair("SQLite", "agent_stores.sqlite", _sqlite),
    *_pair("Redis", "agent_stores.redis", _redis_stores),
    *_pair("MongoDB", "agent_stores.mongodb", _mongodb),
    *_pair("S3", "agent_stores.s3", _s3),
    *_pair("fsspec local dir", "agent_stores.fsspec", _fsspec),
    *_pg_pair(),
    LangGraphPostgres,
)


# -- measuring -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Config:
    reps: int
    saves: int
    loads: int
    latest: int
    big: int
    concurrency: int
    out: Path
    only: tuple[str, ...] = ()
    tiny: bool = False


@dataclass
class Row:
    name: str
    backend: str
    floor: str
    status: str = "ok"
    save: list[float] = field(default_factory=list)  # per second, one per repetition
    load: list[float] = field(default_factory=list)
    latest: list[float] = field(default_factory=list)
    big_prefill_s: float | None = None
    big_latest_ms: float | None = None
    big_list_ids_ms: float | None = None
    big_list_ms: float | None = None


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def _small(subject: Subject, config: Config, rep: int) -> tuple[float, float, float]:
    storage = subject.storage
    workflow = f"wf-small-{rep}"
    checkpoints: list[WorkflowCheckpoint] = []
    previous: str | None = None
    for index in range(config.saves):
        checkpoint = make_checkpoint(workflow, index, previous)
        checkpoints.append(checkpoint)
        previous = checkpoint.checkpoint_id
    start = time.perf_counter()
    for checkpoint in checkpoints:
        await storage.save(checkpoint)
    save_rate = len(checkpoints) / (time.perf_counter() - start)
    rng = random.Random(rep)
    ids = [rng.choice(checkpoints).checkpoint_id for _ in range(config.loads)]
    start = time.perf_counter()
    for checkpoint_id in ids:
        await storage.load(checkpoint_id)
    load_rate = len(ids) / (time.perf_counter() - start)
    latest: WorkflowCheckpoint | None = None
    start = time.perf_counter()
    for _ in range(config.latest):
        latest = await storage.get_latest(workflow_name=workflow)
    latest_rate = config.latest / (time.perf_counter() - start)
    if latest is None or latest.checkpoint_id != checkpoints[-1].checkpoint_id:
        raise AssertionError(f"{subject.name}: get_latest did not return the newest checkpoint")
    return save_rate, load_rate, latest_rate


async def _big(subject: Subject, config: Config) -> tuple[float, float, float, float]:
    storage = subject.storage
    workflow = "wf-big"
    checkpoints: list[WorkflowCheckpoint] = []
    previous: str | None = None
    make = make_tiny_checkpoint if config.tiny else make_checkpoint
    for index in range(config.big):
        checkpoint = make(workflow, index, previous)
        checkpoints.append(checkpoint)
        previous = checkpoint.checkpoint_id
    gate = asyncio.Semaphore(config.concurrency)

    async def save(checkpoint: WorkflowCheckpoint) -> None:
        async with gate:
            await storage.save(checkpoint)

    start = time.perf_counter()
    await asyncio.gather(*(save(c) for c in checkpoints))
    prefill = time.perf_counter() - start
    samples: list[float] = []
    for _ in range(5):
        start = time.perf_counter()
        latest = await storage.get_latest(workflow_name=workflow)
        samples.append(time.perf_counter() - start)
        if latest is None or latest.checkpoint_id != checkpoints[-1].checkpoint_id:
            raise AssertionError(f"{subject.name}: get_latest did not return the newest of {config.big}")
    ids_ms: list[float] = []
    all_ms: list[float] = []
    for _ in range(_LISTINGS):  # alternating, so a burst of load on a shared machine hits both alike
        start = time.perf_counter()
        ids = await storage.list_checkpoint_ids(workflow_name=workflow)
        ids_ms.append((time.perf_counter() - start) * 1000)
        if len(ids) != config.big:
            raise AssertionError(f"{subject.name}: list_checkpoint_ids returned {len(ids)} of {config.big}")
        start = time.perf_counter()
        listed = await storage.list_checkpoints(workflow_name=workflow)
        all_ms.append((time.perf_counter() - start) * 1000)
        if [cp.checkpoint_id for cp in listed] != ids:
            raise AssertionError(f"{subject.name}: list_checkpoints disagrees with list_checkpoint_ids")
    return prefill, statistics.median(samples) * 1000, statistics.median(ids_ms), statistics.median(all_ms)


def _missing(subject: Subject) -> str | None:
    import importlib.util

    for module in subject.requires:
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:  # a parent package is missing
            found = False
        if not found:
            return f"not installed ({module})"
    return None


async def run(config: Config) -> tuple[list[Row], dict[str, str]]:
    from _subjects_redis import _redis  # pyright: ignore[reportPrivateUsage]

    subjects = [s() for s in SUBJECTS if not config.only or any(o.lower() in s.name.lower() for o in config.only)]
    rows = {s.name: Row(s.name, s.backend, s.floor) for s in subjects}
    servers: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        try:
            _, description = stack.enter_context(_redis())
            servers["redis"] = description
        except RuntimeError as err:
            servers["redis"] = f"unavailable: {err}"
        if any(s.backend == "PostgreSQL" for s in subjects):
            from _subjects_postgresql import postgresql_server

            try:
                _, description = stack.enter_context(postgresql_server())
                servers["postgresql"] = description
            except RuntimeError as err:
                servers["postgresql"] = f"unavailable: {err}"
        for subject in subjects:
            reason = _missing(subject)
            if reason is None and subject.backend == "Redis" and servers["redis"].startswith("unavailable"):
                reason = f"no redis server ({servers['redis']})"
            if reason is None and subject.backend == "PostgreSQL" and servers["postgresql"].startswith("unavailable"):
                reason = f"no postgresql server ({servers['postgresql']})"
            if reason is not None:
                rows[subject.name].status = reason
        live = [s for s in subjects if rows[s.name].status == "ok"]
        with tempfile.TemporaryDirectory(prefix="agent-stores-ckbench-") as tmp:
            for rep in range(config.reps):
                order = live[rep % max(1, len(live)) :] + live[: rep % max(1, len(live))]
                for subject in order:
                    _log(f"rep {rep + 1}/{config.reps}: {subject.name}")
                    directory = Path(tmp) / f"rep{rep}"
                    directory.mkdir(exist_ok=True)
                    await subject.open(directory)
                    try:
                        save, load, latest = await _small(subject, config, rep)
                    finally:
                        await subject.close()
                    row = rows[subject.name]
                    row.save.append(save)
                    row.load.append(load)
                    row.latest.append(latest)
            for subject in live if config.big else ():  # --big 0: saves, loads and get_latest only
                _log(f"{config.big} checkpoints: {subject.name}")
                (Path(tmp) / "big").mkdir(exist_ok=True)
                await subject.open(Path(tmp) / "big")
                try:
                    row = rows[subject.name]
                    (row.big_prefill_s, row.big_latest_ms, row.big_list_ids_ms, row.big_list_ms) = await _big(
                        subject, config
                    )
                finally:
                    await subject.close()
        from _subjects_mongodb import SERVER

        if "description" in SERVER:
            servers["mongodb"] = SERVER["description"]
        with contextlib.suppress(Exception):
            from _subjects_s3 import _server  # pyright: ignore[reportPrivateUsage]

            if _server is not None:
                servers["s3"] = f"{_server[0].description} via {_server[0].via}"
    return list(rows.values()), servers


# -- reporting --------------------------------------------------------------------------------


def _paired(numerators: Sequence[float], denominators: Sequence[float]) -> float | None:
    pairs = [n / d for n, d in zip(numerators, denominators, strict=False) if d]
    return statistics.median(pairs) if pairs else None


def summarize(rows: Sequence[Row], servers: dict[str, str], config: Config) -> dict[str, Any]:
    by_name = {r.name: r for r in rows}
    stores: list[dict[str, Any]] = []
    for row in rows:
        entry: dict[str, Any] = {"name": row.name, "backend": row.backend, "floor": row.floor, "status": row.status}
        if row.status == "ok":
            floor = by_name.get(row.floor)
            file = by_name.get(FILE_REFERENCE)
            entry.update(
                saves_per_s=statistics.median(row.save),
                loads_per_s=statistics.median(row.load),
                latest_per_s=statistics.median(row.latest),
                big_prefill_s=row.big_prefill_s,
                big_latest_ms=row.big_latest_ms,
                big_list_ids_ms=row.big_list_ids_ms,
                big_list_ms=row.big_list_ms,
                samples={"save": row.save, "load": row.load, "latest": row.latest},
            )
            for label, other in (("floor", floor), ("file", file)):
                ok = other is not None and other.status == "ok"
                entry[f"save_vs_{label}"] = _paired(row.save, other.save) if ok and other else None
                entry[f"load_vs_{label}"] = _paired(row.load, other.load) if ok and other else None
                entry[f"latest_vs_{label}"] = _paired(row.latest, other.latest) if ok and other else None
            file_ok = file is not None and file.status == "ok"
            for metric in ("big_list_ids_ms", "big_list_ms"):
                ours, theirs = getattr(row, metric), getattr(file, metric) if file_ok else None
                entry[f"{metric}_vs_file"] = theirs / ours if ours and theirs else None
        stores.append(entry)
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, {_cpus()} CPUs, python {platform.python_version()}",
        "load_average": _load_average(),
        "servers": servers,
        "packages": {p: _version(p) for p in _PACKAGES},
        "config": {k: v for k, v in vars(config).items() if k not in ("out", "only")},
        "stores": stores,
    }


def _load_average() -> str:
    import os

    try:
        return " / ".join(f"{value:.1f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def _cpus() -> int:
    import os

    return os.cpu_count() or 0


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def _n(value: float | None, digits: int = 0) -> str:
    return "—" if value is None else f"{value:,.{digits}f}"


def render_markdown(summary: dict[str, Any]) -> str:
    cfg = summary["config"]
    lines = [
        "# Workflow checkpoint storage benchmark",
        "",
        f"- date: {summary['date']}; {summary['machine']}; load average at the end "
        f"{summary.get('load_average', 'unknown')} (other work shared the machine: read the ratios)",
        "- servers: " + "; ".join(f"{k}: {v}" for k, v in summary["servers"].items()),
        "- packages: " + ", ".join(f"{k} {v}" for k, v in summary["packages"].items()),
        f"- run: {cfg['reps']} repetitions of {cfg['saves']} saves (one workflow's lineage, ~6 kB checkpoints), "
        f"{cfg['loads']} loads, {cfg['latest']} get_latest; then {cfg['big']:,} "
        f"{'tiny' if cfg.get('tiny') else '~6 kB'} checkpoints in one workflow "
        f"(saved {cfg['concurrency']} at a time) per store: get_latest (median of 5), list_checkpoint_ids "
        f"and list_checkpoints (median of {_LISTINGS} each; `x file`: the framework's FileCheckpointStorage "
        "time over ours)",
        "- ratios: medians of per-repetition ratios; `x floor` against the row's backend floor (the raw driver), "
        "`x file` against the framework's FileCheckpointStorage",
        "",
        "| store | saves/s | x floor | x file | loads/s | x floor | x file | get_latest/s | x floor | x file | "
        f"get_latest @ {cfg['big']:,} ms | list ids @ {cfg['big']:,} ms | x file | "
        f"list checkpoints @ {cfg['big']:,} ms | x file | prefill {cfg['big']:,} s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for s in summary["stores"]:
        if s["status"] != "ok":
            lines.append(f"| {s['name']} | {s['status']} |" + " |" * 14)
            continue
        lines.append(
            f"| {s['name']} | {_n(s['saves_per_s'])} | {_x(s['save_vs_floor'])} | {_x(s['save_vs_file'])} | "
            f"{_n(s['loads_per_s'])} | {_x(s['load_vs_floor'])} | {_x(s['load_vs_file'])} | "
            f"{_n(s['latest_per_s'])} | {_x(s['latest_vs_floor'])} | {_x(s['latest_vs_file'])} | "
            f"{_n(s['big_latest_ms'], 1)} | {_n(s['big_list_ids_ms'], 1)} | {_x(s.get('big_list_ids_ms_vs_file'))} | "
            f"{_n(s.get('big_list_ms'), 1)} | {_x(s.get('big_list_ms_vs_file'))} | {_n(s['big_prefill_s'], 1)} |"
        )
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--reps", type=int, default=3, help="repetitions (default 3)")
    parser.add_argument("--saves", type=int, default=100, help="saves per repetition (default 100)")
    parser.add_argument("--loads", type=int, default=200, help="loads per repetition (default 200)")
    parser.add_argument("--latest", type=int, default=100, help="get_latest calls per repetition (default 100)")
    parser.add_argument(
        "--big", type=int, default=10_000, help="checkpoints of the big workflow (default 10,000; 0: none)"
    )
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent saves filling it (default 16)")
    parser.add_argument("--tiny", action="store_true", help="tiny checkpoints in the big workflow (listing cost)")
    parser.add_argument("--only", default="", help="comma-separated substrings of the rows to run (default all)")
    parser.add_argument("--quick", action="store_true", help="1 repetition, 20 saves, 40 loads, 20 calls, 200 big")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results directory (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    if args.quick:
        args.reps, args.saves, args.loads, args.latest, args.big = 1, 20, 40, 20, 200
    only = tuple(o.strip() for o in str(args.only).split(",") if o.strip())
    return Config(
        args.reps, args.saves, args.loads, args.latest, args.big, args.concurrency, args.out, only, bool(args.tiny)
    )


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    config = parse_args(argv)
    started = time.perf_counter()
    rows, servers = asyncio.run(run(config))
    summary = summarize(rows, servers, config)
    summary["seconds"] = round(time.perf_counter() - started, 1)
    config.out.mkdir(parents=True, exist_ok=True)
    (config.out / "checkpoints.json").write_text(json.dumps(summary, indent=2) + "\n")
    (config.out / "checkpoints.md").write_text(render_markdown(summary))
    print(render_markdown(summary))
    return summary


if __name__ == "__main__":
    main()
