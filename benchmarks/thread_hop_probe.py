"""Event-loop CPU of one hop to a worker thread: ``run_in_executor`` against the S3 driver's own hop.

The S3 driver runs every boto3 call in a worker thread. ``loop.run_in_executor`` chains an
asyncio future to the executor's future both ways; the driver instead submits the call and the
worker settles the awaited future with ``call_soon_threadsafe``. Both run a call that does
nothing, in alternating blocks, and the event loop's thread CPU (``time.thread_time``) per hop
is reported with the paired ratio.

    uv run --group bench benchmarks/thread_hop_probe.py --hops 4000 --block 200 --reps 5
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any


def _nothing() -> None:
    return None


def _settle(answer: asyncio.Future[Any], result: Any, error: BaseException | None) -> None:
    if answer.done():
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(result)


def _in_thread(loop: asyncio.AbstractEventLoop, answer: asyncio.Future[Any], call: Callable[[], Any]) -> None:
    # The shape of S3ObjectDriver._call: run, then hand the outcome to the loop.
    if answer.cancelled():
        return
    try:
        result = call()
    except BaseException as err:
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_settle, answer, None, err)
        return
    with contextlib.suppress(RuntimeError):
        loop.call_soon_threadsafe(_settle, answer, result, None)


async def _measure(hops: int, block: int) -> dict[str, float]:
    loop = asyncio.get_running_loop()
    pool = ThreadPoolExecutor(4)

    async def run_in_executor() -> None:
        await loop.run_in_executor(pool, _nothing)

    async def submit_and_settle() -> None:
        answer: asyncio.Future[None] = loop.create_future()
        pool.submit(_in_thread, loop, answer, _nothing)
        await answer

    rows: dict[str, Callable[[], Awaitable[None]]] = {
        "run_in_executor": run_in_executor,
        "submit + call_soon_threadsafe (the S3 driver's)": submit_and_settle,
    }
    spent = dict.fromkeys(rows, 0.0)
    for step in rows.values():  # warm the threads
        for _ in range(block):
            await step()
    for _ in range(0, hops, block):
        for name, step in rows.items():
            began = time.thread_time()
            for _ in range(block):
                await step()
            spent[name] += time.thread_time() - began
    pool.shutdown()
    return {name: total / hops * 1e6 for name, total in spent.items()}


def main() -> None:
    """Run the probe and print the medians over repetitions."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n", 1)[0])
    parser.add_argument("--hops", type=int, default=4000, help="hops per row and repetition (default 4000)")
    parser.add_argument("--block", type=int, default=200, help="hops per row before the other's turn (default 200)")
    parser.add_argument("--reps", type=int, default=5, help="repetitions (default 5)")
    args = parser.parse_args()
    print(f"load average before: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    runs = [asyncio.run(_measure(args.hops, args.block)) for _ in range(args.reps)]
    names = list(runs[0])
    for name in names:
        values = [run[name] for run in runs]
        shown = " ".join(f"{v:.1f}" for v in values)
        print(f"{name}: median {statistics.median(values):.1f} us of event-loop CPU per hop ({shown})")
    ratios = [run[names[1]] / run[names[0]] for run in runs]
    print(f"driver's hop / run_in_executor, paired per repetition: median {statistics.median(ratios):.2f}")
    print(f"load average after: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
