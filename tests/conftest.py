"""Shared pytest configuration: report which SQLite library the run used.

The real-server fixtures of each backend live in that backend's folder: ``tests/redis/conftest.py``,
``tests/s3/conftest.py``, ``tests/mongodb/conftest.py``. Fixtures every folder uses live here:
``run_example`` runs a file of ``examples/`` in its own process, as a user would;
``check_translation`` checks one row of a backend's ``translate()`` table; ``reads_not_found``
checks that a store opened with ``must_exist`` refuses every kind of read.
"""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import pytest


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """Workers for ``-n auto`` (the project's default): one per core, and one more.

    The tests spend part of their time waiting on their servers, so a worker per core leaves the
    cores partly idle (2 cores: 12 min 45 s with 2 workers, 10 min 35 s with 3).
    """
    del config
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores + 1


def pytest_report_header() -> str:
    return f"sqlite: SQLite {sqlite3.sqlite_version} (Python sqlite3 module, used by aiosqlite)"


EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


class TranslationCheck(Protocol):
    def __call__(
        self, err: BaseException, translated: Exception | None, expected: type[Exception] | None, *, prefix: str
    ) -> None: ...


class NotFoundCheck(Protocol):
    async def __call__(self, url: str, match: str, **options: Any) -> None: ...


class ExampleRunner(Protocol):
    def __call__(self, name: str, *args: str, env: Mapping[str, str] | None = None) -> str: ...


@pytest.fixture
def run_example() -> ExampleRunner:
    """Run ``examples/<name>`` in a new Python process with ``args``, every warning an error; return its stdout."""

    def run(name: str, *args: str, env: Mapping[str, str] | None = None) -> str:
        done = subprocess.run(
            [sys.executable, "-W", "error::Warning", str(EXAMPLES / name), *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env={**os.environ, **(env or {})},
        )
        assert done.returncode == 0, f"examples/{name} {' '.join(args)} failed:\n{done.stderr}"
        return done.stdout

    return run


@pytest.fixture
def check_translation() -> TranslationCheck:
    """Check what a backend's ``translate()`` made of ``err``: exactly ``expected``, or ``None`` when ``expected`` is.

    A ``StoreError`` expected means that class itself (never ``StoreUnavailableError``: a refusal
    is not retried). The message starts with ``prefix`` (the operation and the store it names).
    """

    def check(
        err: BaseException, translated: Exception | None, expected: type[Exception] | None, *, prefix: str
    ) -> None:
        if expected is None:
            assert translated is None, f"{err!r} must propagate unchanged, got {translated!r}"
            return
        assert type(translated) is expected, f"{err!r} -> {translated!r}"
        assert str(translated).startswith(prefix), translated

    return check


@pytest.fixture
def reads_not_found() -> NotFoundCheck:
    """Open ``url`` with ``must_exist`` (and ``options``); check every kind of read raises ``StoreNotFoundError``.

    History, files, sessions, a tenant's files and the object driver, each matching ``match``.
    """
    from agent_stores.core import StoreNotFoundError, open_stores

    async def check(url: str, match: str, **options: Any) -> None:
        async with open_stores(url, must_exist=True, **options) as stores:
            reads = {
                "history": lambda: stores.history_provider().get_messages("s"),
                "files": lambda: stores.file_store().list_children(""),
                "sessions": lambda: stores.session_store().get("s"),
                "a tenant's files": lambda: stores.tenant("acme").file_store().read("a.md"),
                "objects": lambda: stores.object_driver().list(""),
            }
            refused = {kind: await _refusal(read, StoreNotFoundError) for kind, read in reads.items()}
            missed = [kind for kind, err in refused.items() if err is None or not re.search(match, str(err))]
            assert not missed, f"reads that did not refuse the missing store as {match!r}: {missed} ({refused})"

    return check


async def _refusal(read: Callable[[], Awaitable[object]], error: type[Exception]) -> Exception | None:
    """The ``error`` that ``read()`` raised, or ``None`` when it returned."""
    try:
        await read()
    except error as err:
        return err
    return None
