"""``run_bounded``: work over many items with at most N in flight, for admin operations (migrate, sweep)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import TypeVar

__all__ = ["run_bounded"]

_T = TypeVar("_T")


async def run_bounded(items: Iterable[_T], work: Callable[[_T], Awaitable[None]], limit: int) -> None:
    """Run ``work(item)`` for every item, at most ``limit`` at once.

    A fixed pool of ``limit`` workers takes the items in order, so a million items cost
    ``limit`` tasks, not a million. The first exception stops the other workers and propagates.

    Raises:
        ValueError: ``limit`` is below 1.
    """
    if limit < 1:
        raise ValueError(f"concurrency must be at least 1, got {limit}")
    pending = iter(items)

    async def worker() -> None:
        for item in pending:
            await work(item)

    workers = [asyncio.ensure_future(worker()) for _ in range(limit)]
    try:
        await asyncio.gather(*workers)
    except BaseException:
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise
