"""Shared pytest configuration: report which SQLite library the run used.

The real-server fixtures of each backend live in that backend's folder: ``tests/redis/conftest.py``,
``tests/s3/conftest.py``, ``tests/mongodb/conftest.py``.
"""

from __future__ import annotations

import sqlite3


def pytest_report_header() -> str:
    return f"sqlite: SQLite {sqlite3.sqlite_version} (Python sqlite3 module, used by aiosqlite)"
