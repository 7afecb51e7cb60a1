"""``Deadlines``: a time limit on each awaited operation, kept by one timer for all of them.

``asyncio.timeout`` schedules a timer for every operation and cancels it when the operation
ends: on a command that takes a fraction of a millisecond, that is about a tenth of the
client's CPU per command. Here every operation in flight is one entry in a dict, and a single
timer fires at the earliest deadline among them: it cancels the operations past their deadline
and sets itself for the next one. The outcome is ``asyncio.timeout``'s: the operation's task
is cancelled at its deadline, the operation raises ``TimeoutError`` (chained to the
``CancelledError``), and a cancellation from elsewhere still propagates as ``CancelledError``
(``Task.cancelling`` and ``Task.uncancel`` tell them apart, as ``asyncio.timeout`` does).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

__all__ = ["Deadlines"]

T = TypeVar("T")


class _Running:
    """One operation in flight: its task, its deadline, and whether the deadline cancelled it."""

    __slots__ = ("cancelling", "deadline", "expired", "loop", "task")

    def __init__(self, task: asyncio.Task[object], loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        self.task = task
        self.loop = loop
        self.deadline = deadline
        self.cancelling = task.cancelling()
        self.expired = False


class Deadlines:
    """Runs awaitables with a deadline each; one timer per event loop serves them all."""

    def __init__(self) -> None:
        self._running: dict[int, _Running] = {}
        self._timers: dict[asyncio.AbstractEventLoop, asyncio.TimerHandle] = {}

    async def run(self, call: Awaitable[T], seconds: float) -> T:
        """Await ``call``; cancel it and raise ``TimeoutError`` if it has not finished after ``seconds``.

        Must be awaited from a task.
        """
        loop = asyncio.get_running_loop()
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("Deadlines.run must be awaited from a task")
        running = _Running(task, loop, loop.time() + seconds)
        key = id(running)
        self._running[key] = running
        timer = self._timers.get(loop)
        if timer is None or running.deadline < timer.when():
            if timer is None:
                for closed in [other for other in self._timers if other.is_closed()]:
                    del self._timers[closed]
            else:
                timer.cancel()
            self._timers[loop] = loop.call_at(running.deadline, self._sweep, loop)
        try:
            return await call
        except asyncio.CancelledError as err:
            if running.expired:
                running.expired = False
                if task.uncancel() <= running.cancelling:
                    raise TimeoutError(f"the operation did not finish within {seconds} s") from err
            raise
        finally:
            del self._running[key]
            if running.expired:  # cancelled at its deadline, but finished without seeing it
                task.uncancel()

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        """Cancel this loop's operations past their deadline; set the timer for the earliest other one."""
        del self._timers[loop]
        now = loop.time()
        earliest: float | None = None
        for running in list(self._running.values()):
            if running.loop is not loop:
                if running.loop.is_closed():  # its task will never finish to remove it
                    self._running.pop(id(running), None)
                continue
            if running.deadline <= now:
                if not running.expired and not running.task.done():
                    running.expired = True
                    running.task.cancel()
            elif earliest is None or running.deadline < earliest:
                earliest = running.deadline
        if earliest is not None:
            self._timers[loop] = loop.call_at(earliest, self._sweep, loop)
