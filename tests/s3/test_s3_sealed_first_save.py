"""Sealed history on SeaweedFS: a session's first save and ``agent-stores migrate`` take the one-request paths, sealed.

The first save starts the log with ``create`` (two listings and one PUT, as unsealed) and a
migration reads the source with ``read_many`` (one listing for many sessions) and writes the
target with ``create``: through the sealing layer, so the bucket holds no message text, and a
record copied into another session's log fails to open.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_framework import Message

from agent_stores.cli import _migrate
from agent_stores.core import CorruptRecordError, LogHistoryProvider, LogRecord, ObjectLogDriver, open_stores
from agent_stores.core.sealing import DataKeys, Keyring, SealedLogDriver
from agent_stores.s3 import S3ObjectDriver
from s3_support import S3Target

pytestmark = pytest.mark.asyncio

SECRET = "sealed-first-save-1618"


def _msg(text: str) -> list[Message]:
    return [Message(role="user", contents=[text], message_id=text)]


def _leaks(target: S3Target, prefix: str) -> list[str]:
    client = target.client(skimmed=False)
    names = [o["Key"] for o in client.list_objects_v2(Bucket=target.bucket, Prefix=prefix).get("Contents", [])]
    assert names, "nothing stored under the prefix"
    return [n for n in names if SECRET.encode() in client.get_object(Bucket=target.bucket, Key=n)["Body"].read()]


class _Requests:
    """The S3 operations a client sends (botocore's event hooks)."""

    def __init__(self, client: Any) -> None:
        self.names: list[str] = []
        client.meta.events.register("before-call.s3", lambda model, **_: self.names.append(model.name))

    def take(self) -> list[str]:
        names, self.names = self.names, []
        return names


async def test_a_sealed_first_save_is_two_listings_and_one_put_of_sealed_bytes(
    seaweedfs: S3Target, s3_prefix: str
) -> None:
    client = seaweedfs.client()
    requests = _Requests(client)
    objects = S3ObjectDriver(client, seaweedfs.bucket, owns_client=True, **seaweedfs.driver_options)
    keys = DataKeys(objects, Keyring.generate())
    logs = ObjectLogDriver(objects, prefix=f"{s3_prefix}/history/")
    history = LogHistoryProvider(SealedLogDriver(logs, keys))
    try:
        await history.save_messages("warm", _msg("the data key is made and cached"))
        requests.take()
        await history.save_messages("first", _msg(f"{SECRET} one"))
        assert requests.take() == ["ListObjectsV2", "ListObjectsV2", "PutObject"]
        await history.save_messages("first", _msg(f"{SECRET} two"))
        assert requests.take() == ["PutObject"]
        assert _leaks(seaweedfs, f"{s3_prefix}/") == []

        (key,) = [log.key for log in await logs.list_logs("") if log.key.endswith("first")]
        moved = key.replace("first", "moved")
        payloads = await logs.read(key)
        await logs.append(moved, [LogRecord("d", p) for p in payloads], expected_version=None, session_id="moved")
        reader = LogHistoryProvider(SealedLogDriver(logs, keys))
        requests.take()
        with pytest.raises(CorruptRecordError):
            await reader.export_logs(["moved"])
        assert requests.take().count("ListObjectsV2") == 1  # read_many's listing: the check is on that path
        exported = await reader.export_logs(["first", "warm"])
        assert [[m.text for m in e if isinstance(m, Message)] for e in exported] == [
            [f"{SECRET} one", f"{SECRET} two"],
            ["the data key is made and cached"],
        ]
    finally:
        await objects.aclose()


async def test_a_migration_into_and_out_of_sealed_seaweedfs_writes_only_sealed_bytes(
    seaweedfs: S3Target, s3_prefix: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", seaweedfs.endpoint.access_key or "test")  # what migrate's URL opens with
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", seaweedfs.endpoint.secret_key or "test")
    keyring = tmp_path / "keyring.json"
    Keyring.create(keyring)
    source, back = f"sqlite:///{tmp_path / 'source.db'}", f"sqlite:///{tmp_path / 'back.db'}"
    async with open_stores(source) as stores:
        for i in range(5):
            await stores.tenant("acme").history_provider().save_messages(f"s{i}", _msg(f"{SECRET} {i}"))
    sealed = seaweedfs.url(f"{s3_prefix}/", keyring=str(keyring))
    report = await _migrate.migrate(source, sealed)
    assert report.ok and sum(i.kind == "history" and i.verified for i in report.items) == 5
    assert _leaks(seaweedfs, f"{s3_prefix}/") == []
    report = await _migrate.migrate(sealed, back)  # read back through the sealing layer, many per listing
    assert report.ok and sum(i.kind == "history" and i.verified for i in report.items) == 5
    async with open_stores(back) as stores:
        history = stores.tenant("acme").history_provider()
        assert [[m.text for m in await history.get_messages(f"s{i}")] for i in range(5)] == [
            [f"{SECRET} {i}"] for i in range(5)
        ]
