"""The object log's fault clauses on a local folder: interrupted erasure, lost answers, checkpoints, busy logs."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fsspec.implementations.local import LocalFileSystem  # pyright: ignore[reportMissingTypeStubs]

from agent_stores.fsspec import FsspecObjectDriver
from agent_stores.testing.objectlog_faults import ObjectLogFaults


class TestLocalObjectLogFaults(ObjectLogFaults):
    @pytest.fixture
    def objects_factory(self, tmp_path: Path) -> Callable[[], FsspecObjectDriver]:
        return lambda: FsspecObjectDriver(LocalFileSystem(), str(tmp_path / "root"), markers=False)
