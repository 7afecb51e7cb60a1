"""Realistic agent turns for the history benchmark, as framework messages and as openai-agents items.

A turn is what an agent saves after one run: two messages in one ``save_messages`` call. Three
turns out of four are a user question (no id, as a user's input arrives) and an assistant answer
of a few hundred characters (with a service message id); every fourth turn is a tool round trip:
an assistant function call and the tool's result. Every text carries its turn number, so no two
turns are equal and de-duplicating stores keep all of them.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import Any

from agent_framework import Content, Message

__all__ = ["Turn", "make_turns"]

_WORDS = (
    *("agent", "store", "session", "history", "message", "tool", "result", "weather", "invoice", "order"),
    *("customer", "shipment", "refund", "policy", "summary", "database", "latency", "request", "response"),
    *("account", "balance", "schedule", "meeting", "report", "draft", "review", "status", "update", "ticket"),
    *("priority", "deadline", "budget", "forecast", "region"),
)


@dataclass(frozen=True, slots=True)
class Turn:
    """One agent turn: the framework messages and the equivalent openai-agents input items."""

    messages: tuple[Message, Message]
    items: tuple[dict[str, Any], dict[str, Any]]


def _sentence(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    length = 0
    while length < chars:
        word = rng.choice(_WORDS)
        words.append(word)
        length += len(word) + 1
    return " ".join(words).capitalize() + "."


def _chat_turn(index: int, rng: random.Random) -> Turn:
    question = f"[{index}] {_sentence(rng, rng.randint(60, 140))}"
    answer = f"[{index}] {_sentence(rng, rng.randint(250, 500))}"
    message_id = f"msg_{index:08d}"
    return Turn(
        messages=(
            Message(role="user", contents=[Content.from_text(question)]),
            Message(role="assistant", contents=[Content.from_text(answer)], message_id=message_id),
        ),
        items=(
            {"role": "user", "content": question},
            {
                "type": "message",
                "role": "assistant",
                "id": message_id,
                "status": "completed",
                "content": [{"type": "output_text", "text": answer, "annotations": []}],
            },
        ),
    )


def _tool_turn(index: int, rng: random.Random) -> Turn:
    call_id = f"call_{index:08d}"
    arguments = {"city": rng.choice(("Paris", "Oslo", "Lima", "Pune")), "days": rng.randint(1, 7)}
    result = f"[{index}] {_sentence(rng, rng.randint(80, 200))}"
    message_id = f"msg_{index:08d}"
    return Turn(
        messages=(
            Message(
                role="assistant",
                contents=[Content.from_function_call(call_id=call_id, name="get_forecast", arguments=arguments)],
                message_id=message_id,
            ),
            Message(role="tool", contents=[Content.from_function_result(call_id=call_id, result=result)]),
        ),
        items=(
            {
                "type": "function_call",
                "id": message_id,
                "call_id": call_id,
                "name": "get_forecast",
                "arguments": json.dumps(arguments),
            },
            {"type": "function_call_output", "call_id": call_id, "output": result},
        ),
    )


def make_turns(start: int, count: int, *, seed: int = 7) -> list[Turn]:
    """Return turns ``start`` .. ``start + count - 1``; the same indices always give the same turns."""
    turns: list[Turn] = []
    for index in range(start, start + count):
        rng = random.Random(seed * 1_000_003 + index)
        turns.append(_tool_turn(index, rng) if index % 4 == 3 else _chat_turn(index, rng))
    return turns
