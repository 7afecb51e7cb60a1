"""A third-party author's zero-configuration run of the suites prints no warning, even under ``-W error``.

A fresh project (no ``pytest.ini``, no ``pyproject.toml``, no ``conftest.py``) subclasses the
suites over the core's in-process drivers and runs pytest in a subprocess, as an author would:
no pytest-asyncio loop-scope notice, no experimental-feature notice from the framework.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROJECT = """
import pytest

from agent_stores.core import LogHistoryProvider, ObjectAgentFileStore, ObjectSessionStore
from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver
from agent_stores.testing import (
    FileStoreCapabilities,
    FileStoreConformance,
    HistoryCapabilities,
    HistoryProviderConformance,
    SessionStoreCapabilities,
    SessionStoreConformance,
)


class TestHistory(HistoryProviderConformance):
    capabilities = HistoryCapabilities()

    @pytest.fixture
    def history_factory(self):
        log = MemoryLogDriver()
        return lambda **options: LogHistoryProvider(log, **options)


class TestFiles(FileStoreConformance):
    capabilities = FileStoreCapabilities(case_sensitive=True)

    @pytest.fixture
    def file_store_factory(self):
        objects = MemoryObjectDriver()
        return lambda **options: ObjectAgentFileStore(objects, **options)


class TestSessions(SessionStoreConformance):
    capabilities = SessionStoreCapabilities()

    @pytest.fixture
    def session_store_factory(self):
        objects = MemoryObjectDriver()
        return lambda: ObjectSessionStore(objects)
"""


def test_a_run_with_no_configuration_prints_no_warning(tmp_path: Path) -> None:
    (tmp_path / "test_my_store.py").write_text(PROJECT)
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "error", "--rootdir", str(tmp_path)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "passed" in output
    assert "warning" not in output.lower(), output[-4000:]
