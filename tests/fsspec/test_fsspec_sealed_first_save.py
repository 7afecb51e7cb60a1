"""A sealed folder: a session's first save and ``agent-stores migrate`` take the one-request paths, sealed.

The first save starts the log with ``create`` and a migration reads the source with
``read_many`` and writes the target with ``create``: through the sealing layer, so the files on
disk hold no message text, and a record copied into another session's log fails to open.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_framework import Message

from agent_stores.cli import _migrate
from agent_stores.core import CorruptRecordError, LogRecord, open_stores, tenant_root
from agent_stores.core.prefixed import within
from agent_stores.core.sealing import Keyring

pytestmark = pytest.mark.asyncio

SECRET = "sealed-first-save-2718"


def _msg(text: str) -> list[Message]:
    return [Message(role="user", contents=[text], message_id=text)]


def _leaks(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and SECRET.encode() in p.read_bytes()]


async def test_a_sealed_first_save_writes_only_sealed_bytes_and_binds_them(tmp_path: Path) -> None:
    keyring = tmp_path / "keyring.json"
    Keyring.create(keyring)
    folder = tmp_path / "store"
    async with open_stores(f"file://{folder}?keyring={keyring}") as stores:
        history: Any = stores.tenant("acme").history_provider()
        assert getattr(history.driver, "create", None) is not None and history.reads_many
        await history.save_messages("first", _msg(f"{SECRET} one"))
        await history.save_messages("first", _msg(f"{SECRET} two"))
        assert _leaks(folder) == []
        raw = within(stores.raw_logs, tenant_root("acme"))
        (log,) = await raw.list_logs("", limit=10)
        payloads = await raw.read(log.key)
        moved = [LogRecord("d", p) for p in payloads]
        await raw.append(log.key.replace("first", "moved"), moved, expected_version=None, session_id="moved")
        with pytest.raises(CorruptRecordError):
            await history.export_logs(["moved"])
        with pytest.raises(CorruptRecordError):
            await history.get_messages("moved")
        exported = await history.export_logs(["first"])
        assert [m.text for m in exported[0] if isinstance(m, Message)] == [f"{SECRET} one", f"{SECRET} two"]


async def test_a_migration_into_and_out_of_a_sealed_folder_writes_only_sealed_bytes(tmp_path: Path) -> None:
    keyring = tmp_path / "keyring.json"
    Keyring.create(keyring)
    source, back = f"sqlite:///{tmp_path / 'source.db'}", f"sqlite:///{tmp_path / 'back.db'}"
    folder = tmp_path / "store"
    async with open_stores(source) as stores:
        for i in range(5):
            await stores.tenant("acme").history_provider().save_messages(f"s{i}", _msg(f"{SECRET} {i}"))
    sealed = f"file://{folder}?keyring={keyring}"
    report = await _migrate.migrate(source, sealed)
    assert report.ok and sum(i.kind == "history" and i.verified for i in report.items) == 5
    assert _leaks(folder) == []
    report = await _migrate.migrate(sealed, back)  # read back through the sealing layer, many per listing
    assert report.ok and sum(i.kind == "history" and i.verified for i in report.items) == 5
    async with open_stores(back) as stores:
        history = stores.tenant("acme").history_provider()
        assert [[m.text for m in await history.get_messages(f"s{i}")] for i in range(5)] == [
            [f"{SECRET} {i}"] for i in range(5)
        ]
