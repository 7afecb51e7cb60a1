"""The PostgreSQL schema: numbered migrations applied once under an advisory lock, ahead of time or on first use."""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import warnings
from typing import Any

import psycopg
import pytest
from typer.testing import CliRunner

from agent_stores.cli import app
from agent_stores.core import StoreError, StoreNotFoundError, open_stores
from agent_stores.postgresql import (
    SCHEMA_VERSION,
    PostgreSQLDatabase,
    PostgreSQLHistoryProvider,
    migrate_schema,
)
from agent_stores.postgresql._schema import MIGRATIONS

warnings.filterwarnings("ignore", message=r".*is experimental")


def _migrate_in_process(url: str, start: Any, results: Any) -> None:
    start.wait(30)
    try:
        results.put(("ok", asyncio.run(migrate_schema(url))))
    except BaseException as err:  # reported to the parent, which fails the test
        results.put(("error", repr(err)))


def _applied_rows(url: str) -> list[tuple[int, str]]:
    with psycopg.connect(url) as db:
        return [(r[0], r[1]) for r in db.execute("SELECT version, name FROM agent_stores_migrations ORDER BY version")]


def test_two_processes_starting_at_once_apply_each_migration_exactly_once(fresh_postgresql_url: str) -> None:
    context = multiprocessing.get_context("spawn")
    start = context.Event()
    results = context.Queue()
    workers = [
        context.Process(target=_migrate_in_process, args=(fresh_postgresql_url, start, results)) for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    start.set()
    outcomes = [results.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(60)
    assert all(kind == "ok" for kind, _ in outcomes), outcomes
    applied = sorted(version for _, versions in outcomes for version in versions)
    assert applied == [version for version, _, _ in MIGRATIONS]  # each once, by one process or the other
    assert _applied_rows(fresh_postgresql_url) == [(version, name) for version, name, _ in MIGRATIONS]


@pytest.mark.asyncio
async def test_a_store_on_a_migrated_database_applies_nothing_and_works(fresh_postgresql_url: str) -> None:
    every = [version for version, _, _ in MIGRATIONS]
    assert every[-1] == SCHEMA_VERSION
    assert await migrate_schema(fresh_postgresql_url) == every
    assert await migrate_schema(fresh_postgresql_url) == []
    async with PostgreSQLHistoryProvider.from_url(fresh_postgresql_url, must_exist=True) as history:
        assert await history.get_messages("s") == []
        assert await history.database.schema_versions() == every


@pytest.mark.asyncio
async def test_must_exist_creates_nothing_on_an_empty_database(fresh_postgresql_url: str) -> None:
    async with PostgreSQLHistoryProvider.from_url(fresh_postgresql_url, must_exist=True) as history:
        with pytest.raises(StoreNotFoundError, match="holds no agent-stores tables"):
            await history.get_messages("s")
    with psycopg.connect(fresh_postgresql_url) as db:
        assert db.execute("SELECT to_regclass('agent_stores_migrations')").fetchone() == (None,)


@pytest.mark.asyncio
async def test_a_newer_schema_is_refused(fresh_postgresql_url: str) -> None:
    await migrate_schema(fresh_postgresql_url)
    with psycopg.connect(fresh_postgresql_url, autocommit=True) as db:
        db.execute("INSERT INTO agent_stores_migrations (version, name) VALUES (%s, 'from the future')", (999,))
    database = PostgreSQLDatabase.from_url(fresh_postgresql_url)
    try:
        with pytest.raises(StoreError, match="newer than this agent-stores-postgresql supports"):
            await database.fetch("SELECT 1")
    finally:
        await database.aclose()


@pytest.mark.asyncio
async def test_keys_order_in_code_points_on_a_database_whose_collation_is_not_c(fresh_postgresql_url: str) -> None:
    with psycopg.connect(fresh_postgresql_url) as db:
        row = db.execute("SELECT 'a' < 'B', 'a' < 'B' COLLATE \"C\"").fetchone()
    assert row == (True, False), "the fixture's database must not collate in code-point order"
    names = ["b.txt", "B.txt", "a.txt", "_x.txt", "é.txt", "a/b", "a-b"]
    async with open_stores(fresh_postgresql_url) as stores:
        objects = stores.object_driver()
        for name in names:
            await objects.put(name, b"x")
        assert (await objects.list("", delimiter=None)).keys == sorted(names)
        assert (await objects.list("", delimiter=None, after="B.txt")).keys == sorted(n for n in names if n > "B.txt")


def test_the_cli_applies_the_schema_ahead_of_deployment(fresh_postgresql_url: str) -> None:
    first = CliRunner().invoke(app, ["migrate-schema", fresh_postgresql_url, "--json"])
    assert first.exit_code == 0, first.stdout + first.stderr
    assert json.loads(first.stdout)["applied"] == [version for version, _, _ in MIGRATIONS]
    again = CliRunner().invoke(app, ["migrate-schema", fresh_postgresql_url])
    assert again.exit_code == 0, again.stdout + again.stderr
    assert f"schema version {SCHEMA_VERSION} is current" in again.stdout
    assert "***" in again.stdout or "agent_stores@" not in again.stdout


def test_the_cli_says_a_backend_without_a_schema_has_nothing_to_apply(tmp_path: Any) -> None:
    result = CliRunner().invoke(app, ["migrate-schema", "file://" + str(tmp_path), "--json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["supported"] is False


@pytest.mark.asyncio
async def test_a_database_at_schema_2_upgrades_with_its_objects_and_history(fresh_postgresql_url: str) -> None:
    """Migrations 3 and 4 (the load function, keys of any length) keep what version 2 stored, in order."""
    names = ["b.txt", "a/b", "a/c", "é.txt"]
    with psycopg.connect(fresh_postgresql_url, autocommit=True) as db:
        db.execute(
            "CREATE TABLE agent_stores_migrations (version integer PRIMARY KEY, name text NOT NULL, "
            "applied_at timestamptz NOT NULL DEFAULT now())"
        )
        for version, name, statements in MIGRATIONS[:2]:
            for statement in statements:
                db.execute(statement)  # pyright: ignore[reportCallIssue, reportArgumentType]
            db.execute("INSERT INTO agent_stores_migrations (version, name) VALUES (%s, %s)", (version, name))
        for name in names:
            db.execute("INSERT INTO agent_stores_objects (key, data, plain) VALUES (%s, 'x', true)", (name,))
        db.execute(
            "SELECT agent_stores_append('log', 's', NULL, 1, NULL, 0, %s::text[], %s::bytea[])",
            (["d1", "d2"], [b"1", b"2"]),
        )
    assert await migrate_schema(fresh_postgresql_url) == [version for version, _, _ in MIGRATIONS[2:]]
    long_key = "a/" + "x" * 3000 + "/" + "é" * 1000
    async with open_stores(fresh_postgresql_url) as stores:
        objects = stores.object_driver()
        assert (await objects.list("", delimiter=None)).keys == sorted(names)
        assert [(await objects.get(name)) is not None for name in names] == [True] * len(names)
        await objects.put(long_key, b"long")
        assert (await objects.list("a/", delimiter=None)).keys == sorted(["a/b", "a/c", long_key])
        assert (await objects.get(long_key)).data == b"long"  # type: ignore[union-attr]
        log = stores.log_driver()
        assert await log.read("log") == [b"1", b"2"]
        assert await log.read("log", last=1) == [b"2"]
