"""Side-by-side benchmark of chat-history stores: our SQLite provider, the raw aiosqlite floor, peers.

Run: ``uv run --group bench benchmarks/history_bench.py`` (``--quick`` for a smoke run).

Workloads, each repeated on fresh databases; within a repetition the stores are open at once
and their operations alternate round-robin (in a new random order every round), so a burst of
machine noise hits them alike. Stores whose every save re-reads the whole history
(``FileHistoryProvider``, ``InMemoryHistoryProvider``) alternate among themselves only: in the
same rotation their long saves evict the CPU caches and slow every other store down.

* append: one session, one ``save_messages`` of 2 messages per turn, as agents save (turns/s);
* load: the whole of a 20-message session (loads/s);
* save cost: the latency of one 2-message save on a session that already holds 100, 10,000 and
  100,000 messages (median per-save latency), and its growth relative to the smallest size; the
  sizes of a store are open at once and their saves alternate too.

Reported are medians over repetitions and ratios to the floor. Nothing here asserts a speed.
Results go to ``benchmarks/results/history.md`` and ``history.json`` (see ``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import platform
import random
import sqlite3
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

from agent_framework._feature_stage import ExperimentalWarning

from _payloads import Turn, make_turns
from _subjects import SERVER_STARTERS, SUBJECTS, Subject, unavailable_reason

# Subclassing the framework's experimental bases warns; expected here, and noise in the output.
warnings.filterwarnings("ignore", category=ExperimentalWarning)

FLOOR = "raw aiosqlite (floor)"
OURS = "ours: SQLiteHistoryProvider"
FILE = "framework FileHistoryProvider"
DEFAULT_OUT = Path(__file__).resolve().parent / "results"
_LOAD_SESSION_TURNS = 10  # 20 messages
_TIMED_TURNS_START = 10_000_000  # turn numbers of timed saves, far from any prefilled turn
_PACKAGES = (
    "agent-framework-core",
    "agent-stores-core",
    "agent-stores-sqlite",
    "aiosqlite",
    "msgspec",
    "openai-agents",
    "agent-stores-redis",
    "redis",
    "agent-framework-redis",
    "agent-stores-postgresql",
    "psycopg",
    "psycopg-pool",
    "community-agent-framework-postgres",
    "sqlalchemy",
    "asyncpg",
)


@dataclass
class Config:
    """How much work one run does."""

    reps: int = 5
    turns: int = 200
    loads: int = 300
    sizes: tuple[int, ...] = (100, 10_000, 100_000)
    save_reps: int = 3
    saves: int = 40
    save_budget_s: float = 1.0
    out: Path = DEFAULT_OUT
    tmpdir: Path | None = None
    #: Only the rows whose name or floor contains one of these words (case-insensitive); empty: every row.
    only: tuple[str, ...] = ()
    #: Leave out the rows whose name or floor contains one of these words (case-insensitive).
    skip: tuple[str, ...] = ()

    @classmethod
    def quick(cls) -> Config:
        """A smoke-sized run: seconds, not minutes; skips 100k."""
        return cls(reps=2, turns=50, loads=50, sizes=(100, 10_000), save_reps=1, saves=8, save_budget_s=0.4)


@dataclass
class Row:
    """Every sample of one store."""

    name: str
    floor: str = ""
    #: For a sealed row, the row of the same store unsealed (its ``x plain`` ratios divide by it).
    plain: str = ""
    status: str = "ok"
    append_turns_per_s: list[float] = field(default_factory=lambda: [])
    loads_per_s: list[float] = field(default_factory=lambda: [])
    #: The same rates per second of this process's CPU time (what the client spent, whatever the machine's load).
    append_turns_per_cpu_s: list[float] = field(default_factory=lambda: [])
    loads_per_cpu_s: list[float] = field(default_factory=lambda: [])
    save_latency_us: dict[int, list[float]] = field(default_factory=lambda: {})
    save_skipped: dict[int, str] = field(default_factory=lambda: {})


# ---------------------------------------------------------------------------------------------- running


def _log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def _rotated(items: Sequence[Any], by: int) -> list[Any]:
    by %= len(items)
    return [*items[by:], *items[:by]]


async def _open_all(factories: Sequence[Callable[[], Subject]], directory: Callable[[], Path]) -> list[Subject]:
    """Open one subject per factory, each in a fresh directory of its own."""
    subjects: list[Subject] = []
    for factory in factories:
        subject = factory()
        await subject.open(directory())
        subjects.append(subject)
    return subjects


async def _close_all(subjects: Sequence[Subject]) -> None:
    for subject in subjects:
        await subject.close()


async def _check_count(subject: Subject, expected: int) -> None:
    got = await subject.load()
    if got != expected:
        raise RuntimeError(f"{subject.name}: loaded {got} messages, expected {expected}")


async def _round_robin(
    subjects: Sequence[Subject],
    rounds: int,
    operation: Callable[[Subject, int], Awaitable[Any]],
    *,
    budget_s: float | None = None,
    cpu: list[list[float]] | None = None,
) -> list[list[float]]:
    """Time ``operation(subject, round)`` for every subject, round after round; return seconds per call.

    Every round runs the subjects in a new random order, so a burst of machine noise hits them
    all alike and none always follows the same neighbour (a subject run right after another with
    the same code path finds warm CPU caches). With ``budget_s``, a subject that has spent it
    (and done at least 3 calls) sits out. The result lists each subject's durations, in the
    order of ``subjects``; ``cpu``, when given, gets each subject's list of the process's CPU
    seconds per call (``time.process_time``: every thread of this process, no server).
    """
    durations: list[list[float]] = [[] for _ in subjects]
    if cpu is not None:
        cpu[:] = [[] for _ in subjects]
    order = list(range(len(subjects)))
    shuffler = random.Random(rounds)
    gc.collect()
    for index in range(rounds):
        shuffler.shuffle(order)
        for position in order:
            spent = durations[position]
            if budget_s is not None and len(spent) >= 3 and sum(spent) > budget_s:
                continue
            start, start_cpu = time.perf_counter(), time.process_time()
            await operation(subjects[position], index)
            spent.append(time.perf_counter() - start)
            if cpu is not None:
                cpu[position].append(time.process_time() - start_cpu)
    return durations


def _cpu_rates(subjects: Sequence[Subject], spent: list[list[float]], into: dict[str, float] | None) -> None:
    if into is not None:
        for subject, seconds in zip(subjects, spent, strict=True):
            into[subject.name] = len(seconds) / sum(seconds) if sum(seconds) > 0 else float("nan")


async def measure_append(
    factories: Sequence[Callable[[], Subject]],
    directory: Callable[[], Path],
    turns: Sequence[Turn],
    *,
    cpu_rates: dict[str, float] | None = None,
) -> dict[str, float]:
    """Return each store's turns/s for ``len(turns)`` per-turn saves on one session of a fresh store.

    ``cpu_rates``, when given, gets each store's turns per second of this process's CPU time.
    """
    subjects = await _open_all(factories, directory)
    cpu: list[list[float]] = []
    try:
        durations = await _round_robin(subjects, len(turns), lambda subject, i: subject.save(turns[i]), cpu=cpu)
        _cpu_rates(subjects, cpu, cpu_rates)
        for subject in subjects:
            await _check_count(subject, 2 * len(turns))
    finally:
        await _close_all(subjects)
    return {subject.name: len(spent) / sum(spent) for subject, spent in zip(subjects, durations, strict=True)}


async def measure_load(
    factories: Sequence[Callable[[], Subject]],
    directory: Callable[[], Path],
    turns: Sequence[Turn],
    loads: int,
    *,
    cpu_rates: dict[str, float] | None = None,
) -> dict[str, float]:
    """Return each store's loads/s of the whole session built from ``turns``, saved one turn at a time.

    ``cpu_rates``, when given, gets each store's loads per second of this process's CPU time.
    """
    subjects = await _open_all(factories, directory)
    cpu: list[list[float]] = []
    try:
        for subject in subjects:
            for turn in turns:
                await subject.save(turn)
            await _check_count(subject, 2 * len(turns))  # also the warm-up
        durations = await _round_robin(subjects, loads, lambda subject, _: subject.load(), cpu=cpu)
        _cpu_rates(subjects, cpu, cpu_rates)
    finally:
        await _close_all(subjects)
    return {subject.name: len(spent) / sum(spent) for subject, spent in zip(subjects, durations, strict=True)}


async def measure_save_latency(
    cases: Sequence[tuple[Callable[[], Subject], int]],
    directory: Callable[[], Path],
    history: Sequence[Turn],
    timed: Sequence[Turn],
    budget_s: float,
) -> dict[tuple[str, int], float]:
    """Return the median latency (µs) of one turn's save for each (store, history size) case.

    Every case is a fresh store whose session holds the first ``size`` messages of ``history``;
    all cases are open at once and their saves alternate, so the sizes of one store are compared
    under the same machine conditions. Each case saves up to ``len(timed)`` turns, stopping early
    (after at least 3) once it has spent ``budget_s``.
    """
    subjects = await _open_all([factory for factory, _ in cases], directory)
    try:
        for subject, (_, size) in zip(subjects, cases, strict=True):
            await subject.prefill(history[: size // 2])
        durations = await _round_robin(
            subjects, len(timed), lambda subject, i: subject.save(timed[i]), budget_s=budget_s
        )
        for subject, (_, size), spent in zip(subjects, cases, durations, strict=True):
            if size <= 10_000:  # cheap enough to verify for every store
                await _check_count(subject, size + 2 * len(spent))
    finally:
        await _close_all(subjects)
    return {
        (subject.name, size): statistics.median(spent) * 1e6
        for subject, (_, size), spent in zip(subjects, cases, durations, strict=True)
    }


#: Which server each kind of server-backed row used in this run (for the results' header).
SERVERS_USED: dict[str, str] = {}


def selected(config: Config) -> list[Callable[[], Subject]]:
    """The subjects this run measures: every one, or those ``--only`` names, but those ``--skip`` names."""

    def named(factory: Callable[[], Subject], words: Sequence[str]) -> bool:
        subject = factory()
        return any(word.lower() in subject.name.lower() or word.lower() in subject.floor.lower() for word in words)

    return [f for f in SUBJECTS if (not config.only or named(f, config.only)) and not named(f, config.skip)]


async def run(config: Config) -> list[Row]:
    """Start the servers the rows need, run every workload on every available store; return the samples."""
    subjects = selected(config)
    with contextlib.ExitStack() as servers:
        missing: dict[str, str] = {}
        kinds = sorted({f().server for f in subjects if f().server is not None and unavailable_reason(f()) is None})
        for kind in kinds:
            try:
                _, description = servers.enter_context(SERVER_STARTERS[kind]())  # type: ignore[index]
            except Exception as err:  # a server that cannot start here: its rows report why
                missing[kind] = str(err) or type(err).__name__
                _log(f"no {kind} server: {missing[kind]}")
            else:
                SERVERS_USED[kind] = description
                _log(f"{kind}: {description}")
        return await _run(config, subjects, missing)


async def _run(config: Config, subjects: Sequence[Callable[[], Subject]], missing_servers: dict[str, str]) -> list[Row]:
    rows = {factory().name: Row(factory().name, floor=factory().floor, plain=factory().plain) for factory in subjects}
    available: list[Callable[[], Subject]] = []
    for factory in subjects:
        reason = unavailable_reason(factory(), missing_servers)
        if reason is None:
            available.append(factory)
        else:
            rows[factory().name].status = reason
            _log(f"skipping {factory().name}: {reason}")

    append_turns = make_turns(0, config.turns)
    load_turns = make_turns(0, _LOAD_SESSION_TURNS)
    history = make_turns(0, max(config.sizes) // 2)
    timed = make_turns(_TIMED_TURNS_START, config.saves)

    # Stores that re-read the whole history on every save alternate among themselves only.
    groups = [[factory for factory in available if factory().rereads_history == rereads] for rereads in (False, True)]
    groups = [group for group in groups if group]
    cases: list[list[tuple[Callable[[], Subject], int]]] = []
    for group in groups:
        group_cases: list[tuple[Callable[[], Subject], int]] = []
        for factory in group:
            subject = factory()
            for size in config.sizes:
                if subject.max_history is not None and size > subject.max_history:
                    rows[subject.name].save_skipped[size] = subject.max_history_reason
                else:
                    group_cases.append((factory, size))
        cases.append(group_cases)

    with tempfile.TemporaryDirectory(prefix="history-bench-", dir=config.tmpdir) as tmp:
        fresh = iter(Path(tmp) / str(i) for i in range(10**9))

        def directory() -> Path:
            path = next(fresh)
            path.mkdir()
            return path

        for rep in range(config.reps):
            _log(f"append + load, repetition {rep + 1}/{config.reps}")
            for group in _rotated(groups, rep):
                cpu_rates: dict[str, float] = {}
                for name, rate in (await measure_append(group, directory, append_turns, cpu_rates=cpu_rates)).items():
                    rows[name].append_turns_per_s.append(rate)
                    rows[name].append_turns_per_cpu_s.append(cpu_rates[name])
            # Loads of every store share one rotation (a 20-message session costs no store much to
            # build), so a store is compared with the framework's file provider side by side too.
            everyone = [factory for group in _rotated(groups, rep) for factory in group]
            cpu_rates = {}
            for name, rate in (
                await measure_load(everyone, directory, load_turns, config.loads, cpu_rates=cpu_rates)
            ).items():
                rows[name].loads_per_s.append(rate)
                rows[name].loads_per_cpu_s.append(cpu_rates[name])

        for rep in range(config.save_reps):
            _log(f"save cost at {', '.join(f'{size:,}' for size in config.sizes)} messages, repetition {rep + 1}")
            for group_cases in _rotated(cases, rep):
                latencies = await measure_save_latency(group_cases, directory, history, timed, config.save_budget_s)
                for (name, size), latency in latencies.items():
                    rows[name].save_latency_us.setdefault(size, []).append(latency)
    return list(rows.values())


# ---------------------------------------------------------------------------------------------- reporting


def _median(samples: Sequence[float]) -> float | None:
    return statistics.median(samples) if samples else None


def _size_label(size: int) -> str:
    if size >= 1000 and size % 1000 == 0:
        return f"{size // 1000}k"
    return str(size)


def _paired_ratio(numerators: Sequence[float], denominators: Sequence[float]) -> float | None:
    """Median over repetitions of the ratio within each repetition (whose machine noise both share)."""
    ratios = [a / b for a, b in zip(numerators, denominators, strict=False) if b]
    return statistics.median(ratios) if ratios else None


def _fmt_rate(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _fmt_us(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}" if value >= 100 else f"{value:.1f}"


def _fmt_ratio(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}x"


def summarize(rows: Sequence[Row], config: Config) -> dict[str, Any]:
    """Return medians and ratios per store, the shape written to ``history.json``."""
    by_name = {row.name: row for row in rows}
    base = config.sizes[0]
    stores: list[dict[str, Any]] = []
    for row in rows:
        floor = by_name.get(row.floor or FLOOR, Row(row.floor or FLOOR))
        plain = by_name.get(row.plain) if row.plain else None
        saves = row.save_latency_us
        stores.append(
            {
                "name": row.name,
                "floor": floor.name,
                "status": row.status,
                "append_turns_per_s": _median(row.append_turns_per_s),
                "append_vs_floor": _paired_ratio(row.append_turns_per_s, floor.append_turns_per_s),
                "loads_per_s": _median(row.loads_per_s),
                "load_vs_floor": _paired_ratio(row.loads_per_s, floor.loads_per_s),
                "plain": row.plain or None,
                "append_vs_plain": None
                if plain is None
                else _paired_ratio(row.append_turns_per_s, plain.append_turns_per_s),
                "load_vs_plain": None if plain is None else _paired_ratio(row.loads_per_s, plain.loads_per_s),
                "append_cpu_vs_plain": None
                if plain is None
                else _paired_ratio(row.append_turns_per_cpu_s, plain.append_turns_per_cpu_s),
                "load_cpu_vs_plain": None
                if plain is None
                else _paired_ratio(row.loads_per_cpu_s, plain.loads_per_cpu_s),
                "save_latency_us": {str(size): _median(saves.get(size, [])) for size in config.sizes},
                "save_growth": {
                    f"{_size_label(size)}/{_size_label(base)}": _paired_ratio(saves.get(size, []), saves.get(base, []))
                    for size in config.sizes[1:]
                },
                "save_skipped": {str(size): reason for size, reason in row.save_skipped.items()},
                "samples": {
                    "append_turns_per_s": row.append_turns_per_s,
                    "loads_per_s": row.loads_per_s,
                    "append_turns_per_cpu_s": row.append_turns_per_cpu_s,
                    "loads_per_cpu_s": row.loads_per_cpu_s,
                    "save_latency_us": {str(size): samples for size, samples in saves.items()},
                },
            }
        )
    ours, file = by_name.get(OURS), by_name.get(FILE)
    ours_vs_file = None
    if ours and file:
        ours_vs_file = {
            "append": _paired_ratio(ours.append_turns_per_s, file.append_turns_per_s),
            "load": _paired_ratio(ours.loads_per_s, file.loads_per_s),
        }
    return {
        "meta": machine_info(config),
        "config": _config_json(config),
        "stores": stores,
        "ours_vs_file": ours_vs_file,
    }


def _config_json(config: Config) -> dict[str, Any]:
    data = asdict(config)
    data["out"] = str(config.out)
    data["tmpdir"] = str(config.tmpdir) if config.tmpdir else tempfile.gettempdir()
    return data


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def machine_info(config: Config) -> dict[str, Any]:
    """Return what the numbers depend on: machine, interpreter, SQLite and package versions."""
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{_cpu_model()}, {os.cpu_count()} CPUs, {platform.system()} {platform.release()}",
        "load_average": _load_average(),
        "python": platform.python_version(),
        "sqlite": sqlite3.sqlite_version,
        "servers": dict(SERVERS_USED),
        "packages": {package: _version(package) for package in _PACKAGES},
    }


def _load_average() -> str:
    """The machine's 1/5/15-minute load averages: other work on a shared machine moves the absolute rates."""
    try:
        return " / ".join(f"{value:.1f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


def _store_line(store: dict[str, Any], sizes: Sequence[int]) -> str:
    cells = [
        store["name"],
        _fmt_rate(store["append_turns_per_s"]),
        _fmt_ratio(store["append_vs_floor"]),
        _fmt_ratio(store.get("append_vs_plain")),
        _fmt_rate(store["loads_per_s"]),
        _fmt_ratio(store["load_vs_floor"]),
        _fmt_ratio(store.get("load_vs_plain")),
        *(_fmt_us(store["save_latency_us"][str(size)]) for size in sizes),
        *(_fmt_ratio(value) for value in store["save_growth"].values()),
    ]
    return "| " + " | ".join(cells) + " |"


def render_markdown(summary: dict[str, Any]) -> str:
    """Return the results as Markdown: a header of versions, the table, and the notes."""
    meta, config = summary["meta"], summary["config"]
    sizes: list[int] = config["sizes"]
    base = _size_label(sizes[0])
    header = [
        "store",
        "append turns/s",
        "x floor",
        "x plain",
        "load (20 msgs)/s",
        "x floor",
        "x plain",
        *(f"save µs @{_size_label(s)}" for s in sizes),
        *(f"{_size_label(s)}÷{base}" for s in sizes[1:]),
    ]
    packages = ", ".join(f"{name} {ver}" for name, ver in meta["packages"].items())
    lines = [
        "# History store benchmark",
        "",
        f"- date: {meta['date']}",
        f"- machine: {meta['machine']}"
        + (
            f"; load average at the end {meta['load_average']} (other work shared the machine)"
            if "load_average" in meta
            else ""
        ),
        f"- python {meta['python']}, SQLite {meta['sqlite']}",
        *(f"- {kind} server: {description}" for kind, description in meta.get("servers", {}).items()),
        f"- packages: {packages}",
        f"- databases in {config['tmpdir']}; whole run {meta.get('duration_s', '?')} s",
        f"- run: {config['reps']} repetitions of append ({config['turns']} turns) and load ({config['loads']} loads);"
        f" {config['save_reps']} of save cost (≤ {config['saves']} timed saves per store and size, median"
        " per-save latency; all sizes open at once);"
        " fresh databases per repetition, stores' operations interleaved round-robin in random order"
        " (appends and saves of the two stores that re-read the whole history on every save in their own"
        " rotation; loads of every store in one rotation);"
        " medians over repetitions",
        "",
    ]
    floors = list(dict.fromkeys(store.get("floor") or FLOOR for store in summary["stores"]))
    for number, floor in enumerate(floors):
        group = [s for s in summary["stores"] if (s.get("floor") or FLOOR) == floor and s["status"] == "ok"]
        if not group:
            continue
        if number:
            lines += [f"Compared with {floor}:", ""]
        lines += [
            "| " + " | ".join(header) + " |",
            "|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|",
            *(_store_line(store, sizes) for store in group),
            "",
        ]
    lines += _sealed_lines(summary)
    lines += _notes(summary)
    lines += ["", "Spread over repetitions (min..max):", ""]
    lines += [_spread_line(store) for store in summary["stores"] if store["status"] == "ok"]
    return "\n".join(lines) + "\n"


def _sealed_lines(summary: dict[str, Any]) -> list[str]:
    """The sealed rows against the same stores unsealed: wall-clock and client-CPU ratios side by side."""
    sealed = [s for s in summary["stores"] if s.get("plain") and s["status"] == "ok"]
    if not sealed:
        return []
    lines = [
        "Sealed rows against the same store unsealed (`x plain`: the sealed rate ÷ the plain rate in the same"
        " repetition, median; wall clock, and this process's CPU time, which other work on the machine moves far"
        " less):",
        "",
        "| sealed store | append x plain | append x plain (CPU) | load x plain | load x plain (CPU) |",
        "|---|---:|---:|---:|---:|",
    ]
    for store in sealed:
        cells = [
            store["name"],
            _fmt_ratio(store["append_vs_plain"]),
            _fmt_ratio(store.get("append_cpu_vs_plain")),
            _fmt_ratio(store["load_vs_plain"]),
            _fmt_ratio(store.get("load_cpu_vs_plain")),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def _spread_line(store: dict[str, Any]) -> str:
    samples = store["samples"]

    def span(values: Sequence[float], fmt: Callable[[float | None], str]) -> str:
        return f"{fmt(min(values))}..{fmt(max(values))}" if values else "—"

    saves = ", ".join(
        f"@{_size_label(int(size))} {span(values, _fmt_us)} µs" for size, values in samples["save_latency_us"].items()
    )
    return (
        f"- {store['name']}: append {span(samples['append_turns_per_s'], _fmt_rate)} turns/s,"
        f" load {span(samples['loads_per_s'], _fmt_rate)}/s, save {saves}"
    )


def _notes(summary: dict[str, Any]) -> list[str]:
    notes: list[str] = []
    for store in summary["stores"]:
        if store["status"] != "ok":
            notes.append(f"- {store['name']}: {store['status']}")
        for size, reason in store["save_skipped"].items():
            notes.append(f"- {store['name']}: save cost at {_size_label(int(size))} not measured: {reason}")
    versus = summary["ours_vs_file"]
    if versus and versus["append"] is not None:
        notes.append(
            f"- {OURS} vs {FILE} (a SQLite file against JSON Lines files; the fsspec row's own"
            f" ratios to {FILE} are in its table above): append {_fmt_ratio(versus['append'])},"
            f" load {_fmt_ratio(versus['load'])}"
        )
    notes += [
        "- x floor: the store's rate divided by its floor's (raw aiosqlite for the SQLite and in-process rows,"
        " raw redis-py on the same single server for the Redis rows, raw psycopg on the same server for the"
        " PostgreSQL rows) in the same repetition, median over"
        " repetitions (above 1 is faster than the floor); growth ratios are paired the same way.",
        "- x plain: a sealed row's rate (`open_stores(..., encryption=Keyring)`, AES-256-GCM) divided by the same"
        " store's unsealed row in the same repetition, median over repetitions (the target is 0.90x or more).",
        "- The cluster rows run on 3 local primaries and are compared with the single-server floor.",
        "- The floor does no de-duplication and no windowing; the providers do the framework's"
        " `filter_new_messages` work (ours through stored digests).",
        "- FileHistoryProvider and InMemoryHistoryProvider re-read (hash) the whole history on every save,"
        " so their append rate falls as the session grows: it is the rate over the whole session.",
        "- InMemoryHistoryProvider's load is a list copy; its rate mostly measures the timing loop.",
    ]
    return ["Notes:", "", *notes]


def write_results(summary: dict[str, Any], out: Path) -> tuple[Path, Path]:
    """Write ``history.md`` and ``history.json`` into ``out``; return their paths."""
    out.mkdir(parents=True, exist_ok=True)
    markdown, data = out / "history.md", out / "history.json"
    markdown.write_text(render_markdown(summary), encoding="utf-8")
    data.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return markdown, data


# ---------------------------------------------------------------------------------------------- command line


def _sizes(text: str) -> tuple[int, ...]:
    sizes = tuple(int(part) for part in text.split(","))
    if not sizes or any(size < 2 or size % 2 for size in sizes) or list(sizes) != sorted(set(sizes)):
        raise argparse.ArgumentTypeError("sizes must be increasing even numbers, e.g. 100,10000,100000")
    return sizes


def parse_args(argv: Sequence[str] | None = None) -> Config:
    """Return the run's configuration from the command line."""
    parser = argparse.ArgumentParser(
        description="Compare chat-history stores in one run: raw aiosqlite floor, ours, the framework's, peers.",
    )
    parser.add_argument("--quick", action="store_true", help="smoke run: smaller sizes, no 100k, ~15 s")
    parser.add_argument("--out", type=Path, help=f"directory for history.md and history.json (default {DEFAULT_OUT})")
    parser.add_argument("--reps", type=int, help="repetitions of append and load (default 5, quick 2)")
    parser.add_argument("--turns", type=int, help="turns per append repetition, one session (default 200, quick 50)")
    parser.add_argument("--loads", type=int, help="loads per load repetition (default 300, quick 50)")
    parser.add_argument("--sizes", type=_sizes, help="history sizes for save cost (default 100,10000,100000)")
    parser.add_argument("--save-reps", type=int, help="repetitions of save cost (default 3, quick 1)")
    parser.add_argument("--saves", type=int, help="most timed saves per size and repetition (default 40, quick 8)")
    parser.add_argument("--tmpdir", type=Path, help="where the databases go (default: the system temp dir)")
    parser.add_argument(
        "--only",
        help="comma-separated words: run only the rows whose name or floor contains one, e.g. 'psycopg' for the"
        " PostgreSQL rows (default: every row)",
    )
    parser.add_argument("--skip", help="comma-separated words: leave out the rows whose name or floor contains one")
    args = parser.parse_args(argv)
    config = Config.quick() if args.quick else Config()
    for name in ("out", "reps", "turns", "loads", "sizes", "save_reps", "saves", "tmpdir"):
        value = getattr(args, name)
        if value is not None:
            setattr(config, name, value)
    config.only = tuple(word.strip() for word in (args.only or "").split(",") if word.strip())
    config.skip = tuple(word.strip() for word in (args.skip or "").split(",") if word.strip())
    if not selected(config):
        parser.error("--only and --skip leave no row")
    return config


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark, write the results, print the table; return the summary."""
    config = parse_args(argv)
    started = time.perf_counter()
    rows = asyncio.run(run(config))
    summary = summarize(rows, config)
    summary["meta"]["duration_s"] = round(time.perf_counter() - started, 1)
    markdown, data = write_results(summary, config.out)
    print(render_markdown(summary))
    _log(f"wrote {markdown} and {data} in {summary['meta']['duration_s']} s")
    return summary


if __name__ == "__main__":
    main()
