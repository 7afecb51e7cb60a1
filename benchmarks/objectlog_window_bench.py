"""The fsspec local-directory load of ``history_bench.py``, before and after tail objects, side by side.

Run: ``uv run benchmarks/objectlog_window_bench.py`` (``--reps 2 --loads 50`` for a short run).

Three stores load the same 20-message session (saved one turn at a time, so ten segment files
for ours) with the load phase of ``history_bench.py`` (``measure_load``: round robin in random
order, fresh directories per repetition): the framework's ``FileHistoryProvider`` (the yardstick),
ours as it is, and ours reading segments only (``tail_after=None``: the read path of logs
without tail objects, as before they existed). Reported: loads/s and each rate ÷
``FileHistoryProvider``'s in the same repetition, medians over repetitions. Writes
``benchmarks/results/objectlog-window-fsspec.json``; nothing asserts a speed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import warnings
from pathlib import Path
from typing import Any

from _payloads import make_turns
from _subjects import FrameworkFile
from _subjects_fsspec import OursFsspecLocal
from history_bench import _LOAD_SESSION_TURNS, measure_load  # pyright: ignore[reportPrivateUsage]

warnings.filterwarnings("ignore")

DEFAULT_OUT = Path(__file__).resolve().parent / "results"


class OursFsspecLocalSegmentsOnly(OursFsspecLocal):
    """``FsspecHistoryProvider`` reading segments only (``tail_after=None``), as logs without tails read."""

    name = "ours: FsspecHistoryProvider, segments only (before tails)"

    async def open(self, directory: Path) -> None:
        await super().open(directory)
        self.provider.driver.tail_after = None  # type: ignore[attr-defined]


async def run(reps: int, loads: int, tmpdir: Path | None) -> dict[str, Any]:
    factories = [FrameworkFile, OursFsspecLocal, OursFsspecLocalSegmentsOnly]
    turns = make_turns(0, _LOAD_SESSION_TURNS)
    rates: dict[str, list[float]] = {f.name: [] for f in factories}
    ratios: dict[str, list[float]] = {f.name: [] for f in factories}
    with tempfile.TemporaryDirectory(dir=tmpdir) as root:
        counter = iter(range(10**6))

        def directory() -> Path:
            path = Path(root) / f"d{next(counter)}"
            path.mkdir()
            return path

        for rep in range(reps):
            found = await measure_load(factories, directory, turns, loads)
            for name, rate in found.items():
                rates[name].append(rate)
                ratios[name].append(rate / found[FrameworkFile.name])
            print(f"repetition {rep + 1}/{reps}: " + ", ".join(f"{n} {r:,.0f}/s" for n, r in found.items()), flush=True)
    return {
        "reps": reps,
        "loads": loads,
        "messages": 2 * _LOAD_SESSION_TURNS,
        "rates": rates,
        "ratios": ratios,
        "median_rate": {n: statistics.median(v) for n, v in rates.items()},
        "median_ratio": {n: statistics.median(v) for n, v in ratios.items()},
    }


def render(results: dict[str, Any]) -> str:
    lines = [
        f"| store | load ({results['messages']} msgs)/s | x FileHistoryProvider | spread of x |",
        "|---|---:|---:|---|",
    ]
    for name, rate in results["median_rate"].items():
        spread = results["ratios"][name]
        lines.append(
            f"| {name} | {rate:,.0f} | {results['median_ratio'][name]:.2f}x | {min(spread):.2f}..{max(spread):.2f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--loads", type=int, default=300)
    parser.add_argument("--tmpdir", type=Path)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args()
    results = asyncio.run(run(args.reps, args.loads, args.tmpdir))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "objectlog-window-fsspec.json").write_text(json.dumps(results, indent=2) + "\n")
    print(render(results))


if __name__ == "__main__":
    main()
