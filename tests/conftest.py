"""Shared pytest configuration: report which SQLite library the run used."""

from __future__ import annotations

import sqlite3

# Real-server fixtures of each backend: tests/conftest_redis.py, conftest_s3.py, mongodb_support.py.
pytest_plugins = ["conftest_redis", "conftest_s3", "mongodb_support"]


def pytest_report_header() -> str:
    return f"sqlite: SQLite {sqlite3.sqlite_version} (Python sqlite3 module, used by aiosqlite)"
