"""The figures in ``docs/reliability.md`` are the ones a run recorded in ``reliability_figures.jsonl``."""

from __future__ import annotations

from reliability_figures import COLUMNS, RECORDED, documented, load, tables
from reliability_support import BACKENDS


def test_the_documented_figures_are_the_recorded_ones() -> None:
    entries = load(RECORDED)
    assert {e["suite"] for e in entries} == set(COLUMNS), "the recorded run lacks a suite"
    for suite in ("kills", "kill-delete", "kill-cas"):
        assert {e["backend"] for e in entries if e["suite"] == suite} == set(BACKENDS)
    assert documented() == tables(entries), (
        "docs/reliability.md's figures differ from tests/reliability/reliability_figures.jsonl: "
        "run `python tests/reliability/reliability_figures.py` to rebuild them"
    )


def test_the_recorded_run_lost_and_duplicated_nothing() -> None:
    for entry in load(RECORDED):
        assert entry.get("lost", 0) == 0 and entry.get("duplicated", 0) == 0, entry
        assert entry.get("half_written", 0) == 0 and entry.get("other_errors", 0) == 0, entry
        assert not entry.get("readable_after") and not entry.get("holding_after") and not entry.get("orphans_after")
