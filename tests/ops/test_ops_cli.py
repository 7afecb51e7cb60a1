"""``agent-stores stats`` and ``agent-stores sweep`` in process, on SQLite."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agent_stores.cli import app
from agent_stores.core import open_stores
from ops_support import seed


def test_stats_command_prints_table_and_json(tmp_path: Path) -> None:
    import asyncio

    url = f"sqlite:///{tmp_path / 'agent.db'}"

    async def fill() -> None:
        async with open_stores(url) as stores:
            await seed(stores, "acme")

    asyncio.run(fill())
    runner = CliRunner()
    result = runner.invoke(app, ["stats", url, "--json", "--sample", "1"])
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    acme = next(t for t in document["tenants"] if t["tenant"] == "acme")
    assert (acme["sessions"], acme["files"], acme["sampled"]) == (3, 2, True)
    table = runner.invoke(app, ["stats", url, "--tenant", "acme", "--sample", "1"], env={"COLUMNS": "160"})
    assert table.exit_code == 0, table.output
    assert "acme" in table.stdout and "≈" in table.stdout and "ns2" in table.stdout
    missing = runner.invoke(app, ["stats", f"sqlite:///{tmp_path / 'nope.db'}"])
    assert missing.exit_code == 2 and not (tmp_path / "nope.db").exists()


def test_sweep_command_dry_run_then_sweep(tmp_path: Path) -> None:
    import asyncio

    url = f"sqlite:///{tmp_path / 'agent.db'}"

    async def fill() -> None:
        async with open_stores(url) as stores:
            await seed(stores, "acme")

    asyncio.run(fill())
    runner = CliRunner()
    dry = runner.invoke(app, ["sweep", url, "--age", "1d", "--kind", "checkpoints,todos", "--dry-run", "--json"])
    assert dry.exit_code == 0, dry.output
    planned = json.loads(dry.stdout)
    assert planned["dry_run"] and [(i["kind"], i["action"]) for i in planned["items"]] == [("checkpoints", "delete")]
    real = runner.invoke(app, ["sweep", url, "--age", "1d", "--kind", "checkpoints,todos"], env={"COLUMNS": "160"})
    assert real.exit_code == 0, real.output
    assert "deleted: 1 checkpoints" in real.stdout and "checkpoints/ns2/records/" in real.stdout
    bad = runner.invoke(app, ["sweep", url, "--idle", "soon"])
    assert bad.exit_code == 2 and "not a duration" in bad.stderr
    none = runner.invoke(app, ["sweep", url, "--kind", "history"])
    assert none.exit_code == 2 and "--idle, --age or --keep-last" in none.stderr
