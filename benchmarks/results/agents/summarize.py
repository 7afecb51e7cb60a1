"""Summarise this folder's many-agents runs: ours ÷ RedisSession per run, paired within each repetition."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> None:
    print(
        "| run | library | agents | ours steps/s | RedisSession steps/s | ours ÷ RedisSession (paired reps)"
        " | p99 ms ours / RS | collector ours / RS | load at end |"
    )
    print("|---|---|---:|---:|---:|---|---|---|---|")
    for path in sorted(HERE.glob("*/many_agents.json"), key=lambda p: p.stat().st_mtime):
        data = json.loads(path.read_text())
        library = "after" if "after" in path.parent.name else "before"
        cache = data["config"].get("cache_bytes")
        for agents in sorted({r["agents"] for r in data["rows"]}):
            rows = {r["store"]: r for r in data["rows"] if r["agents"] == agents}
            ours = rows.get("ours: RedisHistoryProvider")
            theirs = rows.get("openai-agents RedisSession")
            if not ours or not theirs:
                continue
            pairs = zip(ours["samples"], theirs["samples"], strict=False)
            paired = [o["steps_per_s"] / t["steps_per_s"] for o, t in pairs]
            load = str(data["load_average"])
            print(
                f"| {path.parent.name} | {library}{f' cache {cache >> 20} MiB' if cache else ''} | {agents} | "
                f"{ours['steps_per_s']:,.0f} | {theirs['steps_per_s']:,.0f} | "
                f"{statistics.median(paired):.2f}x ({', '.join(f'{p:.2f}' for p in paired)}) | "
                f"{ours['p99_ms']:,.0f} / {theirs['p99_ms']:,.0f} | "
                f"{ours['collector']:.0%} ({ours['full_collections']:.0f} full) / "
                f"{theirs['collector']:.0%} ({theirs['full_collections']:.0f} full) | {load} |"
            )


if __name__ == "__main__":
    sys.exit(main())
