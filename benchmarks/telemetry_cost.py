"""What telemetry costs an agent's history: turns/s with the core's decorator removed, present, and recording.

    uv run benchmarks/telemetry_cost.py              # 7 repetitions of 2,000 turns per row
    uv run benchmarks/telemetry_cost.py --quick

The history benchmark's turns (``_payloads.make_turns``) on two stores: ``SQLiteHistoryProvider``
(a file database) and the core's ``LogHistoryProvider`` on ``MemoryLogDriver`` (no I/O, where
any overhead shows most). One turn is what the harness does per model call: ``get_messages``
(the newest 20 messages) then ``save_messages`` of two messages. Rows:

- ``plain``: the store methods without the telemetry decorator (``__wrapped__``), the floor;
- ``no provider``: as shipped, no tracer or meter provider set (the decorator's check only);
- ``recording``: the SDK's providers set (spans to a ``BatchSpanProcessor`` whose exporter drops
  them, metrics to an in-memory reader), so every span and duration is built and recorded.

Repetitions alternate the rows and which of a pair runs first (plain and no-provider first,
then recording once providers are set: OpenTelemetry allows one global provider per process);
the table shows medians and ratios to ``plain``. On a busy machine the turn rows vary by more
than the decorator costs, so the run also times the decorator alone (a decorated no-op method
against the same method undecorated, no provider set) and prints what it adds to a turn.
Nothing asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _payloads import make_turns
from agent_stores.core import LogHistoryProvider, open_stores
from agent_stores.core.memory import MemoryLogDriver
from agent_stores.core.telemetry import store_operation

_TRACED = ("get_messages", "save_messages")
#: Messages each load returns (the newest ones), so every turn costs the same.
WINDOW = 20


@contextlib.contextmanager
def _undecorated() -> Iterator[None]:
    originals = {name: LogHistoryProvider.__dict__[name] for name in _TRACED}
    try:
        for name, method in originals.items():
            setattr(LogHistoryProvider, name, method.__wrapped__)
        yield
    finally:
        for name, method in originals.items():
            setattr(LogHistoryProvider, name, method)


async def _turns_per_s(store: str, turns: int, folder: Path) -> float:
    messages = [list(turn.messages) for turn in make_turns(0, turns)]
    async with contextlib.AsyncExitStack() as stack:
        if store == "sqlite":
            url = f"sqlite:///{folder / f'{time.perf_counter_ns()}.db'}"
            stores = await stack.enter_async_context(open_stores(url))
            provider: Any = stores.history_provider(max_messages=WINDOW)
        else:
            provider = LogHistoryProvider(MemoryLogDriver(), max_messages=WINDOW)
        start = time.perf_counter()
        for pair in messages:
            await provider.get_messages("bench")
            await provider.save_messages("bench", pair)
        return turns / (time.perf_counter() - start)


def _enable_recording() -> Callable[[], None]:
    from opentelemetry import metrics, trace
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

    class Dropping(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return SpanExportResult.SUCCESS

    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(BatchSpanProcessor(Dropping()))
    trace.set_tracer_provider(tracer_provider)
    meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    metrics.set_meter_provider(meter_provider)

    def shutdown() -> None:
        tracer_provider.shutdown()
        meter_provider.shutdown()

    return shutdown


class _Probe:
    async def plain(self, session_id: str) -> str:
        return session_id

    @store_operation("history", "get_messages", session=True)
    async def traced(self, session_id: str) -> str:
        return session_id


async def _decorator_cost_us(calls: int = 200_000, reps: int = 5) -> float:
    """Median microseconds the decorator adds to one call while no provider is set."""
    probe = _Probe()
    added: list[float] = []
    for _ in range(reps):
        timings: list[float] = []
        for method in (probe.plain, probe.traced):
            start = time.perf_counter()
            for _ in range(calls):
                await method("s")
            timings.append((time.perf_counter() - start) / calls * 1e6)
        added.append(timings[1] - timings[0])
    return statistics.median(added)


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="200 turns, 2 repetitions")
    options = parser.parse_args(argv)
    turns, reps = (200, 2) if options.quick else (options.turns, options.reps)
    rows = ("plain", "no provider", "recording")
    results: dict[str, dict[str, list[float]]] = {s: {row: [] for row in rows} for s in ("sqlite", "memory")}
    added_us = asyncio.run(_decorator_cost_us())
    with tempfile.TemporaryDirectory() as folder:
        for phase in ("off", "on"):
            if phase == "on":
                shutdown = _enable_recording()
            row = "no provider" if phase == "off" else "recording"
            for rep in range(reps):
                for store in results:
                    for plain in (True, False) if rep % 2 == 0 else (False, True):  # alternate which goes first
                        with _undecorated() if plain else contextlib.nullcontext():
                            rate = asyncio.run(_turns_per_s(store, turns, Path(folder)))
                        results[store]["plain" if plain else row].append(rate)
        shutdown()
    medians = {store: {row: statistics.median(v) for row, v in by_row.items()} for store, by_row in results.items()}
    print(f"{turns} turns (get_messages + save_messages of 2), median of {reps} repetitions\n")
    print("| store | row | turns/s | ÷ plain |")
    print("|---|---|---:|---:|")
    for store, by_row in medians.items():
        for row, value in by_row.items():
            print(f"| {store} | {row} | {value:,.0f} | {value / by_row['plain']:.3f} |")
    print(f"\nThe decorator with no provider set adds {added_us:.2f} µs per call, 2 calls per turn:")
    for store, by_row in medians.items():
        turn_us = 1e6 / by_row["plain"]
        print(f"- {store}: {2 * added_us:.2f} µs of a {turn_us:,.0f} µs turn ({200 * added_us / turn_us:.2f}%)")
    return medians


if __name__ == "__main__":
    main()
