"""The migrate benchmark runs end to end, tiny, on real Redis and S3 servers (no timing asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_migrate_benchmark_copies_everything_at_each_concurrency(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import migrate_bench  # pyright: ignore[reportMissingImports]

    migrate_bench.main(["--sessions", "6", "--messages", "4", "--concurrency", "1", "4", "--out", str(tmp_path / "m")])
    summary = json.loads((tmp_path / "m.json").read_text())
    assert [row["concurrency"] for row in summary["rows"]] == [1, 4]
    assert all(row["items"] == 12 for row in summary["rows"]), "6 histories and 6 snapshots each time"
    assert summary["rows"][0]["speedup_vs_first"] == pytest.approx(1.0)
    assert "| 4 |" in (tmp_path / "m.md").read_text()
    assert set(summary["servers"]) == {"redis", "s3"}
