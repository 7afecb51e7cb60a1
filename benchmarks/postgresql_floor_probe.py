"""Where the PostgreSQL history rows spend their time beside the raw psycopg floor, statement by statement.

The history benchmark's floor saves a turn with one bare ``INSERT ... SELECT unnest(...)`` and
loads it with one ``SELECT``. This probe runs, interleaved call by call on one fresh local
server (``agent_stores.testing.servers.postgresql``), each on a connection of its own held
open (autocommit, no server-side prepared statements, as ours connects):

- append: the floor's ``INSERT``; our ``agent_stores_append`` (the version check on the log's
  locked row, then the insert), its digest and payload arrays sent in binary as the driver
  sends them; the same call with the arrays in psycopg's text form (as before, and as the
  floor sends its payloads); the same on the schema before migration 5, whose messages carried
  a foreign key to their log; and a function of the same signature that only inserts (no log
  row, no version check): what a function call and eight parameters cost;
- load (20 messages): the floor's ``SELECT``; our previous load statement (a subquery on the
  log's key, planned on every call); ``agent_stores_read`` (the same query in a function,
  planned once per connection);
- whole calls: ``save_messages`` / ``get_messages`` of a ``PostgreSQLHistoryProvider`` from
  ``open_stores`` against the floor with its encoding (``to_dict`` + msgspec) and decoding
  (msgspec + ``Message.from_dict``).

    uv run python benchmarks/postgresql_floor_probe.py [--calls 1500] [--out DIR]

Writes ``postgresql-floor-probe.md`` to ``--out`` (default ``benchmarks/results/postgresql``):
median microseconds per call and each row's ratio to the floor's (above 1 is faster).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import secrets
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import msgspec
import psycopg
from agent_framework import Message

from agent_stores.core import open_stores
from agent_stores.postgresql._database import migrate_connection
from agent_stores.postgresql._driver import _APPEND, _READ  # pyright: ignore[reportPrivateUsage]
from agent_stores.testing.servers.postgresql import local_postgresql

DEFAULT_OUT = Path(__file__).resolve().parent / "results" / "postgresql"
_TEXT_APPEND = _APPEND.replace("%b::", "%s::")
_OLD_READ = """SELECT m.payload FROM agent_stores_messages AS m
WHERE m.log_id = (SELECT log_id FROM agent_stores_logs WHERE key = %s AND (expires_at IS NULL OR expires_at > %s))
ORDER BY m.seq"""
_INSERT_ONLY = """CREATE OR REPLACE FUNCTION agent_stores_append(
    p_key text, p_session_id text, p_expected bigint, p_version bigint,
    p_expires_at double precision, p_now double precision, p_digests text[], p_payloads bytea[]
) RETURNS bigint LANGUAGE plpgsql AS $body$
BEGIN
    INSERT INTO agent_stores_messages (log_id, seq, digest, payload)
    SELECT 1, nextval('agent_stores_object_versions'), r.digest, r.payload
    FROM unnest(p_digests, p_payloads) AS r(digest, payload);
    RETURN 0;
END $body$"""
_FLOOR_TABLE = "CREATE TABLE messages (id bigserial PRIMARY KEY, session_id text NOT NULL, payload bytea NOT NULL)"
_FLOOR_INDEX = "CREATE INDEX messages_session ON messages (session_id, id)"
_FLOOR_INSERT = "INSERT INTO messages (session_id, payload) SELECT %s, unnest(%s::bytea[])"
_FLOOR_SELECT = "SELECT payload FROM messages WHERE session_id = %s ORDER BY id"


def _turn(index: int) -> list[Message]:
    return [
        Message(role="user", contents=[f"question {index} " + "x" * 200]),
        Message(role="assistant", contents=[f"answer {index} " + "y" * 400]),
    ]


async def _database(server: str, name: str) -> tuple[str, Any]:
    with psycopg.connect(server, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')  # pyright: ignore[reportArgumentType, reportCallIssue]
    url = server.rsplit("/", 1)[0] + "/" + name
    connection = await psycopg.AsyncConnection.connect(url, autocommit=True, prepare_threshold=None)
    await migrate_connection(connection)
    return url, connection


async def _interleaved(calls: int, ops: dict[str, Callable[[int], Awaitable[Any]]]) -> dict[str, float]:
    samples: dict[str, list[float]] = {name: [] for name in ops}
    for index in range(calls):
        for name, op in ops.items():
            started = time.perf_counter()
            await op(index)
            samples[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) * 1e6 for name, values in samples.items()}


async def probe(server: str, calls: int) -> dict[str, dict[str, float]]:
    encode, decode = msgspec.json.Encoder().encode, msgspec.json.Decoder().decode
    run = uuid.uuid4().hex[:8]
    _, floor = await _database(server, f"probe_floor_{run}")
    await floor.execute(_FLOOR_TABLE)
    await floor.execute(_FLOOR_INDEX)
    _, ours = await _database(server, f"probe_ours_{run}")
    _, with_fk = await _database(server, f"probe_fk_{run}")
    await with_fk.execute(
        "ALTER TABLE agent_stores_messages ADD FOREIGN KEY (log_id) REFERENCES agent_stores_logs (log_id) "
        "ON DELETE CASCADE"
    )
    _, text_arrays = await _database(server, f"probe_text_{run}")
    _, insert_only = await _database(server, f"probe_insert_{run}")
    await insert_only.execute(_INSERT_ONLY)
    stores_url, _ = await _database(server, f"probe_stores_{run}")
    payloads = [encode(m.to_dict()) for m in _turn(0)]
    key = "tenants/probe/history/default/session"
    versions: dict[int, int | None] = {}

    def append(connection: Any, statement: str = _APPEND) -> Callable[[int], Awaitable[Any]]:
        async def call(index: int) -> None:
            version = secrets.randbits(63)
            parameters = (key, "session", versions.get(id(connection)), version, None, time.time(),
                          [f"a{index}", f"b{index}"], payloads)  # fmt: skip
            await (await connection.execute(statement, parameters, binary=True)).fetchall()
            versions[id(connection)] = version

        return call

    async def floor_insert(index: int) -> None:
        await floor.execute(_FLOOR_INSERT, (key, payloads))

    appends = await _interleaved(
        calls,
        {
            "floor INSERT": floor_insert,
            "agent_stores_append": append(ours),
            "agent_stores_append, arrays as text": append(text_arrays, _TEXT_APPEND),
            "agent_stores_append with the foreign key (schema 4)": append(with_fk),
            "a function that only inserts": append(insert_only),
        },
    )
    # Loads of a 20-message session: fresh ones, so every row reads the same amount.
    load_key = key + "-load"
    await floor.execute("TRUNCATE messages")
    version = None
    for index in range(10):
        await floor.execute(_FLOOR_INSERT, (load_key, payloads))
        new = secrets.randbits(63)
        await ours.execute(
            _APPEND, (load_key, "s", version, new, None, time.time(), [f"l{index}a", f"l{index}b"], payloads)
        )
        version = new

    async def floor_select(index: int) -> None:
        await (await floor.execute(_FLOOR_SELECT, (load_key,), binary=True)).fetchall()

    async def old_read(index: int) -> None:
        await (await ours.execute(_OLD_READ, (load_key, time.time()), binary=True)).fetchall()

    async def read_function(index: int) -> None:
        await (await ours.execute(_READ, (load_key, time.time(), None), binary=True)).fetchall()

    loads = await _interleaved(
        calls,
        {
            "floor SELECT": floor_select,
            "previous load statement": old_read,
            "agent_stores_read": read_function,
        },
    )
    # Whole calls through the provider, against the floor with its encoding and decoding.
    whole: dict[str, float] = {}
    async with open_stores(stores_url) as stores:
        provider = stores.history_provider()
        session = "whole-" + run
        for index in range(10):
            await provider.save_messages(session + "-load", _turn(index))
            await floor.execute(_FLOOR_INSERT, (session + "-load", [encode(m.to_dict()) for m in _turn(index)]))

        async def floor_save(index: int) -> None:
            await floor.execute(_FLOOR_INSERT, (session, [encode(m.to_dict()) for m in _turn(index)]))

        async def ours_save(index: int) -> None:
            await provider.save_messages(session, _turn(index))

        async def floor_load(index: int) -> None:
            rows = await (await floor.execute(_FLOOR_SELECT, (session + "-load",), binary=True)).fetchall()
            [Message.from_dict(decode(row[0])) for row in rows]

        async def ours_load(index: int) -> None:
            await provider.get_messages(session + "-load")

        whole.update(
            await _interleaved(calls, {"floor save (encode + INSERT)": floor_save, "ours save_messages": ours_save})
        )
        whole.update(
            await _interleaved(calls, {"floor load (SELECT + decode)": floor_load, "ours get_messages": ours_load})
        )
    for connection in (floor, ours, text_arrays, with_fk, insert_only):
        await connection.close()
    return {"append (SQL only)": appends, "load, 20 messages (SQL only)": loads, "whole calls": whole}


def render(results: dict[str, dict[str, float]], description: str, calls: int) -> str:
    load = " / ".join(f"{v:.1f}" for v in os.getloadavg())
    lines = [
        "# PostgreSQL: our statements beside the raw psycopg floor's",
        "",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {platform.machine()}, {os.cpu_count()} CPUs, "
        f"python {platform.python_version()}; load average at the end {load} (other work shared the machine)",
        f"- server: {description}; every connection held open, autocommit, no server-side prepared statements",
        f"- {calls:,} calls of each row, interleaved call by call; median µs per call; `x floor`: the floor's "
        "median over the row's (above 1 is faster than the floor)",
        "",
    ]
    for section, rows in results.items():
        lines += [f"## {section}", "", "| call | µs | x floor |", "|---|---:|---:|"]
        floor = 0.0
        for name, micros in rows.items():
            if name.startswith("floor"):
                floor = micros  # each row is compared with the floor row above it
            lines.append(f"| {name} | {micros:,.0f} | {floor / micros:.2f}x |")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=1500, help="calls of each row (default 1,500)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results directory (default {DEFAULT_OUT})")
    args = parser.parse_args()
    with local_postgresql() as server:
        results = asyncio.run(probe(server.url, args.calls))
        text = render(results, server.description, args.calls)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "postgresql-floor-probe.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
