"""Figures of the reliability runs: what each kill, limit and restart test measured.

A test calls :func:`record` with one JSON object; when ``AGENT_STORES_RELIABILITY_FIGURES``
names a file, the object is appended to it as one line. ``reliability_figures.jsonl`` beside
this file is such a run's output, and ``docs/reliability.md``'s tables are built from it by
:func:`tables` (a test checks that they match).
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

FIGURES_ENV = "AGENT_STORES_RELIABILITY_FIGURES"
RECORDED = Path(__file__).with_name("reliability_figures.jsonl")

_lock = threading.Lock()


def record(entry: Mapping[str, Any]) -> None:
    """Append ``entry`` to ``$AGENT_STORES_RELIABILITY_FIGURES`` (nothing when it is unset)."""
    path = os.environ.get(FIGURES_ENV)
    if not path:
        return
    with _lock, open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(dict(entry), sort_keys=True) + "\n")


def load(path: Path = RECORDED) -> list[dict[str, Any]]:
    """The entries of a figures file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


_BACKEND_ORDER = ["sqlite", "redis", "mongodb", "s3", "fsspec", "postgresql"]

#: Per suite: the table's columns, as (heading, field).
COLUMNS: dict[str, list[tuple[str, str]]] = {
    "kills": [
        ("Rounds", "rounds"),
        ("Processes", "processes"),
        ("SIGKILLs", "kills"),
        ("Saves acknowledged", "acknowledged"),
        ("Messages stored (2 a save)", "stored"),
        ("Saves that gave up (conflict), retried", "conflicts"),
        ("Lost", "lost"),
        ("Duplicated", "duplicated"),
        ("Exclusive creators", "creators"),
    ],
    "kill-delete": [
        ("Rounds", "rounds"),
        ("Saves before the delete", "saves"),
        ("Killed before the delete returned", "killed_before_return"),
        ("Killed past its commit point", "committed"),
        ("Objects/batches holding the deleted text after the kill", "left_by_kill"),
        ("Finished by", "finishers"),
        ("Deleted messages readable after", "readable_after"),
        ("Objects/batches holding the deleted text after", "holding_after"),
        ("Orphan batches/tombstones after", "orphans_after"),
    ],
    "kill-cas": [
        ("Rounds", "rounds"),
        ("Processes", "processes"),
        ("SIGKILLs", "kills"),
        ("Increments acknowledged", "acknowledged"),
        ("Counter at the end", "counter"),
        ("In-flight increments of killed writers applied", "in_flight_applied"),
        ("Conflicts retried", "conflicts"),
        ("Lost updates", "lost"),
        ("Applied twice", "duplicated"),
    ],
    "limits": [
        ("Message round-trip (bytes)", "message_bytes"),
        ("File round-trip (bytes)", "file_bytes"),
        ("Session: messages imported, windowed, counted, deleted", "session_messages"),
        ("Files in one folder: written, listed, globbed, searched, deleted", "folder_files"),
        ("Search of the whole folder", "search_all"),
        ("Refused before the write", "refused"),
        ("Half-written after a refusal", "half_written"),
    ],
    "restarts": [
        ("Server", "server"),
        ("Saves acknowledged", "acknowledged"),
        ("Failed with StoreUnavailableError", "unavailable"),
        ("Slowest failure (s)", "slowest_failure_s"),
        ("Other errors", "other_errors"),
        ("Lost", "lost"),
        ("Duplicated", "duplicated"),
        ("Same store object works after", "works_after"),
    ],
}


_TITLES = {
    "kills": "Killed processes (`test_reliability_kills.py`)",
    "kill-delete": "A delete killed half-way (`test_reliability_kills.py`)",
    "kill-cas": "Compare-and-set writers killed (`test_reliability_kills.py`)",
    "limits": "Limits (`test_reliability_limits.py`)",
    "restarts": "Server restarts (`test_reliability_restarts.py`)",
}


def _cell(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def tables(entries: Iterable[Mapping[str, Any]]) -> str:
    """The Markdown tables of ``entries``: one per suite, one row per backend (runs of a backend summed)."""
    by_suite: dict[str, dict[str, dict[str, Any]]] = {}
    for entry in entries:
        rows = by_suite.setdefault(str(entry["suite"]), {})
        row = rows.setdefault(str(entry["backend"]), {})
        for key, value in entry.items():
            if isinstance(value, int) and not isinstance(value, bool) and key in row and key not in _NOT_SUMMED:
                row[key] += value
            elif isinstance(value, bool) and key in row:
                row[key] = row[key] and value
            else:
                row[key] = value
    out: list[str] = []
    for suite, columns in COLUMNS.items():
        rows = by_suite.get(suite)
        if not rows:
            continue
        out.append(f"**{_TITLES[suite]}**\n")
        out.append("| Backend | " + " | ".join(h for h, _ in columns) + " |")
        out.append("|---|" + "---:|" * len(columns))
        for backend in sorted(rows, key=lambda b: [*_BACKEND_ORDER, b].index(b)):
            cells = [_cell(rows[backend].get(field)) for _, field in columns]
            out.append(f"| {backend} | " + " | ".join(cells) + " |")
        out.append("")
    return "\n".join(out).rstrip() + "\n"


#: Fields that describe a run rather than count something: never summed across runs.
_NOT_SUMMED = {"processes", "message_bytes", "file_bytes", "saves", "session_messages", "piece", "folder_files"}


DOC = Path(__file__).resolve().parents[2] / "docs" / "reliability.md"
START, END = "<!-- figures: start (built from tests/reliability/reliability_figures.jsonl) -->", "<!-- figures: end -->"


def documented(doc: Path = DOC) -> str:
    """The figures block of ``docs/reliability.md`` (between its markers)."""
    text = doc.read_text(encoding="utf-8")
    return text[text.index(START) + len(START) : text.index(END)].strip() + "\n"


def rewrite(doc: Path = DOC, recorded: Path = RECORDED) -> None:
    """Replace the figures block of ``doc`` with the tables of ``recorded``."""
    text = doc.read_text(encoding="utf-8")
    head, tail = text[: text.index(START) + len(START)], text[text.index(END) :]
    doc.write_text(f"{head}\n\n{tables(load(recorded))}\n{tail}", encoding="utf-8")


if __name__ == "__main__":
    rewrite()
