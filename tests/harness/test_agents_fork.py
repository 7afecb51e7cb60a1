"""Forking a session on every backend: an agent continues both branches independently."""

from __future__ import annotations

from typing import Any

import pytest
from agent_framework import AgentSession, TodoItem, create_harness_agent

from agent_stores.core import fork_session
from agents_support import StoreTarget
from compaction_support import CountingModel

pytestmark = pytest.mark.asyncio

BARE = {
    "disable_web_search": True,
    "disable_tool_auto_approval": True,
    "disable_todo": True,
    "disable_mode": True,
    "disable_file_memory": True,
}


async def _turn(stores: Any, model: CountingModel, session_id: str, prompt: str) -> None:
    agent = create_harness_agent(model, **stores.harness_kwargs(), **BARE)
    sessions = stores.session_store()
    session = await sessions.get(session_id) or AgentSession(session_id=session_id)
    await agent.run(prompt, session=session)
    await sessions.set(session_id, session)


async def test_an_agent_continues_both_branches_of_a_fork_independently(store_target: StoreTarget) -> None:
    model = CountingModel()
    async with store_target.open() as stores:
        for turn in range(3):
            await _turn(stores, model, "main", f"main {turn}")
        todos = stores.todo_store()
        await todos.save_state(AgentSession(session_id="main"), [TodoItem(1, "write tests")], next_id=2, source_id="t")

        files = stores.file_store()  # the harness's file memory keeps a session's files in its own folder
        await files.write("main/notes.md", "main's notes")
        await files.write("~access-/main/draft.md", "main's draft")
        await files.write("shared/readme.md", "everyone's")

        report = await fork_session(stores, "main", "branch", upto=4)
        assert (report.messages, report.snapshot, report.todos, report.files) == (4, True, 1, 2)
        assert await files.read("branch/notes.md") == "main's notes"
        assert await files.read("~access-/branch/draft.md") == "main's draft"
        await files.write("branch/notes.md", "the branch's notes")
        assert await files.read("main/notes.md") == "main's notes", "changing the branch's files changed main's"

        await _turn(stores, model, "branch", "branch 2")
        assert model.sent[-1] == ["main 0", "answer to main 0", "main 1", "answer to main 1", "branch 2"], (
            "the branch did not continue from the first four messages of main"
        )
        await _turn(stores, model, "main", "main 3")
        assert model.sent[-1][-3:] == ["main 2", "answer to main 2", "main 3"]
        assert not any("branch" in text for text in model.sent[-1]), "main saw the branch's turn"

        history = stores.history_provider()
        main = [m.text for m in await history.export_messages("main")]
        branch = [m.text for m in await history.export_messages("branch")]
        assert main == [t for i in range(4) for t in (f"main {i}", f"answer to main {i}")]
        assert branch == [*main[:4], "branch 2", "answer to branch 2"]

        snapshot = await stores.session_store().get("branch")
        assert snapshot is not None and snapshot.session_id == "branch"
        branch_session = AgentSession(session_id="branch")
        assert (await todos.load_state(branch_session, source_id="t"))[0] == [TodoItem(1, "write tests")]
        await todos.save_state(branch_session, [], next_id=5, source_id="t")
        assert (await todos.load_state(AgentSession(session_id="main"), source_id="t")) == (
            [TodoItem(1, "write tests")],
            2,
        ), "changing the branch's todos changed main's"


@pytest.mark.parametrize("store_target", ["sqlite"], indirect=True)
async def test_a_fork_refuses_a_destination_that_holds_anything_and_copies_nothing(store_target: StoreTarget) -> None:
    model = CountingModel()
    async with store_target.open() as stores:
        await _turn(stores, model, "a", "hello a")
        await _turn(stores, model, "b", "hello b")
        with pytest.raises(FileExistsError, match="'b'"):
            await fork_session(stores, "a", "b")
        assert [m.text for m in await stores.history_provider().export_messages("b")] == [
            "hello b",
            "answer to hello b",
        ]
        with pytest.raises(ValueError, match="holds no history"):
            await fork_session(stores, "nobody", "c")
        with pytest.raises(ValueError, match="past the 2 messages"):
            await fork_session(stores, "a", "c", upto=3)
        with pytest.raises(ValueError, match="itself"):
            await fork_session(stores, "a", "a")
        assert await stores.history_provider().export_messages("c") == []


@pytest.mark.parametrize("store_target", ["sqlite", "redis"], indirect=True)
async def test_a_fork_keeps_the_compactions_stored_before_its_cut(store_target: StoreTarget) -> None:
    from agent_framework import SlidingWindowStrategy

    model = CountingModel()
    async with store_target.open() as stores:
        for turn in range(3):
            await _turn(stores, model, "main", f"main {turn}")
        history: Any = stores.history_provider()
        assert await history.compact("main", SlidingWindowStrategy(keep_last_groups=2))
        await _turn(stores, model, "main", "main 3")
        whole = await fork_session(stores, "main", "all")
        cut = await fork_session(stores, "main", "early", upto=6)
        assert (whole.messages, whole.compactions, cut.messages, cut.compactions) == (8, 1, 6, 0)
        skipping = stores.history_provider(skip_excluded=True)
        assert [m.text for m in await skipping.get_messages("all")] == [
            m.text for m in await skipping.get_messages("main")
        ]
        assert len(await skipping.get_messages("early")) == 6, "a compaction after the cut was copied"
