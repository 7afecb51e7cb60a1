"""The compaction benchmark still runs end to end and reports every store (a few turns; no timing asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_compaction_benchmark_reports_every_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import compaction_bench  # pyright: ignore[reportMissingImports]

    compaction_bench.main(["--turns", "16", "--loads", "1", "--out", str(tmp_path)])
    rows = json.loads((tmp_path / "compaction.json").read_text())["rows"]
    by = {(r["strategy"], r["store"]): r for r in rows}
    assert len(by) == 8
    reference = by[("summarization", "framework InMemoryHistoryProvider")]
    stored = by[("summarization", "ours: SQLite, compaction stored")]
    unstored = by[("summarization", "ours: SQLite, compaction not stored")]
    assert stored["summaries"] == reference["summaries"] < unstored["summaries"]
    assert stored["tokens_last_call"] == reference["tokens_last_call"]
    assert "| summarization | ours: SQLite, compaction stored | 16 |" in (tmp_path / "compaction.md").read_text()
