"""A scripted chat client for the compaction tests: answers every prompt, summarises on request, counts calls."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agent_framework import BaseChatClient, ChatMiddlewareLayer, ChatResponse, FunctionInvocationLayer, Message

__all__ = ["CountingModel"]


class CountingModel(  # pyright: ignore[reportIncompatibleMethodOverride]  # the framework's layers' overloads
    ChatMiddlewareLayer[Any], FunctionInvocationLayer[Any], BaseChatClient[Any]
):
    """Answers "answer to <prompt>"; a summarisation request (the strategy's system prompt) gets "SUMMARY#n".

    ``sent`` holds, per agent model call, the texts the model was sent; ``summaries`` counts summaries made.
    """

    OTEL_PROVIDER_NAME = "scripted"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.sent: list[list[str]] = []
        self.summaries = 0

    async def _inner_get_response(  # type: ignore[override]  # pyright: ignore[reportIncompatibleMethodOverride]
        self, *, messages: Sequence[Message], stream: bool, options: Mapping[str, Any], **kwargs: Any
    ) -> ChatResponse:
        if len(messages) == 2 and messages[0].role == "system" and "summar" in messages[0].text.lower():
            self.summaries += 1
            return ChatResponse(messages=[Message(role="assistant", contents=[f"SUMMARY#{self.summaries}"])])
        self.sent.append([m.text for m in messages])
        return ChatResponse(messages=[Message(role="assistant", contents=[f"answer to {messages[-1].text}"])])
