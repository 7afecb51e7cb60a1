"""``Deadlines``, the Redis funnel's time limit per operation, holds to ``asyncio.timeout``'s contract.

These run on the event loop alone: the real-server side (a command past its deadline leaves its
connection closed and the next command gets its own reply) is in ``test_redis_backend.py``.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from agent_stores.redis._deadlines import Deadlines


async def _sleep_then(seconds: float, value: str) -> str:
    await asyncio.sleep(seconds)
    return value


@pytest.mark.asyncio
async def test_an_operation_past_its_deadline_raises_timeout_and_leaves_its_task_uncancelled() -> None:
    deadlines = Deadlines()
    started = time.monotonic()
    with pytest.raises(TimeoutError) as raised:
        await deadlines.run(_sleep_then(10, "late"), 0.05)
    assert 0.04 <= time.monotonic() - started < 2
    assert isinstance(raised.value.__cause__, asyncio.CancelledError)
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    assert await deadlines.run(_sleep_then(0, "next"), 0.05) == "next"


@pytest.mark.asyncio
async def test_every_operation_gets_its_own_deadline_whatever_ran_before() -> None:
    deadlines = Deadlines()
    for _ in range(200):  # operations that finish in time, each arming or reusing the timer
        assert await deadlines.run(_sleep_then(0, "ok"), 30) == "ok"
    started = time.monotonic()
    with pytest.raises(TimeoutError):
        await deadlines.run(_sleep_then(10, "late"), 0.1)
    assert time.monotonic() - started < 2  # not left waiting for the 30-second timer


@pytest.mark.asyncio
async def test_concurrent_operations_each_keep_their_own_deadline() -> None:
    deadlines = Deadlines()
    long = asyncio.ensure_future(deadlines.run(_sleep_then(0.3, "long"), 5))
    short = asyncio.ensure_future(deadlines.run(_sleep_then(10, "short"), 0.05))
    shorter = asyncio.ensure_future(deadlines.run(_sleep_then(10, "shorter"), 0.02))
    results = await asyncio.gather(long, short, shorter, return_exceptions=True)
    assert results[0] == "long"
    assert isinstance(results[1], TimeoutError) and isinstance(results[2], TimeoutError)


@pytest.mark.asyncio
async def test_a_cancellation_from_elsewhere_stays_a_cancellation() -> None:
    deadlines = Deadlines()
    task = asyncio.ensure_future(deadlines.run(_sleep_then(10, "never"), 5))
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.asyncio
async def test_a_cancellation_from_elsewhere_at_the_deadline_stays_a_cancellation() -> None:
    deadlines = Deadlines()

    async def cancelled_at_its_deadline() -> str:
        task = asyncio.current_task()
        assert task is not None
        asyncio.get_running_loop().call_later(0.05, task.cancel)
        return await deadlines.run(_sleep_then(10, "never"), 0.05)

    with pytest.raises(asyncio.CancelledError):
        await asyncio.ensure_future(cancelled_at_its_deadline())


@pytest.mark.asyncio
async def test_an_operation_that_finishes_despite_its_deadline_returns_and_leaves_no_cancellation() -> None:
    deadlines = Deadlines()

    async def shielded() -> str:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            return "finished anyway"
        return "not cancelled"

    assert await deadlines.run(shielded(), 0.02) == "finished anyway"
    task = asyncio.current_task()
    assert task is not None and task.cancelling() == 0
    await asyncio.sleep(0.01)  # a cancellation left pending would surface here


def test_deadlines_hold_on_each_new_event_loop() -> None:
    deadlines = Deadlines()

    async def leave_a_timer_armed() -> None:
        assert await deadlines.run(_sleep_then(0, "ok"), 60) == "ok"

    async def time_out() -> float:
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            await deadlines.run(_sleep_then(10, "late"), 0.05)
        return time.monotonic() - started

    asyncio.run(leave_a_timer_armed())  # its loop closes with the 60-second timer still set
    assert asyncio.run(time_out()) < 2


@pytest.mark.asyncio
async def test_an_operation_whose_result_came_in_time_finishes_though_the_loop_was_busy_past_its_deadline() -> None:
    deadlines = Deadlines()
    loop = asyncio.get_running_loop()
    reply: asyncio.Future[str] = loop.create_future()

    async def wait_for_reply() -> str:
        return await reply

    operation = asyncio.ensure_future(deadlines.run(wait_for_reply(), 0.05))
    await asyncio.sleep(0)  # the operation starts, its deadline set
    loop.call_later(0.01, reply.set_result, "answered")  # the reply comes before the deadline...
    time.sleep(0.2)  # noqa: ASYNC251  # ...while the loop is busy until long after it
    assert await operation == "answered"
    late = asyncio.ensure_future(deadlines.run(_sleep_then(10, "late"), 0.05))
    await asyncio.sleep(0)
    time.sleep(0.2)  # noqa: ASYNC251  # busy as well, but no reply ever comes: the deadline holds
    with pytest.raises(TimeoutError):
        await late
