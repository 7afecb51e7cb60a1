"""The framework's compaction strategies, unchanged, on a harness agent over our stores.

The reference is the framework's own ``InMemoryHistoryProvider``, whose after-turn compaction
the framework keeps in session state: with ``harness_kwargs(compaction=...)`` our stores must
make the same summaries (counted at the scripted model) and send the model the same messages,
while the stored transcript keeps every message. Without it, a durable store makes the model
summarise on every turn once the history is long.
"""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import (
    AgentSession,
    ContextWindowCompactionStrategy,
    InMemoryHistoryProvider,
    SummarizationStrategy,
    create_harness_agent,
)

from agents_support import StoreTarget
from compaction_support import CountingModel

pytestmark = pytest.mark.asyncio

TURNS = 14
SESSION = "s-long"
BARE = {
    "disable_web_search": True,
    "disable_tool_auto_approval": True,
    "disable_todo": True,
    "disable_mode": True,
    "disable_file_memory": True,
}


async def _converse(model: CountingModel, agent: Any, turns: int = TURNS) -> None:
    session = AgentSession(session_id=SESSION)
    for turn in range(turns):
        await agent.run(f"question {turn}", session=session)


async def _reference(strategy_for: Any) -> CountingModel:
    model = CountingModel()
    strategy = strategy_for(model)
    agent = create_harness_agent(
        model,
        history_provider=InMemoryHistoryProvider(),
        before_compaction_strategy=strategy,
        after_compaction_strategy=strategy,
        **BARE,
    )
    await _converse(model, agent)
    return model


def _summarizer(model: CountingModel) -> SummarizationStrategy:
    return SummarizationStrategy(client=model, target_count=2, threshold=6)


@pytest.mark.parametrize("store_target", ["sqlite", "redis"], indirect=True)
async def test_a_summary_is_made_once_and_reused_like_the_in_memory_reference(store_target: StoreTarget) -> None:
    reference = await _reference(_summarizer)
    model = CountingModel()
    async with store_target.open() as stores:
        agent = create_harness_agent(model, **stores.harness_kwargs(compaction=_summarizer(model)), **BARE)
        await _converse(model, agent)
        history = stores.history_provider()
        stored = await history.export_messages(SESSION)
        view = await history.get_messages(SESSION)
        compacted = await stores.history_provider(skip_excluded=True).get_messages(SESSION)

    assert model.summaries == reference.summaries, "a summary was not made once and reused (or made too rarely)"
    assert model.summaries < TURNS // 2, f"the model summarised nearly every turn: {model.summaries}"
    assert model.sent == reference.sent, "the model was not sent what the in-memory reference sends"
    assert [m.text for m in stored] == [t for i in range(TURNS) for t in (f"question {i}", f"answer to question {i}")]
    assert not any("SUMMARY" in m.text for m in stored[: 2 * TURNS]), "a summary replaced a stored message"
    summaries = [m for m in view if m.text.startswith("SUMMARY#")]
    assert summaries, "the loaded view lacks the stored summaries"
    assert len(view) == len(stored) + len(summaries), "the loaded view is not the transcript plus its summaries"
    assert compacted[0].text == f"SUMMARY#{model.summaries}", "the newest summary does not open the model's view"
    assert [m.text for m in compacted[1:]] == [f"question {TURNS - 1}", f"answer to question {TURNS - 1}"]


async def test_without_stored_compaction_a_durable_store_summarises_every_turn(tmp_path: Any) -> None:
    """The failure the stored compaction prevents, shown on the same conversation."""
    from agent_stores.core import open_stores

    model = CountingModel()
    strategy = _summarizer(model)
    async with open_stores(f"sqlite:///{tmp_path}/plain.db") as stores:
        agent = create_harness_agent(
            model,
            **stores.harness_kwargs(),
            before_compaction_strategy=strategy,
            after_compaction_strategy=strategy,
            **BARE,
        )
        await _converse(model, agent)
    assert model.summaries >= TURNS - 5, f"expected a summary on nearly every turn, got {model.summaries}"


def _context_window(model: CountingModel) -> ContextWindowCompactionStrategy:
    return ContextWindowCompactionStrategy(max_context_window_tokens=120, max_output_tokens=20)


@pytest.mark.parametrize("store_target", ["sqlite", "redis"], indirect=True)
async def test_the_context_window_strategy_sends_what_the_in_memory_reference_sends(store_target: StoreTarget) -> None:
    reference = await _reference(_context_window)
    model = CountingModel()
    async with store_target.open() as stores:
        agent = create_harness_agent(model, **stores.harness_kwargs(compaction=_context_window(model)), **BARE)
        await _converse(model, agent)
        stored = await stores.history_provider().export_messages(SESSION)
        view = await stores.history_provider().get_messages(SESSION)
    assert model.sent == reference.sent, "the model was not sent what the in-memory reference sends"
    assert len(model.sent[-1]) < 2 * TURNS, "the context window strategy did not compact at all"
    assert len(stored) == 2 * TURNS, "the stored transcript lost or gained messages"
    assert any(m.additional_properties.get("_excluded") for m in view), "the truncation was not stored"


@pytest.mark.parametrize("store_target", ["sqlite"], indirect=True)
async def test_a_plain_agent_wired_as_documented_stores_its_summaries(store_target: StoreTarget) -> None:
    """docs/compaction.md's plain ``Agent``: the compaction provider before the history provider."""
    from agent_framework import Agent

    from agent_stores.core import StoreCompactionProvider

    model = CountingModel()
    async with store_target.open() as stores:
        history = stores.history_provider(skip_excluded=True)
        compaction = StoreCompactionProvider(history, after_strategy=_summarizer(model))
        agent = Agent(model, context_providers=[compaction, history], default_options={"store": False})
        session = AgentSession(session_id=SESSION)
        for turn in range(TURNS):
            await agent.run(f"question {turn}", session=session)
        stored = await stores.history_provider().export_messages(SESSION)
    assert len(stored) == 2 * TURNS, "the stored transcript lost or gained messages"
    assert 1 <= model.summaries < TURNS // 2, f"summaries were not made once and reused: {model.summaries}"
    last = model.sent[-1]
    assert last[0].startswith("SUMMARY#") and "question 0" not in last, f"the model was not sent the view: {last}"


@pytest.mark.parametrize("store_target", ["sqlite"], indirect=True)
async def test_with_retention_the_model_is_sent_the_same_and_the_store_keeps_only_the_view(
    store_target: StoreTarget,
) -> None:
    """``harness_kwargs(compaction=..., retain=True)``: same model calls as the reference, excluded messages gone."""
    reference = await _reference(_summarizer)
    model = CountingModel()
    async with store_target.open() as stores:
        agent = create_harness_agent(model, **stores.harness_kwargs(compaction=_summarizer(model), retain=True), **BARE)
        await _converse(model, agent)
        stored = await stores.history_provider().export_messages(SESSION)
    assert model.summaries == reference.summaries, "retention changed when summaries are made"
    assert model.sent == reference.sent, "retention changed what the model is sent"
    assert len(stored) < TURNS, f"retention kept {len(stored)} messages of {2 * TURNS}"
    assert not any(m.additional_properties.get("_excluded") for m in stored), "an excluded message is still stored"
    assert stored[0].text.startswith("SUMMARY#"), "the newest summary is not stored at the start"
