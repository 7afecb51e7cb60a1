"""``Deadlines``: a time limit on each awaited operation, kept by one timer for all of them.

``asyncio.timeout`` schedules a timer for every operation and cancels it when the operation
ends: on a command that takes a fraction of a millisecond, that is about a tenth of the
client's CPU per command. Here every operation in flight is one entry in a dict, and a single
timer fires at the earliest deadline among them: it cancels the operations past their deadline
and sets itself for the next one. The outcome is ``asyncio.timeout``'s: the operation's task
is cancelled at its deadline, the operation raises ``TimeoutError`` (chained to the
``CancelledError``), and a cancellation from elsewhere still propagates as ``CancelledError``
(``Task.cancelling`` and ``Task.uncancel`` tell them apart, as ``asyncio.timeout`` does).

One difference, for a process busy with many operations: an operation found past its deadline
is cancelled a few turns of the event loop later (:data:`GRACE_TURNS`), not at once. A reply
that reached the process by the deadline, but that the event loop was too busy to hand to its
task, is read in those turns and the operation finishes; one that has not arrived fails.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Final, TypeVar

__all__ = ["Deadlines"]

T = TypeVar("T")

#: Turns of the event loop an operation past its deadline is given before it is cancelled: the
#: turn that reads a reply already received, and those that pass it on (to a pipeline's task,
#: through the per-node tasks on a cluster, to the operation's own task).
GRACE_TURNS: Final = 4


class _Running:
    """One operation in flight: its task, its deadline, and whether the deadline cancelled it."""

    __slots__ = ("cancelling", "deadline", "due", "expired", "loop", "task")

    def __init__(self, task: asyncio.Task[object], loop: asyncio.AbstractEventLoop, deadline: float) -> None:
        self.task = task
        self.loop = loop
        self.deadline = deadline
        self.cancelling = task.cancelling()
        self.due = False  # past its deadline, to be cancelled after the grace turns
        self.expired = False  # cancelled at its deadline


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
        """Mark this loop's operations past their deadline; set the timer for the earliest other one."""
        del self._timers[loop]
        now = loop.time()
        earliest: float | None = None
        due: list[_Running] = []
        for running in list(self._running.values()):
            if running.loop is not loop:
                if running.loop.is_closed():  # its task will never finish to remove it
                    self._running.pop(id(running), None)
                continue
            if running.due:
                continue
            if running.deadline <= now:
                running.due = True
                due.append(running)
            elif earliest is None or running.deadline < earliest:
                earliest = running.deadline
        if due:
            loop.call_soon(self._expire, loop, due, GRACE_TURNS)
        if earliest is not None:
            self._timers[loop] = loop.call_at(earliest, self._sweep, loop)

    def _expire(self, loop: asyncio.AbstractEventLoop, due: list[_Running], turns: int) -> None:
        """After ``turns`` more turns of the loop, cancel the operations of ``due`` still running."""
        if turns > 1:
            loop.call_soon(self._expire, loop, due, turns - 1)
            return
        for running in due:
            if self._running.get(id(running)) is running and not running.expired and not running.task.done():
                running.expired = True
                running.task.cancel()
