"""Time in tests: ``FakeClock`` for the ttl clauses, ``eventually`` for the few checks on the real clock."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from agent_framework import Message

__all__ = ["FakeClock", "eventually", "expires_on_the_real_clock"]


class FakeClock:
    """Seconds since the epoch that change only when :meth:`advance` moves them.

    Pass it where a store or driver takes ``clock=`` (a callable returning seconds since the
    epoch): expiry then follows the clause's :meth:`advance` calls exactly, on any machine.
    It starts at the current time, so what a store writes is dated as it would be for real
    (a server's own expiry by its real clock, such as a MongoDB TTL index, acts no earlier).
    """

    def __init__(self, start: float | None = None) -> None:
        self.now = time.time() if start is None else start

    def __call__(self) -> float:
        """The current fake time."""
        return self.now

    def advance(self, seconds: float) -> None:
        """Move the clock ``seconds`` forward.

        Raises:
            ValueError: ``seconds`` is negative (time never runs backwards here).
        """
        if seconds < 0:
            raise ValueError(f"a clock only moves forward, got {seconds!r}")
        self.now += seconds


async def eventually(check: Callable[[], Awaitable[bool]], *, what: str, within: float = 60.0) -> None:
    """Await ``check()`` until it returns true; fail naming ``what`` once ``within`` seconds have passed.

    For a backend's one test on the real clock (a server's own expiry): it polls for the
    outcome within a generous bound instead of sleeping a fixed time, so it passes on a loaded
    machine and takes no longer than the outcome needs on a fast one.
    """
    deadline = time.monotonic() + within
    pause = 0.01
    while not await check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what}: not within {within:g} s", pytrace=False)
        await asyncio.sleep(pause)
        pause = min(pause * 2, 0.5)


async def expires_on_the_real_clock(history: Any) -> None:
    """Check that ``history`` expires a session by the time of day: a backend's one check on the real clock.

    ``history`` is a provider with ``count_messages`` and ``purge_expired`` (as
    ``LogHistoryProvider``), opened with a short ``ttl`` (under a second) on its default clock
    and holding no other session. A session is saved, polled for until it loads empty (within a
    generous bound); it then counts no messages, and ``purge_expired`` removes it, once.
    """
    await history.save_messages("s", [Message(role="user", contents=["bye"])])

    async def expired() -> bool:
        return await history.get_messages("s") == []

    await eventually(expired, what="the session saved with a short ttl expires")
    assert await history.count_messages("s") == 0, "an expired session counts its messages"
    assert await history.purge_expired() == 1, "purge_expired did not remove the expired session"
    assert await history.purge_expired() == 0, "purge_expired removed the expired session twice"
