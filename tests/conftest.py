"""Shared pytest configuration: report which SQLite library the run used."""

from __future__ import annotations

import sqlite3


def pytest_report_header() -> str:
    return f"sqlite: SQLite {sqlite3.sqlite_version} (Python sqlite3 module, used by aiosqlite)"


# S3 servers and buckets (session-scoped fixtures in their own module).
pytest_plugins = ["conftest_s3"]
