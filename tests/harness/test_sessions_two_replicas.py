"""Two processes serving concurrent turns of one session through ``update`` lose no state update, on every backend.

Each replica (``benchmarks/session_replicas.py turns``) reads the session, works, adds its own
tag and stores it with ``ObjectSessionStore.update``; both start on one signal on their stdin.
The plain ``get`` + ``set`` they replace loses about half of such updates (see
docs/performance.md, "Sessions served by two replicas").
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agents_support import StoreTarget

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
TURNS = 25


def test_update_from_two_processes_loses_nothing(store_target: StoreTarget, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    import session_replicas  # pyright: ignore[reportMissingImports]

    env = os.environ | store_target.env
    lost = session_replicas.run_replicas(store_target.url, TURNS, "update", env=env, options=store_target.options)  # pyright: ignore[reportUnknownMemberType]
    assert lost == 0, f"{lost} of {2 * TURNS} updates lost on {store_target.backend}"
