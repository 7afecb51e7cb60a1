"""Paired save rates of main and branch runs of ``checkpoints_bench.py`` in one results folder.

Usage: ``python summarize.py FOLDER`` (a folder holding ``main-N.json`` and ``branch-N.json``).
"""

import json
import statistics
import sys
from pathlib import Path


def main() -> None:
    folder = Path(sys.argv[1])
    data: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for path in sorted(folder.glob("*-*.json")):
        side = path.stem.split("-")[0]
        for store in json.loads(path.read_text())["stores"]:
            if store["status"] == "ok":
                data.setdefault(store["name"], {}).setdefault(side, []).append(
                    (store["saves_per_s"], store["save_vs_floor"])
                )
    header = ["store", "main saves/s (runs)", "branch saves/s (runs)", "branch / main (median, paired)"]
    print("| " + " | ".join([*header, "x floor main", "x floor branch"]) + " |")
    print("|---|---|---|---:|---:|---:|")
    for name, sides in data.items():
        if "floor" in name:
            continue
        before, after = sides["main"], sides["branch"]
        ratio = statistics.median(b[0] / m[0] for m, b in zip(before, after, strict=True))
        floor_before = statistics.median(x[1] for x in before)
        floor_after = statistics.median(x[1] for x in after)
        runs_before = ", ".join(f"{x[0]:,.0f}" for x in before)
        runs_after = ", ".join(f"{x[0]:,.0f}" for x in after)
        print(f"| {name} | {runs_before} | {runs_after} | {ratio:.2f}x | {floor_before:.2f}x | {floor_after:.2f}x |")


if __name__ == "__main__":
    main()
