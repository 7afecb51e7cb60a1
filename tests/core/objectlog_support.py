"""An in-process object driver that records each request, for tests that count what an object log costs."""

from __future__ import annotations

from typing import Any

from agent_stores.core.memory import MemoryObjectDriver


class Counting(MemoryObjectDriver):
    """The in-process object driver, recording each request's kind (``get``, ``list``, ``put``) in ``calls``."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    async def get(self, key: str) -> Any:
        self.calls.append("get")
        return await super().get(key)

    async def list(self, prefix: str, **kwargs: Any) -> Any:
        self.calls.append("list")
        return await super().list(prefix, **kwargs)

    async def put(self, key: str, data: bytes, **kwargs: Any) -> str:
        self.calls.append("put")
        return await super().put(key, data, **kwargs)
