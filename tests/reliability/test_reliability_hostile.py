"""Hostile input and tenant isolation on SQLite and a local fsspec folder.

The server backends run the same suite in their own folders.

The local folder's clauses also check that nothing is ever created outside the store's root.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_stores.core import open_stores
from agent_stores.testing.hostile import HostileInputSuite, TenantStores


class TestSQLiteHostile(HostileInputSuite):
    @pytest.fixture
    def tenant_stores(self, tmp_path: Path) -> TenantStores:
        return lambda tenant: (open_stores(f"sqlite:///{tmp_path}/agent.db"), {"prefix": f"{tenant}/"})


class TestLocalFolderHostile(HostileInputSuite):
    @pytest.fixture
    def tenant_stores(self, tmp_path: Path) -> Iterator[TenantStores]:
        def tenant_root(tenant: str) -> tuple[Any, dict[str, Any]]:
            return open_stores(f"file://{tmp_path}/roots/{tenant}"), {}

        (tmp_path / "outside").mkdir()
        yield tenant_root
        outside = sorted(p.name for p in tmp_path.iterdir())
        assert outside in (["outside", "roots"], ["outside"]), f"created outside the roots: {outside}"
        assert list((tmp_path / "outside").iterdir()) == []
        roots = {p.name for p in (tmp_path / "roots").iterdir()} if (tmp_path / "roots").exists() else set()
        assert roots <= {"history", "files", "sessions", "checkpoints", "todos", "shapes", "tenant-one", "tenant-two"}
