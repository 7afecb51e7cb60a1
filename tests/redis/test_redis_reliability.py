"""Redis defects found by review, kept fixed: expiry bookkeeping never drops a live session from listings.

The cases that need Redis to expire a log by itself (a session written again without ttl
stays listed, expired logs still leave the index) are in ``test_redis_backend.py``'s one
test on the real clock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from redis.asyncio import Redis

from agent_stores.core import LogRecord
from agent_stores.redis import RedisConnection, RedisLogDriver
from agent_stores.testing.servers import Server

pytestmark = pytest.mark.asyncio


@pytest_asyncio.fixture
async def client(redis_single: Server) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis_single.url)
    yield client
    await client.aclose()


@pytest.fixture
def connection(client: Redis, key_prefix: str) -> RedisConnection:
    return RedisConnection(client, key_prefix=key_prefix)


async def test_listing_keeps_a_live_log_whose_expiry_entry_is_stale(client: Redis, connection: RedisConnection) -> None:
    """An expiry entry in the past whose log still exists is corrected, never taken as proof the log is gone.

    Covers entries left by any earlier version or interrupted bookkeeping: the log with a TTL
    keeps its entry at its real expiry, the log without one loses the entry, both stay listed.
    """
    driver = RedisLogDriver(connection)
    await driver.append("with-ttl", [LogRecord("d", b"1")], expected_version=None, session_id="a", ttl=60)
    await driver.append("without", [LogRecord("d", b"1")], expected_version=None, session_id="b")
    expiry = connection.log_keys("with-ttl")[4]
    other = connection.log_keys("without")[4]
    await client.zadd(expiry, {"with-ttl": 1})  # pyright: ignore[reportUnknownMemberType]
    await client.zadd(other, {"without": 1})  # pyright: ignore[reportUnknownMemberType]
    assert [info.session_id for info in await driver.list_logs("")] == ["a", "b"]
    assert await driver.purge_expired() == 0
    assert [info.session_id for info in await driver.list_logs("")] == ["a", "b"]
    score = await client.zscore(expiry, "with-ttl")  # pyright: ignore[reportUnknownMemberType]
    assert score is not None and score > 1, "the live log's expiry entry was not moved to its real expiry"
    assert await client.zscore(other, "without") is None  # pyright: ignore[reportUnknownMemberType]


# -- credentials never shown -------------------------------------------------------------------------

_SECRETS = ("Hunter2pw", "p@ss/Wrd")


def _shown(err: BaseException) -> str:
    text = ""
    seen: BaseException | None = err
    while seen is not None:
        text += f"{seen} {seen!r} "
        seen = seen.__cause__ or seen.__context__
    return text


@pytest.mark.parametrize(
    "url",
    [
        "redis://user:Hunter2pw@h:6379/0",
        "rediss://:Hunter2pw@h/1?socket_timeout=1",
        "redis+cluster://u:Hunter2pw@a:1,b:2",
    ],
)
async def test_reprs_never_show_the_password(url: str) -> None:
    from agent_stores.core import open_stores
    from agent_stores.redis import parse_redis_url

    stores = open_stores(url)
    try:
        history = stores.history_provider()
        shown = " ".join(repr(x) for x in (stores, history.connection, parse_redis_url(url)))
        assert not [s for s in _SECRETS if s in shown], shown
    finally:
        await stores.aclose()


@pytest.mark.parametrize(
    "url",
    [
        "redis:/user:Hunter2pw@host/0",
        "redis:user:Hunter2pw@host",
        "redis://user:p@ss/Wrd@host/0",
        "redis://user:Hunter2pw@host:notaport/0",
        "redis://user:Hunter2pw@host/notadb",
        "redis://user:Hunter2pw@host/0?socket_timeout=soon",
        "redis://user:Hunter2pw@host/0?password=Hunter2pw",
        "redis+cluster://user:Hunter2pw@a:1,b:notaport",
        "redis+cluster://user:Hunter2pw@a:1/3",
    ],
)
async def test_errors_about_malformed_urls_never_show_a_password(url: str) -> None:
    from agent_stores.core import open_stores

    with pytest.raises(ValueError) as caught:
        open_stores(url)
    assert not [s for s in _SECRETS if s in _shown(caught.value)], _shown(caught.value)
