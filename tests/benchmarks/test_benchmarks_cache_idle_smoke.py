"""The decode cache's idle probes run end to end, tiny (no timing asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_the_idle_cache_probe_shows_the_quiet_sessions_given_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import idle_cache_probe  # pyright: ignore[reportMissingImports]

    out = tmp_path / "probe.json"
    args = ["--small", "2", "--steps", "3", "--agents", "20", "--session", "20", "--window", "6", "--idle", "0.2"]
    idle_cache_probe.main([*args, "--out", str(out)])
    result = json.loads(out.read_text())
    assert result["cache_idle"] == 0.2
    assert result["after_burst"]["cache_charged_mib"] > result["after_idle"]["cache_charged_mib"] > 0
    assert result["after_idle"]["entries"] == 2 * 6  # the two active windows, nothing of the quiet sessions


def test_the_hot_path_probe_runs(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import cache_idle_hot_path  # pyright: ignore[reportMissingImports]

    cache_idle_hot_path.main(["--window", "4", "--loads", "2", "--rounds", "4"])
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(" ")[0] for line in lines] == ["share", "decode"]
