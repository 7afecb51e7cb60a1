"""The sealing cost table of ``docs/encryption.md`` quotes the recorded runs under ``benchmarks/results/sealed/``.

Each ratio must equal (to the two decimals shown) the sealed row's ratio in the ``history.json``
of the recorded run that holds it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "encryption.md"
RESULTS = ROOT / "benchmarks" / "results" / "sealed"

# The doc's backend label -> the sealed row of the recorded runs.
SEALED = {
    "SQLite": "ours: sealed SQLite (AES-256-GCM)",
    "Redis": "ours: sealed RedisHistoryProvider (AES-256-GCM)",
    "Redis Cluster (3 primaries)": "ours: sealed RedisHistoryProvider on a 3-primary cluster (AES-256-GCM)",
    "MongoDB (stand-in)": "ours: sealed MongoDBHistoryProvider (AES-256-GCM)",
    "S3 (SeaweedFS)": "ours: sealed S3HistoryProvider (AES-256-GCM)",
    "PostgreSQL": "ours: sealed PostgreSQLHistoryProvider (AES-256-GCM)",
    "fsspec (local folder)": "ours: sealed FsspecHistoryProvider (local dir, AES-256-GCM)",
}
COLUMNS = ("append_vs_plain", "append_cpu_vs_plain", "load_vs_plain", "load_cpu_vs_plain")


def _recorded() -> dict[str, dict[str, Any]]:
    stores: dict[str, dict[str, Any]] = {}
    for path in sorted(RESULTS.glob("history-*/history.json")):
        for store in json.loads(path.read_text(encoding="utf-8"))["stores"]:
            if store.get("plain") and store["status"] == "ok":
                stores[store["name"]] = store
    return stores


def test_the_cost_table_quotes_the_recorded_sealed_runs() -> None:
    text = DOC.read_text(encoding="utf-8")
    start = text.index("## Cost")
    end = text.find("\n## ", start + 1)
    section = text[start:] if end == -1 else text[start:end]
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| backend")]
    assert {row.split("|")[1].strip() for row in rows} == set(SEALED)
    recorded = _recorded()
    for row in rows:
        cells = [cell.strip() for cell in row.split("|")[1:-1]]
        store = recorded[SEALED[cells[0]]]
        assert cells[1:] == [f"{store[column]:.2f}x" for column in COLUMNS], cells[0]
