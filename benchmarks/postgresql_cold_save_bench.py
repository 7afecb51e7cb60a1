"""A save through a provider that remembers nothing of the session, with and without the one-step save.

A stateless worker (a new ``history_provider()`` per request, or a session whose requests land
on another process each time) has no remembered tail: its save either reads the tail and then
appends (two round trips) or checks the tail and appends in one call of
``agent_stores_append_unseen`` (one). Both run on one fresh local server
(``agent_stores.testing.servers.postgresql``), interleaved save by save, each on a session of
its own that grows by one 2-message turn per save; the one-step save is turned off for the
other by clearing the provider's capability, so every other line of the save is the same.

    uv run python benchmarks/postgresql_cold_save_bench.py [--saves 400] [--out DIR]

Writes ``postgresql-cold-save.md`` to ``--out`` (default ``benchmarks/results/postgresql``):
median microseconds per save and their ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import statistics
import time
from pathlib import Path

from agent_framework import Message

from agent_stores.core import open_stores
from agent_stores.core.history import LogHistoryProvider
from agent_stores.testing.servers.postgresql import local_postgresql

ONE_STEP = "one step (agent_stores_append_unseen)"
TAIL_FIRST = "tail read, then append"


def _turn(mode: str, n: int) -> list[Message]:
    return [Message("user", [f"question {mode} {n} " * 5]), Message("assistant", [f"answer {n} " * 20])]


async def measure(url: str, saves: int) -> dict[str, list[float]]:
    """Return each mode's seconds per cold save, ``saves`` of each, interleaved."""
    times: dict[str, list[float]] = {ONE_STEP: [], TAIL_FIRST: []}
    async with open_stores(url) as stores:
        await stores.history_provider().save_messages("warm-up", _turn("warm-up", 0))
        for n in range(saves):
            for mode in (ONE_STEP, TAIL_FIRST) if n % 2 else (TAIL_FIRST, ONE_STEP):
                provider = stores.history_provider()
                assert isinstance(provider, LogHistoryProvider)
                if mode == TAIL_FIRST:
                    provider._unseen._driver = None  # pyright: ignore[reportPrivateUsage]
                started = time.perf_counter()
                await provider.save_messages(mode, _turn(mode, n))
                times[mode].append(time.perf_counter() - started)
    return times


def main() -> None:
    """Run, print and write the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--saves", type=int, default=400, help="cold saves per mode (default 400)")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "postgresql")
    args = parser.parse_args()
    with local_postgresql() as server:
        times = asyncio.run(measure(server.url, args.saves))
        description = server.description
    one, two = statistics.median(times[ONE_STEP]), statistics.median(times[TAIL_FIRST])
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    lines = [
        "# A save through a provider that remembers nothing of the session",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average at the end {load} (other work shared the machine)",
        f"- server: {description}; {args.saves} cold saves of one 2-message turn per mode, interleaved",
        "",
        "| save | median µs | x one step |",
        "|---|---:|---:|",
        f"| {ONE_STEP} | {one * 1e6:,.0f} | 1.00x |",
        f"| {TAIL_FIRST} | {two * 1e6:,.0f} | {two / one:.2f}x |",
        "",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "postgresql-cold-save.md").write_text("\n".join(lines))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
