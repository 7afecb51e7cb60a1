"""Which PostgreSQL client the backend uses, by measurement: psycopg 3 + psycopg_pool vs asyncpg.

Both run as a transaction-mode pooler requires (no server-side prepared statements kept:
psycopg ``prepare_threshold=None``, asyncpg ``statement_cache_size=0``), on one fresh local
server (``agent_stores.testing.servers.postgresql``), in one run:

- append: one conditional append of 2 messages (an INSERT ... SELECT under a version check
  in one statement, as a save does), turns per second, one task;
- read: the last 100 of a 1,000-row log as bytes (psycopg asks for binary results), reads per
  second, one task;
- concurrent: 32 tasks on a pool of 8 connections doing append + read, turns per second.

    uv run --with asyncpg --with 'psycopg[binary,pool]' python benchmarks/postgresql_client_bench.py

Results (medians of 5 repetitions) are written to ``benchmarks/results/postgresql-client.{json,md}``.
"""

from __future__ import annotations

import asyncio
import json
import os
import platform
import statistics
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agent_stores.testing.servers.postgresql import local_postgresql

PAYLOAD = b'{"type":"message","role":"assistant","contents":[{"type":"text","text":"' + b"x" * 300 + b'"}]}'
REPEATS = 5
TURNS = 1000
READS = 1000
CONCURRENT_TURNS = 2000

SCHEMA = """
DROP TABLE IF EXISTS bench_logs, bench_messages;
CREATE TABLE bench_logs (key text COLLATE "C" PRIMARY KEY, length bigint NOT NULL, version bigint NOT NULL);
CREATE TABLE bench_messages (key text COLLATE "C" NOT NULL, seq bigint NOT NULL, digest text NOT NULL,
    payload bytea NOT NULL, PRIMARY KEY (key, seq));
"""

# One statement: bump the log if it is at the expected version, insert the rows numbered after it.
APPEND_PG = """
WITH log AS (
    INSERT INTO bench_logs AS l (key, length, version) VALUES (%(key)s, 2, %(new)s)
    ON CONFLICT (key) DO UPDATE SET length = l.length + 2, version = %(new)s WHERE l.version = %(expected)s
    RETURNING l.length)
INSERT INTO bench_messages (key, seq, digest, payload)
SELECT %(key)s, log.length - 2 + r.n, r.digest, r.payload FROM log,
    unnest(%(digests)s::text[], %(payloads)s::bytea[]) WITH ORDINALITY AS r(digest, payload, n)
"""
APPEND_APG = (
    APPEND_PG.replace("%(key)s", "$1")
    .replace("%(new)s", "$2")
    .replace("%(expected)s", "$3")
    .replace("%(digests)s", "$4")
    .replace("%(payloads)s", "$5")
)
READ_PG = "SELECT payload FROM bench_messages WHERE key = %s ORDER BY seq DESC LIMIT %s"
READ_APG = "SELECT payload FROM bench_messages WHERE key = $1 ORDER BY seq DESC LIMIT $2"


async def timed(repeat: Callable[[], Awaitable[int]]) -> float:
    start = time.perf_counter()
    count = await repeat()
    return count / (time.perf_counter() - start)


async def psycopg_case(url: str) -> dict[str, float]:
    import psycopg
    from psycopg_pool import AsyncConnectionPool

    kwargs: dict[str, Any] = {"autocommit": True, "prepare_threshold": None}
    async with AsyncConnectionPool(url, min_size=8, max_size=8, kwargs=kwargs, open=False) as pool:
        await pool.open(wait=True)
        async with pool.connection() as conn:
            await conn.execute(SCHEMA)  # pyright: ignore
        version = 0

        async def append(key: str, expected: int | None, new: int) -> None:
            async with pool.connection() as conn:
                await conn.execute(
                    APPEND_PG,
                    {
                        "key": key,
                        "new": new,
                        "expected": expected,
                        "digests": ["d1", "d2"],
                        "payloads": [PAYLOAD, PAYLOAD],
                    },
                )

        async def appends() -> int:
            nonlocal version
            key = f"append-{version}"
            expected = None
            for _ in range(TURNS):
                version += 1
                await append(key, expected, version)
                expected = version
            return TURNS

        async def reads() -> int:
            for _ in range(READS):
                async with pool.connection() as conn:
                    cur = await conn.execute(READ_PG, ("read", 100), binary=True)
                    rows = await cur.fetchall()
                    assert len(rows) == 100 and isinstance(rows[0][0], bytes)
            return READS

        async with pool.connection() as conn:
            for n in range(500):
                await conn.execute(
                    APPEND_PG,
                    {
                        "key": "read",
                        "new": n + 1,
                        "expected": n or None,
                        "digests": ["a", "b"],
                        "payloads": [PAYLOAD, PAYLOAD],
                    },
                )

        async def concurrent() -> int:
            nonlocal version

            async def agent(i: int) -> None:
                nonlocal version
                key = f"agent-{version}-{i}"
                expected = None
                for _ in range(CONCURRENT_TURNS // 32):
                    version += 1
                    new = version
                    await append(key, expected, new)
                    expected = new
                    async with pool.connection() as conn:
                        await (await conn.execute(READ_PG, (key, 100), binary=True)).fetchall()

            await asyncio.gather(*(agent(i) for i in range(32)))
            return CONCURRENT_TURNS

        return await measure(appends, reads, concurrent, psycopg.__version__)


async def asyncpg_case(url: str) -> dict[str, float]:
    import asyncpg

    pool = await asyncpg.create_pool(url, min_size=8, max_size=8, statement_cache_size=0)
    try:
        async with pool.acquire() as conn:
            await conn.execute(SCHEMA)
        version = 0

        async def append(key: str, expected: int | None, new: int) -> None:
            await pool.execute(APPEND_APG, key, new, expected, ["d1", "d2"], [PAYLOAD, PAYLOAD])

        async def appends() -> int:
            nonlocal version
            key = f"append-{version}"
            expected = None
            for _ in range(TURNS):
                version += 1
                await append(key, expected, version)
                expected = version
            return TURNS

        for n in range(500):
            await pool.execute(APPEND_APG, "read", n + 1, n or None, ["a", "b"], [PAYLOAD, PAYLOAD])

        async def reads() -> int:
            for _ in range(READS):
                rows = await pool.fetch(READ_APG, "read", 100)
                assert len(rows) == 100 and isinstance(rows[0][0], bytes)
            return READS

        async def concurrent() -> int:
            nonlocal version

            async def agent(i: int) -> None:
                nonlocal version
                key = f"agent-{version}-{i}"
                expected = None
                for _ in range(CONCURRENT_TURNS // 32):
                    version += 1
                    new = version
                    await append(key, expected, new)
                    expected = new
                    await pool.fetch(READ_APG, key, 100)

            await asyncio.gather(*(agent(i) for i in range(32)))
            return CONCURRENT_TURNS

        return await measure(appends, reads, concurrent, asyncpg.__version__)
    finally:
        await pool.close()


async def measure(
    appends: Callable[[], Awaitable[int]],
    reads: Callable[[], Awaitable[int]],
    concurrent: Callable[[], Awaitable[int]],
    version: str,
) -> dict[str, Any]:
    results: dict[str, list[float]] = {
        "append_turns_per_s": [],
        "read_last_100_per_s": [],
        "concurrent_turns_per_s": [],
    }
    for _ in range(REPEATS):
        results["append_turns_per_s"].append(await timed(appends))
        results["read_last_100_per_s"].append(await timed(reads))
        results["concurrent_turns_per_s"].append(await timed(concurrent))
    return {"version": version, **{k: round(statistics.median(v)) for k, v in results.items()}}


def main() -> None:
    with local_postgresql() as server:
        print(server, flush=True)
        figures = {
            "psycopg": asyncio.run(psycopg_case(server.url)),
            "asyncpg": asyncio.run(asyncpg_case(server.url)),
        }
        description = server.description
    out = Path(__file__).parent / "results"
    record = {"server": description, "machine": f"{platform.machine()}, {os.cpu_count()} cores", "clients": figures}
    (out / "postgresql-client.json").write_text(json.dumps(record, indent=2) + "\n")
    lines = [
        "# PostgreSQL client choice (benchmarks/postgresql_client_bench.py)",
        "",
        f"{description}, {record['machine']}; no server-side prepared statements kept (pooler-safe); "
        f"medians of {REPEATS} repetitions.",
        "",
        "| client | append turn/s (2 msgs) | read last 100 /s | 32 tasks on 8 conns, turn/s |",
        "| --- | ---: | ---: | ---: |",
    ]
    for name, f in figures.items():
        lines.append(
            f"| {name} {f['version']} | {f['append_turns_per_s']} | {f['read_last_100_per_s']} "
            f"| {f['concurrent_turns_per_s']} |"
        )
    (out / "postgresql-client.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
