"""``cache_bytes`` and ``cache_idle`` on every backend: from any store URL and from code, owned per backend.

They give the decode cache's size and how long it keeps what no load uses.
"""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import Message

from agent_stores.core import DecodeCache, open_stores
from agents_support import StoreTarget

pytestmark = pytest.mark.asyncio


def _with(url: str, option: str) -> str:
    return url + ("&" if "?" in url else "?") + option


async def test_cache_bytes_from_a_url_and_from_code(store_target: StoreTarget) -> None:
    message = [Message(role="user", contents=["hello"])]
    async with open_stores(_with(store_target.url, "cache_bytes=0"), **store_target.options) as stores:
        history: Any = stores.history_provider()
        assert history.decode_cache.max_bytes == 0
        await history.save_messages("s", message)
        assert [m.text for m in await history.get_messages("s")] == ["hello"]
        assert len(history.decode_cache.entries) == 0  # nothing kept
        # every provider the backend hands out shares the backend's one cache
        assert stores.history_provider(source_id="other").decode_cache is history.decode_cache
        assert stores.tenant("t").history_provider().decode_cache is history.decode_cache
    async with open_stores(store_target.url, cache_bytes=4096, **store_target.options) as stores:
        history = stores.history_provider()
        assert history.decode_cache.max_bytes == 4096
        assert [m.text for m in await history.get_messages("s")] == ["hello"]
        assert len(history.decode_cache.entries) == 1
        # a provider asked for a size of its own gets its own cache
        own: Any = stores.history_provider(cache_bytes=0)
        assert own.decode_cache is not history.decode_cache and own.decode_cache.max_bytes == 0
    async with open_stores(store_target.url, **store_target.options) as stores:
        assert stores.history_provider().decode_cache.max_bytes == DecodeCache().max_bytes


async def test_a_store_opened_on_its_own_takes_cache_bytes_from_its_url(store_target: StoreTarget) -> None:
    async with open_stores(store_target.url, **store_target.options) as stores:
        history_type: Any = type(stores.history_provider())
    options = {k: v for k, v in store_target.options.items()}
    async with history_type.from_url(_with(store_target.url, "cache_bytes=123"), **options) as history:
        assert history.decode_cache.max_bytes == 123
        await history.save_messages("s", [Message(role="user", contents=["hi"])])
        assert [m.text for m in await history.get_messages("s")] == ["hi"]


@pytest.mark.parametrize("value", ["-1", "lots", "1.5"])
async def test_a_bad_cache_bytes_is_a_clear_error(store_target: StoreTarget, value: str) -> None:
    with pytest.raises(ValueError, match="cache_bytes"):
        open_stores(_with(store_target.url, f"cache_bytes={value}"), **store_target.options)


async def test_cache_idle_from_a_url_and_from_code(store_target: StoreTarget) -> None:
    async with open_stores(_with(store_target.url, "cache_idle=60"), **store_target.options) as stores:
        history: Any = stores.history_provider()
        assert history.decode_cache.max_idle == 60
        await history.save_messages("s", [Message(role="user", contents=["hello"])])
        assert [m.text for m in await history.get_messages("s")] == ["hello"]
        own: Any = stores.history_provider(cache_idle=5)  # a provider asking for its own gets its own
        assert own.decode_cache is not history.decode_cache and own.decode_cache.max_idle == 5
        history_type: Any = type(history)
    async with open_stores(store_target.url, cache_idle=0.5, **store_target.options) as stores:
        assert stores.history_provider().decode_cache.max_idle == 0.5
    async with history_type.from_url(_with(store_target.url, "cache_idle=7"), **dict(store_target.options)) as history:
        assert history.decode_cache.max_idle == 7


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
async def test_a_bad_cache_idle_is_a_clear_error(store_target: StoreTarget, value: str) -> None:
    with pytest.raises(ValueError, match="cache_idle"):
        open_stores(_with(store_target.url, f"cache_idle={value}"), **store_target.options)
