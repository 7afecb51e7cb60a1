"""Our subclasses of the framework's experimental bases, defined without a warning to users."""

from __future__ import annotations

import re
import warnings
from collections.abc import Generator
from contextlib import contextmanager

__all__ = ["subclassing_experimental"]


@contextmanager
def subclassing_experimental(base: type) -> Generator[None]:
    """Run class statements that subclass the experimental ``base`` without the framework's warning about it.

    Agent Framework warns (``ExperimentalWarning``, a ``FutureWarning``) when a class outside it
    subclasses an experimental base such as ``AgentFileStore`` or ``SessionStore``. Our stores do
    so on purpose, and the warning would reach every program importing them. Only that warning
    is ignored, matched by category and by the message naming ``base``, and only while the block
    runs; every other warning, a user's own uses of the framework's experimental APIs included,
    follows the filters in force. The framework reports each experimental feature once per
    process, so that feature's report is spent by our definition.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message=rf"\[\w+\] {re.escape(base.__name__)} is experimental", category=FutureWarning
        )
        yield
