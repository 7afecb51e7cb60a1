"""The README's performance figures are the recorded runs' figures, never typed by hand.

The table's ratios must equal (to the two decimals shown) the ratios in the ``history.json``
beside the results file the README cites, and the many-agents sentence must quote the
recorded ``many_agents.json`` it links.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"

# README backend label -> the row of ours in the recorded run.
OURS = {
    "SQLite": "ours: SQLiteHistoryProvider",
    "Redis": "ours: RedisHistoryProvider",
    "Redis, 3-primary cluster": "ours: RedisHistoryProvider on a 3-primary cluster",
    "MongoDB (stand-in server)": "ours: MongoDBHistoryProvider",
    "S3 (SeaweedFS)": "ours: S3HistoryProvider",
    "fsspec local folder": "ours: FsspecHistoryProvider (local dir)",
    "PostgreSQL": "ours: PostgreSQLHistoryProvider",
}
# How the README names a peer -> its row.
PEERS = {
    "openai-agents `SQLiteSession`": "openai-agents SQLiteSession",
    "`agent-framework-redis`": "agent-framework-redis RedisHistoryProvider",
    "openai-agents `RedisSession`": "openai-agents RedisSession",
    "openai-agents `MongoDBSession`": "openai-agents MongoDBSession",
    "`community-agent-framework-postgres`": "community-agent-framework-postgres PostgresHistoryProvider",
    "openai-agents `SQLAlchemySession`": "openai-agents SQLAlchemySession (asyncpg)",
}


def _performance_section() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("## Performance")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _cited(section: str, name: str) -> Path:
    found = re.findall(r"\]\((benchmarks/results/[^)]*" + re.escape(name) + r")\)", section)
    assert found, f"the README's performance section cites no {name}"
    path = ROOT / found[0]
    assert path.is_file(), f"the README cites {found[0]}, which does not exist"
    return path


def _two(value: float) -> str:
    return f"{value:.2f}"


def test_the_performance_table_quotes_the_recorded_run() -> None:
    section = _performance_section()
    recorded = json.loads(_cited(section, "history.md").with_suffix(".json").read_text(encoding="utf-8"))
    stores: dict[str, dict[str, Any]] = {s["name"]: s for s in recorded["stores"]}
    rows = [line for line in section.splitlines() if line.startswith("| ") and not line.startswith("| backend")]
    assert {row.split("|")[1].strip() for row in rows} == set(OURS)
    for row in rows:
        backend, _floor, append, load, peers = (cell.strip() for cell in row.strip().strip("|").split("|"))
        ours = stores[OURS[backend]]
        assert ours["status"] == "ok", backend
        assert append == _two(ours["append_vs_floor"]), f"{backend}: append {append} is not the recorded one"
        assert load == _two(ours["load_vs_floor"]), f"{backend}: load {load} is not the recorded one"
        for label, name in PEERS.items():
            quoted = re.search(re.escape(label) + r" (\d+\.\d\d)", peers)
            if quoted:
                assert quoted.group(1) == _two(stores[name]["load_vs_floor"]), f"{backend}: {label}"


def test_the_many_agents_sentence_quotes_the_recorded_run() -> None:
    section = _performance_section()
    recorded = json.loads(_cited(section, "many_agents.md").with_suffix(".json").read_text(encoding="utf-8"))
    rows = {r["store"]: r for r in recorded["rows"] if r["agents"] == 100 and r["status"] == "ok"}
    sentence = " ".join(section[section.index("100 agents at once") :].split())
    quoted = {
        "ours": "ours: RedisHistoryProvider",
        "`agent-framework-redis`": "agent-framework-redis RedisHistoryProvider (whole session)",
        "openai-agents `RedisSession`": "openai-agents RedisSession",
    }
    for label, name in quoted.items():
        found = re.search(re.escape(label) + r" ([\d,]+)(?: steps)?/s \(p99 ([\d,]+) ms\)", sentence)
        assert found, f"the many-agents sentence does not quote {label}"
        assert found.group(1) == f"{rows[name]['steps_per_s']:,.0f}", label
        assert found.group(2) == f"{rows[name]['p99_ms']:,.0f}", label
