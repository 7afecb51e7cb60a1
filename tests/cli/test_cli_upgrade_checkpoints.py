"""``agent-stores upgrade`` rewrites checkpoint index entries of release 0.1, in every namespace and tenant."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from typer.testing import CliRunner

from agent_stores.cli import app
from agent_stores.core import open_stores
from agent_stores.core.checkpoints import ObjectCheckpointStorage
from agent_stores.testing.checkpoints import make_checkpoint


async def _lay_down_release_0_1(url: str) -> dict[str, list[str]]:
    """Checkpoints outside tenants and in a tenant's namespace, their index entries in the 0.1 form."""
    async with open_stores(url) as stores:
        plain, scoped = stores.checkpoint_storage(), stores.checkpoint_storage(tenant="acme", namespace="ns")
        listed: dict[str, list[str]] = {}
        for name, storage, count in (("plain", plain, 3), ("scoped", scoped, 2)):
            listed[name] = [await storage.save(make_checkpoint("wf", at=i)) for i in range(count)]
            await _to_release_0_1(storage)
        return listed


async def _to_release_0_1(storage: ObjectCheckpointStorage) -> None:
    for key in (await storage.driver.list(f"{storage.root}workflows/", delimiter=None)).keys:
        stored = await storage.driver.get(key)
        assert stored is not None
        await storage.driver.delete(key)
        await storage.driver.put(key[: key.rindex("~")], stored.data)


async def _state(url: str) -> tuple[dict[str, list[str]], list[str]]:
    async with open_stores(url) as stores:
        plain, scoped = stores.checkpoint_storage(), stores.checkpoint_storage(tenant="acme", namespace="ns")
        keys = [
            key.rsplit("/", 1)[1]
            for storage in (plain, scoped)
            for key in (await storage.driver.list(f"{storage.root}workflows/", delimiter=None)).keys
        ]
        listed = {
            "plain": await plain.list_checkpoint_ids(workflow_name="wf"),
            "scoped": await scoped.list_checkpoint_ids(workflow_name="wf"),
        }
        return listed, keys


def _upgrade(url: str, *options: str) -> dict[str, object]:
    result = CliRunner().invoke(app, ["upgrade", url, "--json", *options])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_upgrade_rewrites_the_checkpoint_index_of_release_0_1(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"
    saved = asyncio.run(_lay_down_release_0_1(url))
    listed, keys = asyncio.run(_state(url))
    assert listed == saved and not any("~" in key for key in keys)  # read through their records

    planned = _upgrade(url, "--dry-run")
    item = {"kind": "checkpoints", "action": "move"}
    assert planned["items"] == [
        {**item, "tenant": "", "name": "", "detail": "3 index entries to rewrite"},
        {**item, "tenant": "acme", "name": "ns", "detail": "2 index entries to rewrite"},
    ]
    assert asyncio.run(_state(url))[1] == keys  # a dry run writes nothing

    report = _upgrade(url)
    assert report["ok"] and [item["detail"] for item in report["items"]] == [  # type: ignore[index]
        "3 index entries rewritten",
        "2 index entries rewritten",
    ]
    listed, keys = asyncio.run(_state(url))
    assert listed == saved and len(keys) == 5 and all(key.endswith("~") for key in keys)
    assert _upgrade(url)["items"] == []
