"""``OpenCheck``: what one open of a store verifies once, before the first operation of any store it hands out.

``open_stores`` attaches one check to every store it hands out (history, files, sessions,
todos, checkpoints, tenant views included). The core's stores run it through their shared
operation decorator (:func:`agent_stores.core.telemetry.store_operation`): the first operation
awaits it, and once it has passed an operation costs one attribute read, no round trip. A check
that fails raises on that operation and runs again on the next one (a server that was
unreachable is asked again; a refusal is repeated).
"""

from __future__ import annotations

import inspect
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Final, TypeVar

__all__ = ["CHECK_ATTRIBUTE", "OpenCheck"]

#: The attribute of a store that holds its :class:`OpenCheck`.
CHECK_ATTRIBUTE: Final = "_agent_stores_open_check"

T = TypeVar("T")


class OpenCheck:
    """An async check run before the first operation of the stores it is attached to, until it passes once.

    Args:
        check: What to verify; raises to refuse the operation. A bound method is held weakly,
            so the check never keeps its owner (the stores of one open) alive.
    """

    __slots__ = ("_check", "passed")

    def __init__(self, check: Callable[[], Awaitable[None]]) -> None:
        self._check: Callable[[], Callable[[], Awaitable[None]] | None] = (
            weakref.WeakMethod(check) if inspect.ismethod(check) else lambda: check
        )
        #: Whether the check has passed (it never runs again).
        self.passed = False

    async def wait(self) -> None:
        """Run the check unless it has passed. Concurrent first operations may each run it (it is idempotent)."""
        if not self.passed:
            check = self._check()
            if check is not None:  # else its owner is gone, and with it what there was to check
                await check()
            self.passed = True

    def attach(self, store: T) -> T:
        """Make ``store``'s operations wait for this check; return ``store``.

        A store that is not one of the core's (it has no ``__dict__`` or never runs the
        check) is returned as it is.
        """
        attributes: Any = getattr(store, "__dict__", None)
        if isinstance(attributes, dict):
            attributes[CHECK_ATTRIBUTE] = self
        return store
