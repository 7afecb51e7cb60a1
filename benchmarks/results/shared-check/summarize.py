"""Print the tables of README.md from the runs beside it: history loads (pre, main, after) and 100 agents."""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


def history() -> None:
    runs: dict[tuple[str, int], dict[str, Any]] = {}
    for path in HERE.glob("history/*-*/history.json"):
        found = re.fullmatch(r"(\w+)-(\d+)", path.parent.name)
        assert found is not None
        runs[(found[1], int(found[2]))] = {s["name"]: s for s in json.loads(path.read_text())["stores"]}
    rounds = sorted({r for _, r in runs})
    sides = ["pre", "main", "after"]
    names = list(runs[("after", rounds[0])])
    print(f"history: {len(rounds)} rounds of each checkout, alternating")
    print(f"| row | metric | {' | '.join(sides)} | after ÷ pre | after ÷ main |")
    print("|---|---|" + "---:|" * (len(sides) + 2))
    for name in names:
        for metric in ("loads_per_s", "loads_per_cpu_s", "load_vs_floor"):

            def value(stats: dict[str, Any], metric: str = metric) -> float:
                return stats[metric] if metric == "load_vs_floor" else statistics.median(stats["samples"][metric])

            medians = {s: statistics.median(value(runs[(s, r)][name]) for r in rounds) for s in sides}
            paired = {
                base: statistics.median(value(runs[("after", r)][name]) / value(runs[(base, r)][name]) for r in rounds)
                for base in ("pre", "main")
            }
            form = "{:.2f}" if metric == "load_vs_floor" else "{:,.0f}"
            shown = " | ".join(form.format(medians[s]) for s in sides)
            print(f"| {name} | {metric} | {shown} | {paired['pre']:.2f} | {paired['main']:.2f} |")


def many() -> None:
    rows: dict[tuple[str, str], dict[int, dict[str, Any]]] = {}
    for path in HERE.glob("many/*-r*/many_agents.json"):
        found = re.fullmatch(r"(\w+)-r(\d+)", path.parent.name)
        assert found is not None
        for row in json.loads(path.read_text())["rows"]:
            rows.setdefault((found[1], row["store"]), {})[int(found[2])] = row
    print("\n100 agents on one Redis, medians of the rounds")
    print("| checkout | store | steps/s | p99 ms | collector | full collections | client CPU µs per step |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for (side, store), by_round in sorted(rows.items()):
        items = list(by_round.values())

        def med(key: str, items: list[dict[str, Any]] = items) -> float:
            return statistics.median(r[key] for r in items)

        cpu = statistics.median(1e6 * r["client_cpu"] / r["steps_per_s"] for r in items)
        print(
            f"| {side} | {store} | {med('steps_per_s'):,.0f} | {med('p99_ms'):.0f} | {med('collector'):.0%} |"
            f" {med('full_collections'):.1f} | {cpu:.0f} |"
        )
    for side in ("main", "after"):
        ours = rows[(side, "ours: RedisHistoryProvider")]
        peer = rows[(side, "openai-agents RedisSession")]
        ratios = [ours[r]["steps_per_s"] / peer[r]["steps_per_s"] for r in sorted(ours)]
        print(f"{side}: ours ÷ RedisSession per round {', '.join(f'{x:.2f}' for x in ratios)}")


if __name__ == "__main__":
    history()
    many()
