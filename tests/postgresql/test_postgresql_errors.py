"""``translate()`` of the PostgreSQL backend as a table: each error, made by a real server or libpq, and its class."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from psycopg_pool import PoolTimeout

from agent_stores.core import StoreConflictError, StoreError, StoreUnavailableError
from agent_stores.postgresql._errors import translate
from agent_stores.testing.servers import Server, free_port


def _raised(url: str, *statements: str, **connect: Any) -> BaseException:
    try:
        with psycopg.connect(url, autocommit=True, **connect) as db:
            for statement in statements:
                db.execute(statement)  # pyright: ignore[reportArgumentType]
    except BaseException as err:
        return err
    raise AssertionError("expected the statements to raise")


_TABLE = "CREATE TEMP TABLE t (k text PRIMARY KEY, v bytea)"


def unique_violation(url: str) -> BaseException:
    return _raised(url, _TABLE, "INSERT INTO t VALUES ('a', '')", "INSERT INTO t VALUES ('a', '')")


def our_version_conflict(url: str) -> BaseException:
    return _raised(url, "DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = 'AS409', MESSAGE = 'version'; END $$")


def connection_refused(url: str) -> BaseException:
    return _raised(f"postgresql://agent@127.0.0.1:{free_port()}/db", connect_timeout=2)


def server_shutting_down(url: str) -> BaseException:
    return _raised(url, "SELECT pg_terminate_backend(pg_backend_pid())")


def statement_timeout(url: str) -> BaseException:
    return _raised(url, "SET statement_timeout = 50", "SELECT pg_sleep(2)")


def wrong_password(url: str) -> BaseException:
    return _raised(url.replace("agent_stores@", "nobody:not-the-password@", 1))


def no_password(url: str) -> BaseException:
    return _raised(url.replace("agent_stores@", "nobody@", 1), passfile="/nonexistent")


def read_only_transaction(url: str) -> BaseException:
    return _raised(
        url,
        "CREATE TABLE IF NOT EXISTS agent_stores_ro_probe (k text)",
        "SET default_transaction_read_only = on",
        "INSERT INTO agent_stores_ro_probe VALUES ('a')",
    )


def no_privilege(url: str) -> BaseException:
    return _raised(
        url,
        "DROP ROLE IF EXISTS agent_stores_reader",
        "CREATE ROLE agent_stores_reader",
        "CREATE TABLE IF NOT EXISTS agent_stores_private (k text)",
        "SET ROLE agent_stores_reader",
        "INSERT INTO agent_stores_private VALUES ('a')",
    )


def index_row_too_big(url: str) -> BaseException:
    return _raised(
        url, _TABLE, "INSERT INTO t SELECT string_agg(md5(random()::text), ''), '' FROM generate_series(1, 300)"
    )


def nul_in_text(url: str) -> BaseException:
    try:
        with psycopg.connect(url, autocommit=True) as db:
            db.execute("SELECT %s::text", ("a\x00b",))
    except BaseException as err:
        return err
    raise AssertionError("expected NUL to be refused")


def syntax_error(url: str) -> BaseException:
    return _raised(url, "SELEC 1")


def no_such_table(url: str) -> BaseException:
    return _raised(url, "SELECT * FROM agent_stores_missing")


def pool_timeout(url: str) -> BaseException:
    return PoolTimeout("couldn't get a connection after 0.10 sec")


TABLE: list[tuple[Callable[[str], BaseException], type[Exception] | None]] = [
    (unique_violation, StoreConflictError),
    (our_version_conflict, StoreConflictError),
    (connection_refused, StoreUnavailableError),
    (server_shutting_down, StoreUnavailableError),
    (statement_timeout, StoreUnavailableError),
    (pool_timeout, StoreUnavailableError),
    (wrong_password, StoreError),
    (no_password, StoreError),
    (read_only_transaction, StoreError),
    (no_privilege, StoreError),
    (index_row_too_big, ValueError),
    (nul_in_text, ValueError),
    (syntax_error, None),
    (no_such_table, None),
]


@pytest.mark.parametrize(("make", "expected"), TABLE, ids=[make.__name__ for make, _ in TABLE])
def test_translate(
    make: Callable[[str], BaseException],
    expected: type[Exception] | None,
    postgresql: Server,
    check_translation: Callable[..., None],
) -> None:
    err = make(postgresql.url)
    translated = translate(err, "op")
    check_translation(err, translated, expected, prefix="op: ")
    if expected is StoreError:
        assert "check" in str(translated)  # says what to check
