"""Two processes serving concurrent turns of one session: how many state updates plain ``set`` loses.

    uv run benchmarks/session_replicas.py                 # sqlite and redis, 200 turns per process
    uv run benchmarks/session_replicas.py --turns 500 --url redis://127.0.0.1:6380/0

Each process ("replica") runs ``--turns`` turns of one session. A turn reads the session, does
some work (``--work-ms``, the agent run), adds its own tag to ``state["turns"]`` and stores the
session: ``plain`` with ``get`` + ``set`` (what hosting code does today), ``update`` with
``ObjectSessionStore.update`` (compare-and-set, retried). Both processes start turning on one
signal (a line on their stdin). Lost updates are the tags missing from the final snapshot.

``turns URL KEY TAG MODE N WORK_MS`` is the replica itself (tests run it): it prints ``ready``,
waits for a line on stdin, runs its turns and prints ``done``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import subprocess
import sys
import tempfile
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from agent_framework import AgentSession

from agent_stores.core import open_stores

MODES = ("plain", "update")


async def replica(url: str, key: str, tag: str, mode: str, turns: int, work_ms: float) -> None:
    """Serve ``turns`` turns of session ``key``, each adding ``tag-<n>`` to ``state["turns"]``."""
    async with open_stores(url) as stores:
        sessions: Any = stores.session_store()

        async def change(current: AgentSession | None, n: int) -> AgentSession:
            session = current or AgentSession(session_id=key)
            await asyncio.sleep(work_ms / 1000)  # the turn's work between reading and writing
            session.state["turns"] = [*session.state.get("turns", []), f"{tag}-{n}"]
            return session

        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        for n in range(turns):
            if mode == "update":
                await sessions.update(key, lambda current, n=n: change(current, n))
            else:
                session = await change(await sessions.get(key), n)
                await sessions.set(key, session)
        print("done", flush=True)


def run_replicas(
    url: str,
    turns: int,
    mode: str,
    *,
    work_ms: float = 1.0,
    env: Mapping[str, str] | None = None,
    options: Mapping[str, Any] | None = None,
) -> int:
    """Run two replicas of ``mode`` on one fresh session of ``url``; return how many of their updates were lost.

    ``env``: the replicas' environment (credentials); ``options``: ``open_stores`` options for
    reading the result in this process.
    """
    key = f"replicas-{uuid.uuid4().hex[:8]}"
    command = [sys.executable, __file__, "turns", url, key]
    children = [
        subprocess.Popen(
            [*command, tag, mode, str(turns), str(work_ms)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            env=None if env is None else dict(env),
        )
        for tag in ("a", "b")
    ]
    try:
        for child in children:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready", "a replica failed to start"
        for child in children:
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        for child in children:
            child.wait(timeout=600)
            if child.returncode != 0:
                raise RuntimeError(f"a replica exited with {child.returncode}")
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
    stored = asyncio.run(_stored_turns(url, key, options or {}))
    expected = {f"{tag}-{n}" for tag in ("a", "b") for n in range(turns)}
    if len(stored) != len(set(stored)) or not set(stored) <= expected:
        raise AssertionError(f"the snapshot holds duplicated or foreign turns: {stored}")
    return len(expected) - len(stored)


async def _stored_turns(url: str, key: str, options: Mapping[str, Any]) -> list[str]:
    async with open_stores(url, **options) as stores:
        session = await stores.session_store().get(key)
    return [] if session is None else list(session.state.get("turns", []))


@contextlib.contextmanager
def _urls(explicit: list[str]) -> Iterator[list[str]]:
    if explicit:
        yield explicit
        return
    from agent_stores.testing.servers import ServerUnavailable
    from agent_stores.testing.servers.redis import redis_server

    with tempfile.TemporaryDirectory() as folder, contextlib.ExitStack() as stack:
        urls = [f"sqlite:///{Path(folder) / 'replicas.db'}"]
        try:
            urls.append(stack.enter_context(redis_server()).url)
        except ServerUnavailable as err:
            print(f"redis: {err}", file=sys.stderr)
        yield urls


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["turns"]:
        url, key, tag, mode, turns, work_ms = args[1:]
        asyncio.run(replica(url, key, tag, mode, int(turns), float(work_ms)))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", action="append", default=[], help="a store URL (repeatable); default sqlite and redis")
    parser.add_argument("--turns", type=int, default=200, help="turns per replica")
    parser.add_argument("--work-ms", type=float, default=1.0, help="work per turn between read and write")
    options = parser.parse_args(args)
    with _urls(options.url) as urls:
        print("| store | turns (2 replicas) | lost with get + set | lost with update |")
        print("|---|---|---|---|")
        for url in urls:
            lost = {mode: run_replicas(url, options.turns, mode, work_ms=options.work_ms) for mode in MODES}
            name = url.split(":", 1)[0]
            print(f"| {name} | {2 * options.turns} | {lost['plain']} | {lost['update']} |", flush=True)


if __name__ == "__main__":
    main()
