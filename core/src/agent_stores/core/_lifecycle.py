"""Borrow-or-own lifecycle shared by every store: ``aclose()`` and ``async with``."""

from __future__ import annotations

import warnings
from types import TracebackType
from typing import Any, Protocol, Self


class _Closable(Protocol):
    async def aclose(self) -> None: ...


class OwnedResource:
    """Closes the driver it owns on ``aclose()``; a borrowed driver is never closed.

    An owned driver that is garbage-collected unclosed emits a ``ResourceWarning``.
    """

    _resource: _Closable
    _owns_resource: bool = False
    _closed: bool = False

    def _adopt(self, resource: _Closable, *, owned: bool) -> None:
        self._resource = resource
        self._owns_resource = owned

    async def aclose(self) -> None:
        """Close what this store owns. Idempotent; a borrowed client stays open."""
        if self._closed:
            return
        self._closed = True
        if self._owns_resource:
            await self._resource.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    def __del__(self, _warn: Any = warnings.warn) -> None:
        if getattr(self, "_owns_resource", False) and not getattr(self, "_closed", True):
            _warn(f"{type(self).__name__} was not closed; call aclose() or use 'async with'", ResourceWarning, 1)
