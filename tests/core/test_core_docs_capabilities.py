"""The capabilities table of docs/conformance.md says what each backend declares, and nothing it does not."""

from __future__ import annotations

import re
from pathlib import Path

from agent_stores.core.lifecycle import adapter_capabilities
from agent_stores.fsspec import FilesystemCapabilities, FsspecBackend
from agent_stores.mongodb import MongoDBBackend
from agent_stores.postgresql import PostgreSQLBackend
from agent_stores.redis import RedisBackend
from agent_stores.s3 import S3Backend
from agent_stores.sqlite import SQLiteBackend

DOC = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"
BACKENDS = {
    "SQLite": SQLiteBackend,
    "Redis": RedisBackend,
    "MongoDB": MongoDBBackend,
    "S3": S3Backend,
    "PostgreSQL": PostgreSQLBackend,
}


def _rows() -> dict[str, str]:
    text = DOC.read_text()
    section = text[text.index("## What our backends declare") :]
    section = section[: section.index("\n## ", 1)]
    return {
        cells[0]: cells[1]
        for line in section.splitlines()
        if line.startswith("| ") and not line.startswith("| backend")
        for cells in [[c.strip() for c in line.strip("|").split("|")]]
    }


def _changed(declared: dict[str, dict[str, object]]) -> set[str]:
    core = adapter_capabilities()
    return {
        f"{suite}.{name}"
        for suite, fields in declared.items()
        for name, v in fields.items()
        if core[suite].get(name) != v
    }


def test_each_backend_row_names_exactly_what_it_declares_differently() -> None:
    rows = _rows()
    assert set(rows) == {*BACKENDS, "fsspec"}
    for name, backend in BACKENDS.items():
        named = set(re.findall(r"`(\w+\.\w+)`", rows[name]))
        changed = _changed(backend.declared_capabilities())
        if name == "SQLite":  # the row names the URL-dependent change too
            changed |= _changed(SQLiteBackend("sqlite://").conformance_capabilities())
        assert named == changed, f"{name}: the doc names {sorted(named)}, the backend declares {sorted(changed)}"


def test_the_fsspec_row_follows_the_filesystem() -> None:
    assert "FilesystemCapabilities.suites" in _rows()["fsspec"]
    local = FsspecBackend.declared_on(FilesystemCapabilities.local())
    memory = FsspecBackend.declared_on(FilesystemCapabilities.memory(), processes=False)
    assert local["history"]["multi_process"] and not memory["history"]["multi_process"]
    assert local["files"]["long_names"] is False  # a local name stops at 255 bytes
