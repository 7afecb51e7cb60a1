"""The no-I/O rows, the memory census and the 1,000-agent probes run end to end, tiny (no timing asserted)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_the_memory_backend_rows_report_ours_and_the_framework_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import many_agents_bench  # pyright: ignore[reportMissingImports]

    args = ["--agents", "3", "--steps", "2", "--reps", "1", "--session", "10", "--window", "4"]
    many_agents_bench.main([*args, "--idle", "none", "--backends", "memory", "--out", str(tmp_path)])

    rows = json.loads((tmp_path / "many_agents.json").read_text())["rows"]
    assert [row["store"] for row in rows] == [
        "ours: memory:// (no I/O)",
        "framework InMemoryHistoryProvider (no I/O)",
    ]
    for row in rows:
        assert row["status"] == "ok" and row["steps"] == 6
        assert row["messages_per_load"] == 4  # the window, for the framework's store too


def test_the_memory_backend_is_not_among_the_default_backends(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import many_agents_bench  # pyright: ignore[reportMissingImports]

    assert "memory" not in many_agents_bench.parse_args([]).backends


def test_the_collector_census_runs_on_the_memory_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import collector_census  # pyright: ignore[reportMissingImports]

    args = ["--agents", "3", "--steps", "2", "--session", "10", "--window", "4", "--reps", "1"]
    collector_census.main([*args, "--backend", "memory", "--stores", "", "--out", str(tmp_path)])

    summary = json.loads((tmp_path / "collector_census.json").read_text())
    assert [row["store"] for row in summary["rows"]] == [
        "ours: memory:// (no I/O)",
        "framework InMemoryHistoryProvider (no I/O)",
    ]
    assert summary["config"]["backend"] == "memory"
    assert "memory server" in (tmp_path / "collector_census.md").read_text()


def test_the_thousand_agents_probe_reports_every_row_against_redis_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("agents")
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import thousand_agents_probe  # pyright: ignore[reportMissingImports]
    from agent_stores.core import codec

    count, decode_new = codec.DecodeCache._count, codec.DecodeCache._decode_new  # pyright: ignore[reportPrivateUsage]
    thousand_agents_probe.main(["--agents", "3", "--steps", "2", "--reps", "1", "--out", str(tmp_path)])

    summary = json.loads((tmp_path / "probe-3-2.json").read_text())
    (rows,) = summary["reps"]
    assert {row["row"] for row in rows} == set(summary["medians"])
    assert next(r for r in rows if r["row"] == "RedisSession")["vs_redis_session"] == 1.0
    # the first step of each agent misses, the second is served from the cache
    assert all(0 < r["hit_rate"] < 1 for r in rows if r["row"] != "RedisSession")
    # the probe puts back what it wraps
    assert (codec.DecodeCache._count, codec.DecodeCache._decode_new) == (count, decode_new)  # pyright: ignore[reportPrivateUsage]


def test_the_tail_probe_attributes_every_step_and_puts_back_what_it_wraps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc
    import gzip

    pytest.importorskip("agents")
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import tail_probe  # pyright: ignore[reportMissingImports]
    from agent_stores.core import codec
    from agent_stores.redis._batching import CommandBatcher  # pyright: ignore[reportPrivateUsage]

    wrapped = (codec.DecodeCache._count, codec.DecodeCache._decode_new, CommandBatcher._send)  # pyright: ignore[reportPrivateUsage]
    args = ["--agents", "3", "--steps", "2", "--session", "10", "--window", "4", "--reps", "2"]
    tail_probe.main([*args, "--gc-freeze", "start", "--out", str(tmp_path)])

    summary = json.loads((tmp_path / "tail.json").read_text())
    assert [[row["row"] for row in rows] for rows in summary["reps"]] == [
        ["ours", "RedisSession"],
        ["RedisSession", "ours"],
    ]
    raw: dict[str, list[dict[str, Any]]] = {}
    for row in (row for rows in summary["reps"] for row in rows):
        assert row["steps"] == 6 and row["p50_ms"] <= row["p99_ms"]
        with gzip.open(tmp_path / row["raw"], "rt") as lines:
            raw[row["raw"]] = [line for line in map(json.loads, lines) if line["kind"] == "step"]
        assert len(raw[row["raw"]]) == 6
    ours = next(row for row in summary["reps"][0] if row["row"] == "ours")
    # each agent's first load decodes its window; the second only the turn the first saved
    assert {(s["number"], s.get("misses", 0)) for s in raw[ours["raw"]]} == {(0, 4), (1, 2)}
    assert (codec.DecodeCache._count, codec.DecodeCache._decode_new, CommandBatcher._send) == wrapped  # pyright: ignore[reportPrivateUsage]
    assert gc.get_freeze_count() == 0, "the probe left objects frozen"


def test_the_window_objects_probe_counts_tracked_objects(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import window_objects_probe  # pyright: ignore[reportMissingImports]

    window_objects_probe.main(["--window", "4"])

    out = capsys.readouterr().out
    assert "ours (framework Message): " in out and "openai-agents RedisSession (dict items): " in out
    assert "Message 1.00" in out  # every loaded message is one tracked Message


def test_the_kept_windows_probe_counts_the_messages_kept_per_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import kept_windows_probe  # pyright: ignore[reportMissingImports]

    automatic = gc.isenabled()
    result = kept_windows_probe.main(["--agents", "3", "--steps", "4", "--session", "20", "--window", "6"])

    assert result["shared_messages_kept_per_agent"] == 6 + 2 * 3  # every window loaded: 4 loads, a turn apart
    assert result["tracked_per_agent"] > 0 and result["full_collection_cpu_ms"] >= 0
    assert gc.isenabled() == automatic, "the probe left the collector switched"
