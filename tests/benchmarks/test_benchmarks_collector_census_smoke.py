"""The collector census runs end to end, tiny, on a local Redis, and counts what it promises (no timing asserted)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_collector_census_reports_collections_and_promoted_objects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import collector_census  # pyright: ignore[reportMissingImports]

    args = ["--agents", "3", "--steps", "2", "--session", "10", "--window", "4", "--reps", "1", "--out", str(tmp_path)]
    collector_census.main(args)

    summary = json.loads((tmp_path / "collector_census.json").read_text())
    peer = "openai-agents RedisSession"
    if importlib.util.find_spec("agents") is None:  # the peer comes with the bench group only
        assert summary["skipped"] == {peer: "not installed (agents)"}
        assert [row["store"] for row in summary["rows"]] == ["ours: RedisHistoryProvider"]
    else:
        assert summary["skipped"] == {}
        assert [row["store"] for row in summary["rows"]] == ["ours: RedisHistoryProvider", peer]
    for row in summary["rows"]:
        assert row["steps"] == 6
        assert len(row["collections_per_1000_steps"]) == 3
        assert row["promoted_per_step"] == pytest.approx(sum(row["promoted_by_type"].values()))
    assert "| ours: RedisHistoryProvider | 1 |" in (tmp_path / "collector_census.md").read_text()
