"""The hook form of an outage, over the core's in-process drivers: a switch every driver call passes.

:class:`Switch` is an ``Outage`` (``cut`` / ``restore``) for a store that is not reached over
TCP; :class:`Gated` wraps a driver so that each call raises ``StoreUnavailableError`` while the
switch is cut. The subclasses of :class:`Switch` are broken stores: each passes every other
suite and fails the outage clause written for its bug.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import Any

from agent_stores.core import StoreUnavailableError
from agent_stores.core.drivers import LogRecord

__all__ = ["Gated", "Switch"]

#: Past what the broken ``LimitAsUnavailable`` store holds (a document size limit).
LIMIT = 16 * 1024 * 1024


class Switch:
    """A correct outage: while cut, every driver call raises ``StoreUnavailableError`` and changes nothing."""

    def __init__(self) -> None:
        self.down = False

    def cut(self, mode: str = "refuse") -> None:
        self.down = True

    def restore(self) -> None:
        self.down = False

    async def fail(self, inner: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        raise StoreUnavailableError(f"{name}: the server is unreachable") from ConnectionRefusedError(111, "refused")

    async def up(self, inner: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        return await getattr(inner, name)(*args, **kwargs)


class Gated:
    """A driver passing every call to ``inner`` through ``switch``."""

    def __init__(self, inner: Any, switch: Switch) -> None:
        self._inner = inner
        self._switch = switch

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if not inspect.iscoroutinefunction(attribute):
            return attribute

        async def call(*args: Any, **kwargs: Any) -> Any:
            if self._switch.down and name != "aclose":
                return await self._switch.fail(self._inner, name, args, kwargs)
            return await self._switch.up(self._inner, name, args, kwargs)

        return call


class RawConnectionError(Switch):
    """Lets the client's own exception through instead of ``StoreUnavailableError``."""

    async def fail(self, inner: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        raise ConnectionRefusedError(111, "Connection refused")


class HalfWrites(Switch):
    """A write cut off mid-way keeps what reached the server: the first record, half the bytes."""

    async def fail(self, inner: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if name == "append":
            key, records = args[0], list[LogRecord](args[1])
            await inner.append(key, records[:1], **kwargs)
        elif name == "put":
            key, data = args[0], bytes(args[1])
            await inner.put(key, data[: len(data) // 2], **{k: v for k, v in kwargs.items() if k == "if_absent"})
        return await super().fail(inner, name, args, kwargs)


class NeverRecovers(Switch):
    """Keeps a dropped connection: once cut, the same store object never works again."""

    def restore(self) -> None:
        pass


class WaitsForever(Switch):
    """Has no timeout: an operation on a silent server never returns."""

    async def fail(self, inner: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        await asyncio.sleep(3600)


class LimitAsUnavailable(Switch):
    """Reports a value past a size limit as unavailability (the error a retry can never fix)."""

    async def up(self, inner: Any, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        size = 0
        if name == "append":
            size = sum(len(record.payload) for record in args[1])
        elif name == "put":
            size = len(args[1])
        if size > LIMIT:
            raise StoreUnavailableError(f"{name}: document too large")
        return await super().up(inner, name, args, kwargs)
