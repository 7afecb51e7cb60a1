"""One-round-trip saves: the conditions under which a save appends its batch unchanged, for drivers that check them.

A save whose tail the provider does not remember reads the tail, decides, then appends: two
round trips. A driver offering :class:`~agent_stores.core.drivers.UnseenAppendDriver` takes the
conditions below and does both in one atomic step. They are exactly the cases in which
``LogHistoryProvider`` would append the whole batch at the version it read:

- the log is live, none of its last ``len(batch)`` records is one of the batch's messages (so
  ``count_already_stored`` keeps all: it keeps back a message only for a stored identity equal
  to an incoming one) and none of them is a compaction or seal record (so those records are the
  last messages, and the log is not being swapped by a retention); or
- the log is absent and no retention has staged the session beside it.

In every other case the driver writes nothing and returns the tail it read, and the provider
decides as usual.
"""

from __future__ import annotations

from collections.abc import Sequence

from .compaction import COMPACTION_DIGEST, SEAL_DIGEST
from .drivers import LogDriver, LogRecord, LogTail, UnseenAppend, UnseenAppendDriver
from .prefixed import PrefixedLogDriver

__all__ = ["UnseenAppender"]


class UnseenAppender:
    """The one-step save of a provider's driver, when the driver (or the driver under its tenant view) offers it.

    Args:
        driver: The provider's driver, as it addresses it (a :class:`PrefixedLogDriver` view
            is seen through: keys get its prefix).
    """

    def __init__(self, driver: LogDriver) -> None:
        target: object = driver
        self._prefix = ""
        if isinstance(driver, PrefixedLogDriver):
            target, self._prefix = driver.driver, driver.prefix
        self._driver = target if isinstance(target, UnseenAppendDriver) else None

    @property
    def available(self) -> bool:
        """Whether the driver offers the one-step save."""
        return self._driver is not None

    async def __call__(
        self, key: str, staging: str, records: Sequence[LogRecord], *, read: int, session_id: str, ttl: float | None
    ) -> UnseenAppend | None:
        """Append ``records`` (a de-duplicated save's whole batch) in one step when the conditions hold.

        Returns:
            ``None`` when the driver lacks the capability, or when it did not append and the tail
            it read stops short among compaction records (read it the usual way); otherwise what
            the driver did and the log's end (``read`` records before the batch, then the batch).
        """
        if self._driver is None:
            return None
        outcome = await self._driver.append_unseen(
            self._prefix + key,
            records,
            window=len(records),
            stop=(COMPACTION_DIGEST, SEAL_DIGEST),
            staging=self._prefix + staging,
            read=read,
            session_id=session_id,
            ttl=ttl,
        )
        tail = outcome.tail
        if not outcome.appended and COMPACTION_DIGEST in tail.digests and len(tail.digests) < tail.length:
            return None
        return UnseenAppend(outcome.appended, LogTail(tail.length, list(tail.digests), tail.version))
