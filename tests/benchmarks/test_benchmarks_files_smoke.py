"""The file-store benchmark still runs end to end and reports every store (tiny sizes; no timing asserted)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


def test_files_benchmark_runs_and_reports_every_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import _file_subjects  # pyright: ignore[reportMissingImports]
    import files_bench  # pyright: ignore[reportMissingImports]

    files_bench.main(["--files", "20", "--reps", "1", "--out", str(tmp_path), "--tmpdir", str(tmp_path)])

    summary = json.loads((tmp_path / "files.json").read_text())
    markdown = (tmp_path / "files.md").read_text()
    stores = {store["name"]: store for store in summary["stores"]}
    assert set(stores) == {factory().name for factory in _file_subjects.FILE_SUBJECTS}
    for name, store in stores.items():
        assert store["status"] == "ok", f"{name}: {store['status']}"
        assert all(store["rates"][op] > 0 for op in files_bench.OPERATIONS), name
        assert f"| {name} |" in markdown
    reference = stores[_file_subjects.REFERENCE]
    assert all(ratio == pytest.approx(1.0) for ratio in reference["vs_reference"].values())


def test_the_workload_has_the_promised_shape() -> None:
    import sys

    sys.path.insert(0, str(BENCHMARKS))
    try:
        import files_bench  # pyright: ignore[reportMissingImports]
    finally:
        sys.path.remove(str(BENCHMARKS))
    files = files_bench.make_files(1000)
    assert len(files) == 1000
    assert len({path.rsplit("/", 1)[0] for path in files}) == 10
    assert sum("needle" in text for text in files.values()) == 10
    assert 1000 < sum(len(text) for text in files.values()) / 1000 < 2000
