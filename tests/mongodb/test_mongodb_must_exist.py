"""MongoDB with ``must_exist``: a database without the stores' collections is an error, and a read creates none."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from agent_framework import Message
from pymongo import AsyncMongoClient

from agent_stores.core import open_stores
from agent_stores.testing.servers import Server
from mongodb_support import client_options, url_with_database


async def _collections(server: Server, database: str) -> list[str]:
    client: AsyncMongoClient[dict[str, Any]] = AsyncMongoClient(server.url, **client_options())
    try:
        return sorted(await client[database].list_collection_names())
    finally:
        await client.close()


@pytest.mark.asyncio
async def test_a_database_without_the_stores_collections_is_an_error_and_gets_none(
    mongodb: Server, reads_not_found: Callable[..., Awaitable[None]]
) -> None:
    database = f"missing_{uuid.uuid4().hex[:10]}"
    await reads_not_found(url_with_database(mongodb.url, database), database, client_options=client_options())
    assert await _collections(mongodb, database) == []


@pytest.mark.asyncio
async def test_a_database_holding_the_stores_reads_and_writes_as_usual(mongodb: Server, collection_prefix: str) -> None:
    database = f"present_{uuid.uuid4().hex[:10]}"
    url = url_with_database(mongodb.url, database)
    options: dict[str, Any] = {"collection_prefix": collection_prefix, "client_options": client_options()}
    async with open_stores(url, **options) as stores:
        await stores.history_provider().save_messages("s", [Message(role="user", contents=["hi"])])
    async with open_stores(url, must_exist=True, **options) as stores:
        assert [m.text for m in await stores.history_provider().get_messages("s")] == ["hi"]
        await stores.file_store().write("a.md", "x")
        assert await stores.file_store().read("a.md") == "x"
