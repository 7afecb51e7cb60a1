"""Importing the library and running the examples prints no warning; a user's own experimental uses still warn.

Our stores subclass the framework's experimental ``AgentFileStore`` and ``SessionStore``; the
framework's notice about defining those subclasses is filtered where the classes are defined
(``agent_stores.core._experimental``), never by a global filter and never through a private
framework module.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").rglob("*.py"))
PACKAGES = [
    "agent_stores.core",
    "agent_stores.sqlite",
    "agent_stores.redis",
    "agent_stores.mongodb",
    "agent_stores.s3",
    "agent_stores.fsspec",
    "agent_stores.testing",
    "agent_stores.cli",
]


def _python(code: str, *, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "error::Warning", "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_importing_every_package_prints_nothing() -> None:
    done = _python(f"import {', '.join(PACKAGES)}")
    assert done.returncode == 0 and done.stderr == "", done.stderr


@pytest.mark.parametrize("path", EXAMPLES, ids=[str(p.relative_to(ROOT / "examples")) for p in EXAMPLES])
def test_every_example_defines_itself_without_a_warning(path: Path) -> None:
    """Each example's imports and definitions under ``-W error::Warning`` (running it needs a server or a model
    for some; the docs tests and each backend's tests run them)."""
    done = _python(f"import runpy, sys; sys.path.insert(0, {str(path.parent)!r}); runpy.run_path({str(path)!r})")
    assert done.returncode == 0 and done.stderr == "", done.stderr
    private = re.findall(r"^\s*(?:from|import) agent_framework\._\w+", path.read_text(), re.M)
    assert not private, f"examples/{path.name} imports a private framework module: {private}"


def test_a_users_own_experimental_use_still_warns(tmp_path: Path) -> None:
    """No global filter: the framework's notices about what the user does stay the framework's to give."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import agent_stores.core\nfrom agent_framework import FileHistoryProvider\nFileHistoryProvider('history')",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "ExperimentalWarning: [FILE_HISTORY] FileHistoryProvider is experimental" in done.stderr, done.stderr
