"""The error hierarchy every agent-stores backend raises.

``StoreError`` subclasses the framework's ``IntegrationException``, so code that already
catches Agent Framework integration failures catches ours. Errors the protocols name
(``FileExistsError``, ``ValueError``, ``TypeError``) are raised as those built-ins.
"""

from __future__ import annotations

from agent_framework.exceptions import IntegrationException

__all__ = ["CorruptRecordError", "StoreConflictError", "StoreError", "StoreUnavailableError"]


class StoreError(IntegrationException):
    """A storage operation failed. The driver's own exception is chained as ``__cause__``."""

    def __init__(self, message: str) -> None:
        # The framework base logs every instance at DEBUG; keep that, but never attach the
        # inner exception to ``args``: the cause travels on ``__cause__`` (``raise ... from``).
        super().__init__(message)


class StoreUnavailableError(StoreError):
    """The backing server could not be reached or did not answer in time; retrying may succeed."""


class StoreConflictError(StoreError):
    """A conditional write lost to a concurrent writer (expected version or length did not hold)."""


class CorruptRecordError(StoreError, ValueError):
    """A stored record could not be decoded. Nothing was changed; the record is left for inspection.

    Also a ``ValueError``, which is what the framework's own stores raise for undecodable data.
    """
