"""The many-agents benchmark runs end to end, tiny, and reports every row (no timing asserted).

CI runs it on the backends whose servers start in a second (Redis, SQLite, the MongoDB stand-in,
a local folder); the recorded run adds the cluster and S3.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
BACKENDS = ("redis", "sqlite", "mongodb", "fsspec")


def test_many_agents_benchmark_reports_every_store_and_agent_count(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import many_agents_bench  # pyright: ignore[reportMissingImports]

    args = [
        "--agents",
        "1,3",
        "--steps",
        "2",
        "--reps",
        "2",
        "--session",
        "10",
        "--window",
        "4",
        "--idle",
        "2,5",
        "--backends",
        ",".join(BACKENDS),
        "--out",
        str(tmp_path),
    ]
    many_agents_bench.main(args)

    summary = json.loads((tmp_path / "many_agents.json").read_text())
    markdown = (tmp_path / "many_agents.md").read_text()
    stores = [factory for factory in many_agents_bench.STORES if factory.backend in BACKENDS]
    assert {factory.backend for factory in stores} == set(BACKENDS)
    expected = {(factory.name, agents) for factory in stores for agents in (1, 3)}
    assert {(row["store"], row["agents"]) for row in summary["rows"]} == expected
    ours_names = {many_agents_bench.OURS[backend].name for backend in BACKENDS}
    for row in summary["rows"]:
        if row["store"] in ours_names:
            assert row["status"] == "ok"
        if row["status"] != "ok":
            assert row["status"].startswith("not installed"), row
            continue
        assert row["steps"] == row["agents"] * 2
        assert row["steps_per_s"] > 0
        assert row["p50_ms"] <= row["p99_ms"]
        # two steps per agent: the p99 after step 1 is of the second steps
        assert row["p99_warm_ms"] > 0 and all(sample["p99_warm_ms"] > 0 for sample in row["samples"])
        assert row["client_cpu"] > 0
        assert 0 <= row["collector"] < 1 and row["full_collections"] >= 0
        assert isinstance(row["tracked_per_agent"], float)
        assert row["idle_session_bytes"] is not None
        assert f"| {row['agents']} | {row['store']} |" in markdown
    ours = [r for r in summary["rows"] if r["store"] in ours_names]
    assert len(ours) == 2 * len(BACKENDS)
    assert all(0 < r["messages_per_load"] <= 4 for r in ours)  # the window, not the session
    assert all(r["vs_ours"] == pytest.approx(1.0) and len(r["samples"]) == 2 for r in ours)
    for backend in BACKENDS:
        assert f"## {backend}" in markdown


def test_the_collector_threshold_applies_to_the_run_and_is_restored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gc

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import many_agents_bench  # pyright: ignore[reportMissingImports]

    seen: list[int] = []
    step = many_agents_bench.OURS["sqlite"].step

    async def recording(self: object, session_id: str, turn: object) -> int:
        seen.append(gc.get_threshold()[0])
        return await step(self, session_id, turn)

    monkeypatch.setattr(many_agents_bench.OURS["sqlite"], "step", recording)
    before = gc.get_threshold()
    args = ["--agents", "1", "--steps", "2", "--session", "4", "--window", "2", "--idle", "none"]
    many_agents_bench.main([*args, "--backends", "sqlite", "--gc-threshold", "4321", "--out", str(tmp_path)])
    assert seen and set(seen) == {4321}
    assert gc.get_threshold() == before
    summary = json.loads((tmp_path / "many_agents.json").read_text())
    assert summary["config"]["gc_threshold"] == 4321
    assert "young-generation threshold 4321" in (tmp_path / "many_agents.md").read_text()


@pytest.mark.parametrize("mode", ["start", "each-full"])
def test_the_freeze_applies_to_every_row_and_is_undone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    import gc

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import many_agents_bench  # pyright: ignore[reportMissingImports]

    frozen: list[int] = []
    step = many_agents_bench.OURS["sqlite"].step

    async def recording(self: object, session_id: str, turn: object) -> int:
        frozen.append(gc.get_freeze_count())
        return await step(self, session_id, turn)

    monkeypatch.setattr(many_agents_bench.OURS["sqlite"], "step", recording)
    args = ["--agents", "2", "--steps", "2", "--reps", "1", "--session", "10", "--window", "4", "--idle", "none"]
    summary = many_agents_bench.main([*args, "--backends", "sqlite", "--gc-freeze", mode, "--out", str(tmp_path)])

    assert frozen and all(count > 0 for count in frozen), "a step ran with nothing frozen"
    assert gc.get_freeze_count() == 0, "the run left objects frozen"
    assert summary["config"]["gc_freeze"] == mode
    assert "gc.freeze()" in (tmp_path / "many_agents.md").read_text()
    ran = [row for row in summary["rows"] if row["status"] == "ok"]  # a peer not installed has no figures
    assert any(row["store"].startswith("ours") for row in ran)
    assert all(row["tracked_per_agent"] is None or row["tracked_per_agent"] >= 0 for row in ran)


def test_the_collector_clock_counts_full_collections_and_their_time(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import many_agents_bench  # pyright: ignore[reportMissingImports]

    clock = many_agents_bench._CollectorClock()  # pyright: ignore[reportPrivateUsage]
    automatic = gc.isenabled()
    gc.disable()  # only the three collections below
    gc.callbacks.append(clock)
    try:
        gc.collect(0)
        gc.collect(1)
        gc.collect()
    finally:
        gc.callbacks.remove(clock)
        if automatic:
            gc.enable()
    assert clock.full == 1
    assert clock.seconds > 0


def test_the_census_counts_what_each_agent_keeps_alive_and_how_long_it_took(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import many_agents_bench  # pyright: ignore[reportMissingImports]

    census = many_agents_bench._Census(4, midway=1, interval=0.01)  # pyright: ignore[reportPrivateUsage]

    async def agents() -> list[list[int]]:
        census.start()
        kept = [[index] for index in range(4_000)]  # 4,000 tracked lists and the list holding them
        async with asyncio.timeout(60):  # counted on the census's own timer meanwhile, twice at least
            while len(census.counts) < 2:  # noqa: ASYNC110 - the census's timer sets no event
                await asyncio.sleep(census.interval)
        census.stop()
        return kept

    assert len(asyncio.run(agents())) == 4_000
    assert len(census.counts) >= 2
    assert census.per_agent is not None and 1_000 <= census.per_agent < 1_050
    assert census.paused > 0 and census.paused_cpu >= 0
