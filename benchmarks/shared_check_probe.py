"""Repeated loads of one log in process: microseconds per load of ``decode_messages``, by shape.

Shapes: 20 plain text messages; 5 tool round trips (question, call, result, answer); the
history benchmark's 20-message load session (3 chat turns in 4, a tool round trip in the 4th).
Each shape is a window of records loaded again and again through one ``DecodeCache``: with a
``log`` (the provider's path: unchanged messages are returned again after a check), without one
(every message rebuilt from the cache), and with no cache at all (every record parsed); and
the history benchmark's session loaded through the in-process provider (``get_messages``). Prints
one JSON line per checkout: the median over ``--rounds`` rounds of the best of 5 timings, each
in this process's CPU time (a shared machine's other work moves it less than wall time).

``--base [NAME=]DIR`` (repeatable) runs the probe once per checkout per round, alternating, in
child processes: with ``DIR`` (a ``core/src`` of another checkout, e.g. ``git archive main
core/src | tar -x -C /tmp/main``) first on ``PYTHONPATH``, then with this checkout ("after");
it prints the medians and the ratios ``after/NAME``::

    uv run --group bench benchmarks/shared_check_probe.py --base main=/tmp/main/core/src
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import timeit
from typing import Any

_NUMBER = 2000


def _shapes() -> dict[str, list[bytes]]:
    from agent_framework import Content, Message

    from agent_stores.core.codec import encode_message

    text = [
        Message("user" if i % 2 == 0 else "assistant", [f"message {i}: " + "words " * 12], message_id=f"m-{i}")
        for i in range(20)
    ]
    tools: list[Message] = []
    for turn in range(5):
        tools += [
            Message("user", [f"what is the weather in city {turn}?"]),
            Message(
                "assistant",
                [
                    Content.from_function_call(
                        f"call-{turn}", "get_weather", arguments={"city": f"city {turn}", "days": [1, 2, 3]}
                    )
                ],
                message_id=f"a-{turn}",
            ),
            Message(
                "tool",
                [Content.from_function_result(f"call-{turn}", result={"temperature": 3.5, "sunny": turn % 2 == 0})],
                message_id=f"t-{turn}",
            ),
            Message("assistant", [f"It is {turn} degrees and sunny."], message_id=f"r-{turn}"),
        ]
    from _payloads import make_turns

    bench = [m for turn in make_turns(0, 10) for m in turn.messages]  # the history benchmark's load session
    return {
        "text20": [encode_message(m) for m in text],
        "tools20": [encode_message(m) for m in tools],
        "bench20": [encode_message(m) for m in bench],
    }


def measure(number: int) -> dict[str, float]:
    """Microseconds per load of each shape, three ways: shared, rebuilt from the cache, parsed."""
    from agent_stores.core.codec import DecodeCache, decode_messages

    results: dict[str, float] = {}
    for name, records in _shapes().items():
        cache = DecodeCache()
        decode_messages(records, cache=cache)
        ways: dict[str, Any] = {
            "shared": lambda r=records, c=cache: decode_messages(r, cache=c, log="log"),  # pyright: ignore[reportCallIssue]
            "rebuilt": lambda r=records, c=cache: decode_messages(r, cache=c),
            "parsed": lambda r=records: decode_messages(r),
        }
        try:
            ways["shared"]()
        except TypeError:  # a checkout from before loads shared messages
            del ways["shared"]
        for way, call in ways.items():
            best = min(timeit.repeat(call, number=number, repeat=5, timer=time.process_time)) / number
            results[f"{name}_{way}_us"] = round(best * 1e6, 2)
    return results


def measure_provider(number: int) -> dict[str, float]:
    """Microseconds per ``get_messages`` of the benchmark's session on the in-process provider."""
    import asyncio

    from _payloads import make_turns
    from agent_stores.core import LogHistoryProvider
    from agent_stores.core.memory import MemoryLogDriver

    async def run() -> float:
        provider = LogHistoryProvider(MemoryLogDriver())
        for turn in make_turns(0, 10):
            await provider.save_messages("s", turn.messages)
        best = float("inf")
        for _ in range(5):
            start = time.process_time()
            for _ in range(number):
                await provider.get_messages("s")
            best = min(best, time.process_time() - start)
        return best / number

    return {"provider_bench20_us": round(asyncio.run(run()) * 1e6, 2)}


def _child(base: str | None, number: int) -> dict[str, float]:
    env = dict(os.environ)
    if base is not None:
        env["PYTHONPATH"] = base + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    out = subprocess.run(
        [sys.executable, __file__, "--child", "--number", str(number)], env=env, check=True, capture_output=True
    )
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description="Repeated in-process loads: microseconds per load, by shape.")
    parser.add_argument(
        "--base",
        action="append",
        default=[],
        metavar="[NAME=]DIR",
        help="core/src of a checkout to compare against, run alternating with this one (repeatable)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds with --base (default 3)")
    parser.add_argument("--number", type=int, default=_NUMBER, help="loads per timing (default 2000)")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child or not args.base:
        print(json.dumps(measure(args.number) | measure_provider(args.number)))
        return
    bases: dict[str, str | None] = {}
    for index, spec in enumerate(args.base):
        name, _, directory = spec.rpartition("=")
        bases[name or ("before" if len(args.base) == 1 else f"base{index + 1}")] = directory
    bases["after"] = None
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in bases}
    load = [os.getloadavg()[0]]
    for _ in range(args.rounds):
        for name, directory in bases.items():
            runs[name].append(_child(directory, args.number))
    load.append(os.getloadavg()[0])
    summary: dict[str, Any] = {"load": [round(x, 2) for x in load]}
    for side, samples in runs.items():
        summary[side] = {k: round(statistics.median(s[k] for s in samples), 2) for k in samples[-1]}
    for name in bases:
        if name != "after":
            summary[f"after/{name}"] = {
                k: round(summary["after"][k] / summary[name][k], 3) for k in summary[name] if k in summary["after"]
            }
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
