"""Many agents on one Redis: every agent loads its window and saves one turn per step.

Run: ``uv run --group bench benchmarks/many_agents_bench.py`` (``--thousand`` adds 1,000 agents;
``--help`` for every option). Each agent owns one session pre-filled with ``--session``
messages; every step loads the newest ``--window`` messages (as an agent does before a model
call) and saves one turn of 2 messages. All agents of a row run at once on one event loop and
share one client (one connection pool), as agents served by one process do.

Stores, on the same server (a local ``redis-server``, else a container, or ``$AGENT_STORES_REDIS_URL``):

* ours: ``open_stores("redis://...").history_provider(max_messages=window)``;
* ``agent-framework-redis``'s ``RedisHistoryProvider``: it has no read window (its
  ``max_messages`` deletes older messages), so each step loads the whole session;
* openai-agents' ``RedisSession`` with ``get_items(limit=window)``: returns dicts, builds no
  ``Message``.

Reported per store and agent count: steps/s over the row's wall time, and p50/p99 of one step's
latency (load + save), medians over ``--reps`` repetitions that run the stores in rotated order;
the ratio to ours is paired within each repetition, so load from other work on the machine
falls on every store alike. Nothing here asserts a speed. Results go to
``benchmarks/results/many_agents.md`` and ``many_agents.json`` (see ``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import time
import uuid
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _payloads import Turn, make_turns
from _subjects_redis import _redis  # pyright: ignore[reportPrivateUsage]

DEFAULT_OUT = Path(__file__).resolve().parent / "results"
_PACKAGES = ("agent-framework-core", "agent-stores-core", "agent-stores-redis", "redis", "msgspec",
             "agent-framework-redis", "openai-agents")  # fmt: skip


class Store:
    """One history store, shared by every agent of a row."""

    name = ""
    requires = ""

    async def open(self, url: str, window: int) -> None:
        raise NotImplementedError

    async def prefill(self, session_id: str, turns: Sequence[Turn]) -> None:
        raise NotImplementedError

    async def step(self, session_id: str, turn: Turn) -> int:
        """Load the window, save ``turn``; return how many messages the load returned."""
        raise NotImplementedError

    async def close(self) -> None:
        """Release what ``open`` acquired."""


class Ours(Store):
    name = "ours: RedisHistoryProvider"
    requires = "agent_stores.redis"

    async def open(self, url: str, window: int) -> None:
        from agent_stores.core import open_stores

        self._stores = open_stores(url, key_prefix=f"many-{uuid.uuid4().hex[:8]}:")
        self._provider: Any = self._stores.history_provider(max_messages=window)

    async def prefill(self, session_id: str, turns: Sequence[Turn]) -> None:
        await self._provider.save_messages(session_id, [m for t in turns for m in t.messages])

    async def step(self, session_id: str, turn: Turn) -> int:
        loaded = await self._provider.get_messages(session_id)
        await self._provider.save_messages(session_id, list(turn.messages))
        return len(loaded)

    async def close(self) -> None:
        await self._stores.aclose()


class AgentFrameworkRedis(Store):
    name = "agent-framework-redis RedisHistoryProvider (whole session)"
    requires = "agent_framework_redis"

    async def open(self, url: str, window: int) -> None:
        from agent_framework_redis import RedisHistoryProvider

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self._provider: Any = RedisHistoryProvider(
                redis_url=url, key_prefix=f"many-{uuid.uuid4().hex[:8]}", key_format="legacy"
            )

    async def prefill(self, session_id: str, turns: Sequence[Turn]) -> None:
        await self._provider.save_messages(session_id, [m for t in turns for m in t.messages])

    async def step(self, session_id: str, turn: Turn) -> int:
        loaded = await self._provider.get_messages(session_id)
        await self._provider.save_messages(session_id, list(turn.messages))
        return len(loaded)

    async def close(self) -> None:
        await self._provider.aclose()


class OpenAIAgentsRedis(Store):
    name = "openai-agents RedisSession"
    requires = "agents.extensions.memory.redis_session"

    async def open(self, url: str, window: int) -> None:
        from redis.asyncio import Redis

        self._client = Redis.from_url(url)
        self._prefix = f"many-{uuid.uuid4().hex[:8]}"
        self._window = window
        self._sessions: dict[str, Any] = {}

    def _session(self, session_id: str) -> Any:
        from agents.extensions.memory.redis_session import RedisSession

        session = self._sessions.get(session_id)
        if session is None:
            session = RedisSession(session_id, redis_client=self._client, key_prefix=self._prefix)
            self._sessions[session_id] = session
        return session

    async def prefill(self, session_id: str, turns: Sequence[Turn]) -> None:
        await self._session(session_id).add_items([i for t in turns for i in t.items])

    async def step(self, session_id: str, turn: Turn) -> int:
        session = self._session(session_id)
        loaded = await session.get_items(limit=self._window)
        await session.add_items(list(turn.items))
        return len(loaded)

    async def close(self) -> None:
        await self._client.aclose()


STORES: tuple[type[Store], ...] = (Ours, AgentFrameworkRedis, OpenAIAgentsRedis)


@dataclass(frozen=True)
class Config:
    agents: tuple[int, ...]
    steps: int
    session: int
    window: int
    out: Path
    reps: int = 1


def _missing(store: Store) -> str | None:
    import importlib

    try:
        importlib.import_module(store.requires)
    except ImportError as err:
        return f"not installed ({err.name})"
    return None


async def run_row(store: Store, url: str, agents: int, config: Config) -> dict[str, Any]:
    await store.open(url, config.window)
    try:
        sessions = [f"agent-{index}" for index in range(agents)]
        history = make_turns(0, config.session // 2)
        prefill = asyncio.Semaphore(20)

        async def fill(session_id: str) -> None:
            async with prefill:
                await store.prefill(session_id, history)

        await asyncio.gather(*(fill(s) for s in sessions))
        turns = make_turns(config.session // 2, config.steps)
        latencies: list[float] = []
        loaded: list[int] = []

        async def agent(session_id: str) -> None:
            for turn in turns:
                start = time.perf_counter()
                loaded.append(await store.step(session_id, turn))
                latencies.append(time.perf_counter() - start)

        start = time.perf_counter()
        await asyncio.gather(*(agent(s) for s in sessions))
        wall = time.perf_counter() - start
    finally:
        await store.close()
    ordered = sorted(latencies)
    return {
        "store": store.name,
        "agents": agents,
        "status": "ok",
        "steps": len(latencies),
        "steps_per_s": len(latencies) / wall,
        "p50_ms": statistics.median(ordered) * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] * 1000,
        "messages_per_load": statistics.median(loaded),
    }


async def run(config: Config) -> dict[str, Any]:
    samples: dict[tuple[str, int], list[dict[str, Any]]] = {}
    missing: dict[str, str] = {}
    with _redis() as (url, description):
        for rep in range(config.reps):
            for agents in config.agents:
                factories = list(STORES)
                shift = rep % len(factories)
                for factory in factories[shift:] + factories[:shift]:  # rotated: noise falls on every store
                    store = factory()
                    reason = _missing(store)
                    if reason is not None:
                        missing[store.name] = reason
                        continue
                    print(f"rep {rep + 1}/{config.reps}: {store.name}: {agents} agents", file=sys.stderr, flush=True)
                    samples.setdefault((store.name, agents), []).append(await run_row(store, url, agents, config))
    rows: list[dict[str, Any]] = []
    for agents in config.agents:
        ours = samples.get((Ours.name, agents), [])
        for factory in STORES:
            name = factory.name
            if name in missing:
                rows.append({"store": name, "agents": agents, "status": missing[name]})
                continue
            runs = samples[(name, agents)]
            paired = [r["steps_per_s"] / o["steps_per_s"] for r, o in zip(runs, ours, strict=True)]
            rows.append(
                {
                    "store": name,
                    "agents": agents,
                    "status": "ok",
                    "steps": runs[0]["steps"],
                    "steps_per_s": statistics.median(r["steps_per_s"] for r in runs),
                    "p50_ms": statistics.median(r["p50_ms"] for r in runs),
                    "p99_ms": statistics.median(r["p99_ms"] for r in runs),
                    "messages_per_load": statistics.median(r["messages_per_load"] for r in runs),
                    "vs_ours": statistics.median(paired),
                    "samples": runs,
                }
            )
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{platform.machine()}, python {platform.python_version()}",
        "load_average": " / ".join(f"{value:.1f}" for value in os.getloadavg()),
        "server": description,
        "packages": {p: _version(p) for p in _PACKAGES},
        "config": {
            "agents": list(config.agents),
            "steps": config.steps,
            "session": config.session,
            "window": config.window,
            "reps": config.reps,
        },
        "rows": rows,
    }


def _version(package: str) -> str:
    try:
        return version(package)
    except PackageNotFoundError:
        return "not installed"


def render_markdown(summary: dict[str, Any]) -> str:
    cfg = summary["config"]
    lines = [
        "# Many agents on one Redis",
        "",
        f"- date: {summary['date']}; {summary['machine']}; server: {summary['server']}; load average at the end "
        f"{summary.get('load_average', 'unknown')} (other work shared the machine: read the ratios)",
        "- packages: " + ", ".join(f"{k} {v}" for k, v in summary["packages"].items()),
        f"- every agent: one session pre-filled with {cfg['session']} messages; {cfg['steps']} steps, each a load of "
        f"the newest {cfg['window']} messages and a save of one 2-message turn; all agents at once, one client",
        f"- {cfg.get('reps', 1)} repetitions, the stores of each agent count in rotated order; medians over"
        " repetitions; steps/s ÷ ours is the median of the ratios paired within each repetition",
        "",
        "| agents | store | steps/s | p50 ms | p99 ms | messages per load | steps/s ÷ ours |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for row in summary["rows"]:
        if row["status"] != "ok":
            lines.append(f"| {row['agents']} | {row['store']} | {row['status']} | | | | |")
            continue
        ratio = f"{row['vs_ours']:.2f}x"
        lines.append(
            f"| {row['agents']} | {row['store']} | {row['steps_per_s']:,.0f} | {row['p50_ms']:.1f} | "
            f"{row['p99_ms']:.1f} | {row['messages_per_load']:.0f} | {ratio} |"
        )
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None = None) -> Config:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--agents", default="1,10,100", help="agent counts, comma-separated (default 1,10,100)")
    parser.add_argument("--thousand", action="store_true", help="add a row of 1,000 agents")
    parser.add_argument("--steps", type=int, default=20, help="steps per agent (default 20)")
    parser.add_argument("--session", type=int, default=200, help="messages per session before the run (default 200)")
    parser.add_argument("--window", type=int, default=40, help="messages per load (default 40)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions, stores rotated (default 3)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"results directory (default {DEFAULT_OUT})")
    args = parser.parse_args(argv)
    agents = tuple(int(a) for a in str(args.agents).split(",") if a)
    if args.thousand:
        agents = (*agents, 1000)
    return Config(
        agents=agents, steps=args.steps, session=args.session, window=args.window, out=args.out, reps=args.reps
    )


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    config = parse_args(argv)
    summary = asyncio.run(run(config))
    config.out.mkdir(parents=True, exist_ok=True)
    (config.out / "many_agents.json").write_text(json.dumps(summary, indent=2) + "\n")
    (config.out / "many_agents.md").write_text(render_markdown(summary))
    print(render_markdown(summary))
    return summary


if __name__ == "__main__":
    main()
