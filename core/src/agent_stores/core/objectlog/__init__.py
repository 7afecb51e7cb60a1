"""The object-store log: a :class:`~agent_stores.core.drivers.LogDriver` of immutable segment objects.

Its stored format is in ``_format``, what a driver remembers of the logs it read in ``_ends``,
what a damaged log is missing in ``_gaps``, and the driver in ``_driver``; ``docs/core.md``
describes how it works.
"""

from ._driver import FAIR_CLAIMS, LOG_OPTIONS, ObjectLogDriver, log_options, read_fair_claims
from ._gaps import Gap, LogGapError, Salvage

__all__ = [
    "FAIR_CLAIMS",
    "LOG_OPTIONS",
    "Gap",
    "LogGapError",
    "ObjectLogDriver",
    "Salvage",
    "log_options",
    "read_fair_claims",
]
