"""Stored compaction in the core: conflicts retry on the new tail, de-duplication and windows see past it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_framework import Message, SlidingWindowStrategy

from agent_stores.core import open_stores

pytestmark = pytest.mark.asyncio


def _turn(i: int) -> list[Message]:
    return [Message(role="user", contents=[f"q{i}"]), Message(role="assistant", contents=[f"a{i}"])]


class RacingStrategy:
    """A sliding window that, the first time it runs, lets another writer save a turn first (a forced race)."""

    def __init__(self, other: Any, session_id: str) -> None:
        self.window = SlidingWindowStrategy(keep_last_groups=2)
        self.other = other
        self.session_id = session_id
        self.seen: list[list[str]] = []

    async def __call__(self, messages: list[Message]) -> bool:
        self.seen.append([m.text for m in messages])
        if len(self.seen) == 1:
            await self.other.save_messages(self.session_id, _turn(99))
        return await self.window(messages)


async def test_a_save_landing_during_a_compaction_makes_it_decide_again_on_the_new_tail(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/race.db"
    async with open_stores(url) as mine, open_stores(url) as theirs:
        history, other = mine.history_provider(), theirs.history_provider()
        for i in range(4):
            await history.save_messages("s", _turn(i))
        strategy = RacingStrategy(other, "s")
        assert await history.compact("s", strategy)
        assert len(strategy.seen) == 2, "the compaction did not run again after the racing save"
        assert strategy.seen[1][-2:] == ["q99", "a99"], "the retry did not see the message saved meanwhile"
        stored = await history.export_messages("s")
        assert [m.text for m in stored] == [t for i in (0, 1, 2, 3, 99) for t in (f"q{i}", f"a{i}")]
        view = await mine.history_provider(skip_excluded=True).get_messages("s")
        assert [m.text for m in view] == ["q99", "a99"], "the stored window is not the newest groups"


async def test_a_replayed_turn_after_a_compaction_is_not_stored_twice(tmp_path: Path) -> None:
    async with open_stores(f"sqlite:///{tmp_path}/dedup.db") as stores:
        history = stores.history_provider()
        turns = [_turn(i) for i in range(3)]
        for turn in turns:
            await history.save_messages("s", turn)
        assert await history.compact("s", SlidingWindowStrategy(keep_last_groups=2))
        fresh = stores.history_provider()  # no remembered tail: reads it, compaction record included
        await fresh.save_messages("s", turns[-1])
        await history.save_messages("s", turns[-1])
        assert [m.text for m in await history.export_messages("s")] == ["q0", "a0", "q1", "a1", "q2", "a2"]


async def test_a_window_applies_the_compactions_inside_it(tmp_path: Path) -> None:
    async with open_stores(f"sqlite:///{tmp_path}/window.db") as stores:
        history = stores.history_provider()
        for i in range(4):
            await history.save_messages("s", _turn(i))
        assert await history.compact("s", SlidingWindowStrategy(keep_last_groups=2))
        await history.save_messages("s", _turn(4))
        windowed = await stores.history_provider(max_messages=4).get_messages("s")
        assert [m.text for m in windowed] == ["q3", "a3", "q4", "a4"]
        assert not any(m.additional_properties.get("_excluded") for m in windowed)
        whole = await stores.history_provider().get_messages("s")
        assert [bool(m.additional_properties.get("_excluded")) for m in whole] == [True] * 6 + [False] * 4


async def test_nothing_is_stored_when_the_strategy_changes_nothing(tmp_path: Path) -> None:
    async with open_stores(f"sqlite:///{tmp_path}/noop.db") as stores:
        history = stores.history_provider()
        await history.save_messages("s", _turn(0))
        assert not await history.compact("s", SlidingWindowStrategy(keep_last_groups=5))
        assert await history.count_messages("s") == 2
        assert not await history.compact("empty", SlidingWindowStrategy(keep_last_groups=1))


def _tool_turn(i: int) -> list[Message]:
    from agent_framework import Content

    call = Content.from_function_call(f"c{i}", "lookup", arguments={"q": str(i)})
    return [
        Message(role="user", contents=[f"look up {i}"]),
        Message(role="assistant", contents=[call]),
        Message(role="tool", contents=[Content.from_function_result(f"c{i}", result=f"result {i} " * 20)]),
        Message(role="assistant", contents=[f"found {i}"]),
    ]


@pytest.mark.parametrize("strategy_name", ["tool_result", "selective_tool_call"])
async def test_tool_call_strategies_load_back_as_the_framework_decided(tmp_path: Path, strategy_name: str) -> None:
    from agent_framework import SelectiveToolCallCompactionStrategy, ToolResultCompactionStrategy, apply_compaction

    def strategy() -> Any:
        if strategy_name == "tool_result":
            return ToolResultCompactionStrategy(keep_last_tool_call_groups=1)
        return SelectiveToolCallCompactionStrategy(keep_last_tool_call_groups=1)

    saved = [m for i in range(3) for m in _tool_turn(i)]
    async with open_stores(f"sqlite:///{tmp_path}/tools.db") as stores:
        history = stores.history_provider()
        await history.save_messages("s", saved)
        assert await history.compact("s", strategy())
        reference = [Message.from_dict(m.to_dict()) for m in saved]
        await apply_compaction(reference, strategy=strategy())
        loaded = await stores.history_provider().get_messages("s")
        assert [m.to_dict() for m in loaded] == [m.to_dict() for m in reference]
        assert [m.to_dict() for m in await history.export_messages("s")] == [m.to_dict() for m in saved]
        view = await stores.history_provider(skip_excluded=True).get_messages("s")
        assert len(view) < len(saved), "the strategy's exclusions were not applied"


async def test_a_provider_that_loads_again_sees_what_a_new_provider_sees(tmp_path: Path) -> None:
    """The fold cache: saves, compactions (rewrites and summaries), retention and a rewritten log of the same length."""
    from agent_stores.testing.history import SuiteCompaction

    async with open_stores(f"sqlite:///{tmp_path}/folds.db") as stores:
        cached: Any = stores.history_provider()

        async def same() -> list[dict[str, Any]]:
            mine = [m.to_dict() for m in await cached.get_messages("s")]
            assert mine == [m.to_dict() for m in await stores.history_provider().get_messages("s")]
            return mine

        for i in range(3):
            await cached.save_messages("s", _turn(i))
        assert await cached.compact("s", SuiteCompaction(keep=3))
        first = await same()
        first[0]["contents"][0]["text"] = "changed by the caller"
        (await cached.get_messages("s"))[1].additional_properties["_excluded"] = "changed by the caller"
        await same()
        await cached.save_messages("s", _turn(3))
        await same()
        assert await cached.compact("s", SlidingWindowStrategy(keep_last_groups=1))
        await same()
        assert await cached.retain("s")
        await same()
        await cached.save_messages("s", _turn(4))
        assert await cached.compact("s", SuiteCompaction(keep=1))
        before = await same()
        await cached.delete_session("s")  # written again with as many records, differently
        for i in (5, 6, 7):
            await stores.history_provider().save_messages("s", _turn(i)[:1] if i == 7 else _turn(i))
        assert await stores.history_provider().compact("s", SuiteCompaction(keep=2))
        assert await same() != before
