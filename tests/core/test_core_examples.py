"""The examples the README and docs quote run as written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_borrow_or_own_example_runs(tmp_path: Path) -> None:
    """examples/borrow_or_own.py: open_stores, an owned store and a borrowed connection see the same data."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "borrow_or_own.py"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "owned:    ['My name is Ada.']" in done.stdout
    assert "borrowed: ['My name is Ada.']" in done.stdout
