"""SQLite's ``put_in_order``: one statement per 200 items, each judged on the objects as they were before it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_stores.core import OrderedPut, StoreConflictError
from agent_stores.sqlite import SQLiteDatabase, SQLiteObjectDriver

pytestmark = pytest.mark.asyncio


async def test_put_in_order_is_one_statement_per_200_items(tmp_path: Path) -> None:
    database = SQLiteDatabase.from_path(tmp_path / "in-order.db")
    driver = SQLiteObjectDriver(database)
    statements: list[str] = []
    fetchall = database.fetchall

    async def counted(sql: str, parameters: Any = ()) -> list[Any]:
        statements.append(sql)
        return await fetchall(sql, parameters)

    database.fetchall = counted  # pyright: ignore[reportAttributeAccessIssue]
    try:
        versions = await driver.put_in_order([OrderedPut("r", b"r", if_absent=True), OrderedPut("e", b"\x00e")])
        assert len(statements) == 1
        assert [await driver.get("r"), await driver.get("e")] == [
            (b"r", versions[0]),
            (b"\x00e", versions[1]),
        ]
        await driver.put("i/250", b"taken")
        statements.clear()
        items = [OrderedPut(f"i/{n:03d}", b"x", if_absent=True) for n in range(300)]
        with pytest.raises(StoreConflictError, match="i/250"):
            await driver.put_in_order(items)
        assert len(statements) == 2
        written = (await driver.list("i/", delimiter=None)).keys
        assert written == [item.key for item in items[:251]]  # 000-249, and 250 stored before
        taken = await driver.get("i/250")
        assert taken is not None and taken.data == b"taken"
    finally:
        await driver.aclose()
