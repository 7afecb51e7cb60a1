"""A long harness conversation under the framework's compaction, on each history store.

Run: ``uv run benchmarks/compaction_bench.py`` (``--turns 200`` by default; ``--quick`` for 20).

One harness agent per store talks ``--turns`` turns with an offline scripted model (answers
of a fixed length; a summarisation request gets a summary). The framework's strategy runs as
``create_harness_agent`` wires it, before each model call and after each turn:

* ``framework InMemoryHistoryProvider``: the reference (its after-turn compaction is kept in
  session state);
* ``framework FileHistoryProvider``: a durable store the after-turn compaction never reaches;
* ``ours: SQLite, compaction stored``: ``harness_kwargs(compaction=...)``;
* ``ours: SQLite, compaction not stored``: our store wired like the framework's stores.

Reported per store and strategy: summarisation calls, model calls, messages and estimated
tokens (characters / 4) sent per model call (mean and last), and the median time of loading
the session's history at the end (``get_messages``). Nothing here asserts a speed; results go
to ``benchmarks/results/compaction.md`` and ``compaction.json`` (see ``--out``).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from agent_framework import (
    AgentSession,
    BaseChatClient,
    ChatMiddlewareLayer,
    ChatResponse,
    ContextWindowCompactionStrategy,
    FileHistoryProvider,
    FunctionInvocationLayer,
    InMemoryHistoryProvider,
    Message,
    SummarizationStrategy,
    create_harness_agent,
)
from agent_framework._feature_stage import ExperimentalWarning

from agent_stores.core import open_stores

warnings.filterwarnings("ignore", category=ExperimentalWarning)

DEFAULT_OUT = Path(__file__).resolve().parent / "results"
SESSION = "long"
BARE = {
    "disable_web_search": True,
    "disable_tool_auto_approval": True,
    "disable_todo": True,
    "disable_mode": True,
    "disable_file_memory": True,
}
_ANSWER = "Here is a considered answer with enough words to weigh something in the context. " * 4


class ScriptedModel(  # pyright: ignore[reportIncompatibleMethodOverride]
    ChatMiddlewareLayer[Any], FunctionInvocationLayer[Any], BaseChatClient[Any]
):
    """Answers every prompt with a fixed text; a summarisation request gets a short summary. Counts both."""

    OTEL_PROVIDER_NAME = "scripted"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.summaries = 0
        self.sent_messages: list[int] = []
        self.sent_chars: list[int] = []

    async def _inner_get_response(  # type: ignore[override]  # pyright: ignore[reportIncompatibleMethodOverride]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse:
        if not options.get("tools") and len(messages) == 2 and messages[0].role == "system":
            self.summaries += 1
            return ChatResponse(messages=[Message(role="assistant", contents=[f"Summary {self.summaries}."])])
        self.sent_messages.append(len(messages))
        self.sent_chars.append(sum(len(m.text) for m in messages))
        return ChatResponse(messages=[Message(role="assistant", contents=[_ANSWER])])


def _strategies(model: ScriptedModel) -> dict[str, Any]:
    return {
        "summarization": SummarizationStrategy(client=model, target_count=8, threshold=12),
        "context window": ContextWindowCompactionStrategy(max_context_window_tokens=4_000, max_output_tokens=500),
    }


async def _converse(agent: Any, turns: int) -> None:
    session = AgentSession(session_id=SESSION)
    for turn in range(turns):
        await agent.run(f"Question {turn}: what comes next in our plan?", session=session)


async def _load_time(load: Callable[[], Any], reps: int) -> float:
    times: list[float] = []
    for _ in range(reps):
        start = time.perf_counter()
        await load()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def _run(store: str, strategy_name: str, turns: int, folder: Path, loads: int) -> dict[str, Any]:
    model = ScriptedModel()
    strategy = _strategies(model)[strategy_name]
    both = {"before_compaction_strategy": strategy, "after_compaction_strategy": strategy}
    load: Callable[[], Any]
    if store == "framework InMemoryHistoryProvider":
        history = InMemoryHistoryProvider()
        agent = create_harness_agent(model, history_provider=history, **both, **BARE)
        session = AgentSession(session_id=SESSION)
        for turn in range(turns):
            await agent.run(f"Question {turn}: what comes next in our plan?", session=session)
        state = session.state

        async def load() -> Any:
            return await history.get_messages(SESSION, state=state.setdefault(history.source_id, {}))

        load_s = await _load_time(load, loads)
    elif store == "framework FileHistoryProvider":
        history = FileHistoryProvider(folder / f"file-{strategy_name}")
        agent = create_harness_agent(model, history_provider=history, **both, **BARE)
        await _converse(agent, turns)

        async def load() -> Any:
            return await history.get_messages(SESSION)

        load_s = await _load_time(load, loads)
    else:
        stored = store == "ours: SQLite, compaction stored"
        url = f"sqlite:///{folder}/ours-{stored}-{strategy_name.replace(' ', '-')}.db"
        async with open_stores(url) as stores:
            kwargs = stores.harness_kwargs(compaction=strategy) if stored else {**stores.harness_kwargs(), **both}
            agent = create_harness_agent(model, **kwargs, **BARE)
            await _converse(agent, turns)
            reader = stores.history_provider()

            async def load() -> Any:
                return await reader.get_messages(SESSION)

            load_s = await _load_time(load, loads)
    return {
        "store": store,
        "strategy": strategy_name,
        "turns": turns,
        "summaries": model.summaries,
        "model_calls": len(model.sent_messages),
        "messages_per_call_mean": statistics.fmean(model.sent_messages),
        "messages_last_call": model.sent_messages[-1],
        "tokens_per_call_mean": statistics.fmean(model.sent_chars) / 4,
        "tokens_last_call": model.sent_chars[-1] / 4,
        "load_ms": load_s * 1000,
    }


STORES = (
    "framework InMemoryHistoryProvider",
    "framework FileHistoryProvider",
    "ours: SQLite, compaction stored",
    "ours: SQLite, compaction not stored",
)


def _markdown(rows: list[dict[str, Any]]) -> str:
    lines = [
        "# Compaction over a long conversation",
        "",
        "Generated by `benchmarks/compaction_bench.py`; offline scripted model, tokens estimated as characters / 4.",
        "",
        "| strategy | store | turns | summaries | tokens/call (mean) | tokens last call | messages last call "
        "| load ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['strategy']} | {r['store']} | {r['turns']} | {r['summaries']} | {r['tokens_per_call_mean']:.0f} "
            f"| {r['tokens_last_call']:.0f} | {r['messages_last_call']} | {r['load_ms']:.2f} |"
        )
    return "\n".join(lines) + "\n"


async def run(turns: int, loads: int) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        for strategy_name in ("summarization", "context window"):
            for store in STORES:
                rows.append(await _run(store, strategy_name, turns, Path(tmp), loads))
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--loads", type=int, default=20, help="Timed loads of the final history per store.")
    parser.add_argument("--quick", action="store_true", help="20 turns, 3 loads.")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    turns, loads = (20, 3) if args.quick else (args.turns, args.loads)
    rows = asyncio.run(run(turns, loads))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compaction.json").write_text(json.dumps({"rows": rows}, indent=2) + "\n")
    (args.out / "compaction.md").write_text(_markdown(rows))
    sys.stdout.write(_markdown(rows))


if __name__ == "__main__":
    main()
