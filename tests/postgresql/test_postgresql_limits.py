"""Limits on PostgreSQL: a 10 MB message, file and session state; a 100,000-message session loads by window."""

from __future__ import annotations

import psycopg
import pytest
from agent_framework import AgentSession, Message

from agent_stores.core import open_stores

pytestmark = pytest.mark.asyncio

TEN_MB = 10 * 1000 * 1000
MANY = 100_000


def _text(size: int, seed: str) -> str:
    """``size`` characters of text, not one repeated character, ending in non-ASCII."""
    block = f"{seed} the quick brown fox jumps over the lazy dog 0123456789\n"
    return (block * (size // len(block) + 1))[: size - 2] + "é."


async def test_ten_megabytes_round_trip(postgresql_url: str) -> None:
    message_text, file_text, state_text = _text(TEN_MB, "message"), _text(TEN_MB, "file"), _text(TEN_MB, "state")
    async with open_stores(postgresql_url) as stores:
        history, files, sessions = stores.history_provider(), stores.file_store(), stores.session_store()
        await history.save_messages("big", [Message(role="user", contents=[message_text], message_id="m1")])
        await history.save_messages("big", [Message(role="assistant", contents=["small"], message_id="m2")])
        loaded = await history.get_messages("big")
        assert [m.message_id for m in loaded] == ["m1", "m2"]
        assert loaded[0].text == message_text

        await files.write("big/notes.md", file_text)
        assert await files.read("big/notes.md") == file_text

        session = AgentSession(session_id="big")
        session.state["notes"] = state_text
        await sessions.set("big", session)
        restored = await sessions.get("big")
        assert restored is not None and restored.state["notes"] == state_text


async def test_a_session_of_100k_messages_loads_its_window_and_keeps_appending(postgresql_url: str) -> None:
    turns = [Message(role="user", contents=[f"message {i}"], message_id=f"m{i}") for i in range(MANY)]
    async with open_stores(postgresql_url) as stores:
        writer = stores.history_provider()
        for start in range(0, MANY, 10_000):  # ten saves of 10,000 messages, each one statement
            await writer.save_messages("long", turns[start : start + 10_000])
        window = stores.history_provider(max_messages=50)
        assert [m.message_id for m in await window.get_messages("long")] == [f"m{i}" for i in range(MANY - 50, MANY)]
        await window.save_messages("long", [Message(role="assistant", contents=["one more"], message_id="last")])
        assert [m.message_id for m in await window.get_messages("long")][-2:] == [f"m{MANY - 1}", "last"]
        assert await writer.count_messages("long") == MANY + 1  # type: ignore[attr-defined]
    with psycopg.connect(postgresql_url) as db:
        row = db.execute("SELECT min(seq), max(seq), count(*) FROM agent_stores_messages").fetchone()
    assert row == (1, MANY + 1, MANY + 1)  # numbered without a gap or a duplicate
