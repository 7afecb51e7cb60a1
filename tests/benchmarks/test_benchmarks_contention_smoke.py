"""The contention benchmark runs end to end, and the figures docs/reliability.md quotes are its recorded runs'."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "benchmarks"
RELIABILITY = ROOT / "docs" / "reliability.md"


def test_contention_benchmark_runs_both_claims_and_checks_what_was_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import contention_bench  # pyright: ignore[reportMissingImports]

    contention_bench.main(
        ["--backends", "fsspec", "--writers", "2", "--saves", "4", "--reps", "1", "--legacy", "--out", str(tmp_path)]
    )
    rows = json.loads((tmp_path / "contention.json").read_text())["rows"]
    assert [(r["backend"], r["claims"]) for r in rows] == [
        ("fsspec", "fair"),
        ("fsspec", "before (read after a lost claim)"),
    ]
    for row in rows:  # the run itself fails on a lost, torn, reordered or doubled save
        assert (row["saves"], row["lost"], row["duplicated"]) == (8, 0, 0)
    assert "| fsspec | fair | 1 | 2 | 8 |" in (tmp_path / "contention.md").read_text()


def _quoted_rows() -> list[list[str]]:
    text = RELIABILITY.read_text()
    block = text[text.index("<!-- contention: start -->") : text.index("<!-- contention: end -->")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in block.splitlines()[3:] if line.startswith("|")]


def _number(cell: str) -> float:
    return float(re.sub(r"[^0-9.]", "", cell.split(" ")[0]))


def test_the_figures_quoted_are_the_recorded_runs() -> None:
    quoted = _quoted_rows()
    assert len(quoted) == 4
    for cells in quoted:
        backend = cells[0].split(" ")[0]
        claims = "fair" if cells[1] == "fair" else "before (read after a lost claim)"
        recorded = json.loads((BENCHMARKS / "results" / f"contention-{backend}.json").read_text())
        row = next(r for r in recorded["rows"] if r["claims"] == claims)
        per_writer = row["saves"] // row["writers"] // row["reps"]
        assert cells[2].split(" \u00d7 ") == [str(row["writers"]), str(per_writer), str(row["reps"])]
        assert _number(cells[3]) == row["gave_up"]
        assert _number(cells[4]) == row["most_attempts"]
        assert _number(cells[6]) == round(row["p50_ms"], 1)
        assert _number(cells[7]) == round(row["p99_ms"])
        assert _number(cells[8]) == round(row["max_ms"])
        assert _number(cells[9]) == round(row["saves_per_s"])
        assert (_number(cells[10]), _number(cells[11])) == (row["lost"], row["duplicated"])
