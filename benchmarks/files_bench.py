"""Side-by-side benchmark of harness file stores: write, read, list and search over 1,000 files.

Run: ``uv run benchmarks/files_bench.py`` (``--quick`` for a smoke run, ``--help`` for options).

Every store in ``_file_subjects.FILE_SUBJECTS`` gets the same work, through the framework's
``AgentFileStore`` interface as the harness calls it, one call at a time:

* write: ``write(path, content)`` of every file (files/s), 10 directories of ``--files / 10``
  Markdown files of about 1.5 kB, one in a hundred holding the word searched for;
* read: ``read(path)`` of every file (files/s), content checked;
* list: ``list_children`` of the parent directory and of each of the 10 directories (listings/s);
* search: ``search("docs", "needle", recursive=True)`` over every file (searches/s), results checked.

Each repetition opens every store fresh, in a rotated order; reported are medians over
repetitions and, per operation, the ratio to the framework's ``FileSystemAgentFileStore``
(the reference row) within each repetition. Nothing here asserts a speed.
Results go to ``benchmarks/results/files.md`` and ``files.json`` (see ``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from agent_framework import AgentFileStore
from agent_framework._feature_stage import ExperimentalWarning

from _file_subjects import FILE_SUBJECTS, REFERENCE
from _subject_base import FileSubject, unavailable_reason

warnings.filterwarnings("ignore", category=ExperimentalWarning)

DEFAULT_OUT = Path(__file__).resolve().parent / "results"
OPERATIONS = ("write", "read", "list", "search")
_UNITS = {"write": "files/s", "read": "files/s", "list": "listings/s", "search": "searches/s"}
_DIRECTORIES = 10
_PACKAGES = ("agent-framework-core", "agent-stores-core", "agent-stores-sqlite", "agent-stores-s3", "boto3")
_WORDS = (
    *("agent", "store", "session", "history", "message", "tool", "result", "weather", "invoice", "order"),
    *("customer", "shipment", "refund", "policy", "summary", "database", "latency", "request", "response"),
)


@dataclass
class Config:
    """How much work one run does."""

    files: int = 1000
    reps: int = 3
    list_rounds: int = 20
    search_rounds: int = 5
    out: Path = DEFAULT_OUT
    tmpdir: Path | None = None

    @classmethod
    def quick(cls) -> Config:
        """A smoke-sized run: 100 files, one repetition."""
        return cls(files=100, reps=1, list_rounds=3, search_rounds=2)


@dataclass
class Row:
    """Every sample of one store: operation → rates per repetition."""

    name: str
    status: str = "ok"
    rates: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in OPERATIONS})


def make_files(count: int) -> dict[str, str]:
    """Return ``count`` paths → Markdown content (~1.5 kB each); every 100th file mentions the needle."""
    rng = random.Random(count)
    files: dict[str, str] = {}
    for i in range(count):
        lines = [f"# Note {i}", ""]
        lines += [" ".join(rng.choice(_WORDS) for _ in range(12)).capitalize() + "." for _ in range(18)]
        if i % 100 == 0:
            lines.insert(rng.randint(2, len(lines)), f"The needle is in note {i}.")
        files[f"docs/d{i % _DIRECTORIES:02}/note-{i:05}.md"] = "\n".join(lines) + "\n"
    return files


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


async def _timed(count: int, work: Callable[[], Awaitable[None]]) -> float:
    start = time.perf_counter()
    await work()
    return count / (time.perf_counter() - start)


async def measure(store: AgentFileStore, files: dict[str, str], config: Config) -> dict[str, float]:
    """Run the four workloads on one open, empty store; return the rate of each. Results are checked."""
    expected_hits = sorted(p.removeprefix("docs/") for p, text in files.items() if "needle" in text)
    directories = ["docs", *sorted({p.rsplit("/", 1)[0] for p in files})]

    async def write() -> None:
        for path, text in files.items():
            await store.write(path, text)

    async def read() -> None:
        for path, text in files.items():
            if await store.read(path) != text:
                raise RuntimeError(f"{type(store).__name__}: {path} read back different content")

    async def list_all() -> None:
        for _ in range(config.list_rounds):
            for directory in directories:
                if not await store.list_children(directory):
                    raise RuntimeError(f"{type(store).__name__}: {directory} listed empty")

    async def search() -> None:
        for _ in range(config.search_rounds):
            found = sorted(r.file_name for r in await store.search("docs", "needle", recursive=True))
            if found != expected_hits:
                raise RuntimeError(f"{type(store).__name__}: search found {found[:3]}..., not {expected_hits[:3]}...")

    return {
        "write": await _timed(len(files), write),
        "read": await _timed(len(files), read),
        "list": await _timed(config.list_rounds * len(directories), list_all),
        "search": await _timed(config.search_rounds, search),
    }


async def run(config: Config, only: Sequence[str] = ()) -> list[Row]:
    """Run every workload on every available store; return the samples."""
    factories = [f for f in FILE_SUBJECTS if not only or any(o.lower() in f().name.lower() for o in only)]
    rows = {f().name: Row(f().name) for f in factories}
    available: list[Callable[[], FileSubject]] = []
    for factory in factories:
        reason = unavailable_reason(factory())  # type: ignore[arg-type]
        if reason is None:
            available.append(factory)
        else:
            rows[factory().name].status = reason
            _log(f"skipping {factory().name}: {reason}")
    files = make_files(config.files)
    with tempfile.TemporaryDirectory(prefix="files-bench-", dir=config.tmpdir) as tmp:
        for rep in range(config.reps):
            _log(f"repetition {rep + 1}/{config.reps}")
            shift = rep % max(1, len(available))
            for factory in [*available[shift:], *available[:shift]]:
                subject = factory()
                directory = Path(tmp) / f"{rep}-{len(os.listdir(tmp))}"
                directory.mkdir()
                store = await subject.open(directory)
                try:
                    for operation, rate in (await measure(store, files, config)).items():
                        rows[subject.name].rates[operation].append(rate)
                finally:
                    await subject.close()
    return list(rows.values())


# ---------------------------------------------------------------------------------------------- reporting


def _paired_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float | None:
    ratios = [a / b for a, b in zip(numerators, denominators, strict=False) if b]
    return statistics.median(ratios) if ratios else None


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def summarize(rows: Sequence[Row], config: Config) -> dict[str, Any]:
    """Return medians and ratios per store, the shape written to ``files.json``."""
    reference = next((row for row in rows if row.name == REFERENCE), Row(REFERENCE))
    stores = [
        {
            "name": row.name,
            "status": row.status,
            "rates": {op: statistics.median(s) if s else None for op, s in row.rates.items()},
            "vs_reference": {op: _paired_ratio(row.rates[op], reference.rates[op]) for op in OPERATIONS},
            "samples": row.rates,
        }
        for row in rows
    ]
    meta = {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{_cpu_model()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "packages": {p: _version(p) for p in _PACKAGES},
        "s3_server": _s3_server_description(),
    }
    settings = asdict(config) | {"out": str(config.out), "tmpdir": str(config.tmpdir or tempfile.gettempdir())}
    return {"meta": meta, "config": settings, "reference": REFERENCE, "stores": stores}


def _s3_server_description() -> str | None:
    module = sys.modules.get("_subjects_s3")
    server = getattr(module, "_server", None) if module else None
    return str(server[0]) if server else None


def _fmt(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}" if value >= 10 else f"{value:.2f}"


def _fmt_ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def render_markdown(summary: dict[str, Any]) -> str:
    """Return the results as Markdown: a header of versions, the table, and the notes."""
    meta, config = summary["meta"], summary["config"]
    header = ["store"]
    for op in OPERATIONS:
        header += [f"{op} {_UNITS[op]}", "x ref"]
    lines = [
        "# File stores, side by side",
        "",
        f"{meta['date']} · {meta['machine']} · Python {meta['python']}",
        "",
        "Packages: " + ", ".join(f"{n} {v}" for n, v in meta["packages"].items()),
        "",
    ]
    if meta.get("s3_server"):
        lines += [f"S3 server: {meta['s3_server']}", ""]
    lines += [
        f"{config['files']:,} files of ~1.5 kB in {_DIRECTORIES} directories; medians over {config['reps']} "
        f"repetitions; `x ref` is the ratio to `{summary['reference']}` within each repetition (higher is faster).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    skipped: list[str] = []
    for store in summary["stores"]:
        if store["status"] != "ok":
            skipped.append(f"- {store['name']}: {store['status']}")
            continue
        cells = [store["name"]]
        for op in OPERATIONS:
            cells += [_fmt(store["rates"][op]), _fmt_ratio(store["vs_reference"][op])]
        lines.append("| " + " | ".join(cells) + " |")
    if skipped:
        lines += ["", "Not run:", *skipped]
    lines += [
        "",
        "Workloads, one call at a time as the harness makes them: `write` and `read` of every file; "
        f"`list_children` of `docs` and its {_DIRECTORIES} directories; "
        "`search('docs', 'needle', recursive=True)` (1 file in 100 matches).",
        "",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Parse options, run, write ``files.md`` and ``files.json``, print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run: 100 files, one repetition")
    parser.add_argument("--files", type=int, help="files per store (default 1000)")
    parser.add_argument("--reps", type=int, help="repetitions (default 3)")
    parser.add_argument("--only", action="append", default=[], help="run only stores whose name contains this")
    parser.add_argument("--out", type=Path, help="directory for files.md and files.json")
    parser.add_argument("--tmpdir", type=Path, help="where the stores' temporary directories go")
    args = parser.parse_args(argv)
    config = Config.quick() if args.quick else Config()
    if args.files is not None:
        config.files = args.files
    if args.reps is not None:
        config.reps = args.reps
    if args.out is not None:
        config.out = args.out
    config.tmpdir = args.tmpdir
    rows = asyncio.run(run(config, args.only))
    summary = summarize(rows, config)
    config.out.mkdir(parents=True, exist_ok=True)
    (config.out / "files.json").write_text(json.dumps(summary, indent=2) + "\n")
    markdown = render_markdown(summary)
    (config.out / "files.md").write_text(markdown)
    print(markdown)


if __name__ == "__main__":
    main()
