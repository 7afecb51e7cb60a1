"""Paired main/branch ratios of ``save_cpu_probe.py`` lines tagged by ``run_cpu_probe.sh``.

Usage: ``python summarize_cpu.py [FILE ...]`` (default ``cpu-probe.jsonl``); the pairs of every file are pooled.
"""

import json
import statistics
import sys
from pathlib import Path

rows = []
for number, name in enumerate(sys.argv[1:] or ["cpu-probe.jsonl"]):
    for line in Path(name).read_text().splitlines():
        row = json.loads(line)
        row["run"] += 1000 * number  # runs of different files are different pairs
        rows.append(row)
by = {(r["backend"], r["side"], r["run"]): r for r in rows}
print(
    "| backend | CPU ms/save main | CPU ms/save branch | CPU branch / main "
    "| wall ms/save main | wall ms/save branch | wall branch / main |"
)
print("|---|---:|---:|---:|---:|---:|---:|")
for backend in dict.fromkeys(r["backend"] for r in rows):
    runs = sorted({r["run"] for r in rows if r["backend"] == backend})
    pairs = [(by[(backend, "main", n)], by[(backend, "branch", n)]) for n in runs]
    cells = [backend]
    for metric in ("cpu_ms_per_save", "wall_ms_per_save"):
        main = statistics.median(m[metric] for m, _ in pairs)
        branch = statistics.median(b[metric] for _, b in pairs)
        ratio = statistics.median(b[metric] / m[metric] for m, b in pairs)
        cells += [f"{main:.3f}", f"{branch:.3f}", f"{ratio:.2f}x"]
    print("| " + " | ".join(cells) + " |")
print(
    f"\n{len(runs)} paired runs; medians; load average (1 min) at the runs: "
    f"{min(r['load'] for r in rows):.1f}-{max(r['load'] for r in rows):.1f}"
)
