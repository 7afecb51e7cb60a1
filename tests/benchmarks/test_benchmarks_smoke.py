"""The history benchmark still runs end to end and reports every store (tiny sizes; no timing asserted).

Rows that need a server (Redis) run when the benchmark can start one here (a local binary or a
container) and otherwise report why not; either way every row is accounted for. The PostgreSQL
rows (a database of their own per store and workload: tens of seconds here) are left out with
``--skip``; the recorded run is ``benchmarks/results/postgresql/``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"

# Stores that need nothing beyond the default environment; the others need `uv sync --group bench`.
ALWAYS_AVAILABLE = {
    "raw aiosqlite (floor)",
    "ours: SQLiteHistoryProvider",
    "ours: sealed SQLite (AES-256-GCM)",
    "core in-process (no I/O)",
    "framework FileHistoryProvider",
    "framework InMemoryHistoryProvider",
}


def test_history_benchmark_runs_and_reports_every_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _subjects  # pyright: ignore[reportMissingImports]
    import history_bench  # pyright: ignore[reportMissingImports]

    sizes = (10, 40)
    history_bench.main(
        [
            *("--reps", "1", "--turns", "3", "--loads", "3", "--save-reps", "1", "--saves", "3"),
            *("--sizes", ",".join(map(str, sizes)), "--out", str(tmp_path), "--tmpdir", str(tmp_path)),
            *("--skip", "psycopg"),
        ]
    )
    subjects = [factory for factory in _subjects.SUBJECTS if factory().floor != "raw psycopg (floor)"]

    summary = json.loads((tmp_path / "history.json").read_text())
    markdown = (tmp_path / "history.md").read_text()
    stores = {store["name"]: store for store in summary["stores"]}
    assert set(stores) == {factory().name for factory in subjects}
    for name, store in stores.items():
        if store["status"] != "ok":
            assert name not in ALWAYS_AVAILABLE, f"{name}: {store['status']}"
            assert store["status"].startswith(("not installed", "no redis server", "no redis-cluster server")), name
            assert f"- {name}: {store['status']}" in markdown
            continue
        assert store["append_turns_per_s"] > 0, name
        assert store["loads_per_s"] > 0, name
        assert all(store["save_latency_us"][str(size)] > 0 for size in sizes), name
        assert len(store["save_growth"]) == len(sizes) - 1, name
        assert f"| {name} |" in markdown
    assert stores["raw aiosqlite (floor)"]["append_vs_floor"] == pytest.approx(1.0)
    # Every row is compared with its own floor, and every floor with itself.
    floors = {factory().name: factory().floor for factory in subjects}
    for name, store in stores.items():
        assert store["floor"] == floors[name], name
        if store["status"] == "ok" and stores[store["floor"]]["status"] == "ok" and name == store["floor"]:
            assert store["append_vs_floor"] == pytest.approx(1.0), name
    redis = stores["ours: RedisHistoryProvider"]
    if redis["status"] == "ok":
        assert redis["floor"] == "raw redis-py (floor)" and redis["append_vs_floor"] is not None
        assert "Compared with raw redis-py (floor):" in markdown
