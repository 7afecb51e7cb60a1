"""The checkpoint benchmark runs end to end, tiny, and reports every row (no timing asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
ALWAYS_AVAILABLE = {
    "framework FileCheckpointStorage",
    "framework InMemoryCheckpointStorage",
    "SQLite: raw driver (floor)",
    "SQLite: ours",
    "fsspec local dir: raw driver (floor)",
    "fsspec local dir: ours",
}


def test_checkpoint_benchmark_reports_every_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import checkpoints_bench  # pyright: ignore[reportMissingImports]

    args = ["--reps", "1", "--saves", "3", "--loads", "3", "--latest", "2", "--big", "5", "--out", str(tmp_path)]
    checkpoints_bench.main(args)

    summary = json.loads((tmp_path / "checkpoints.json").read_text())
    markdown = (tmp_path / "checkpoints.md").read_text()
    stores = {store["name"]: store for store in summary["stores"]}
    assert set(stores) == {subject.name for subject in checkpoints_bench.SUBJECTS}
    for name, store in stores.items():
        assert f"| {name} |" in markdown
        if store["status"] != "ok":
            assert name not in ALWAYS_AVAILABLE, f"{name}: {store['status']}"
            assert store["status"].startswith(("not installed", "no redis server", "no postgresql server")), name
            continue
        assert store["saves_per_s"] > 0 and store["loads_per_s"] > 0 and store["latest_per_s"] > 0, name
        assert store["big_latest_ms"] > 0 and store["big_list_ids_ms"] > 0, name
        assert store["floor"] in stores, name
        if name == store["floor"]:
            assert store["save_vs_floor"] == pytest.approx(1.0), name
    assert stores["framework FileCheckpointStorage"]["load_vs_file"] == pytest.approx(1.0)
