"""What the operations tests import: :func:`seed`, a store filled with known contents."""

from __future__ import annotations

from agent_framework import AgentSession, Message, WorkflowCheckpoint
from agent_framework._harness._todo import TodoItem

from agent_stores.core import Stores

__all__ = ["CHECKPOINT_TIME", "seed"]

#: The timestamp of the one checkpoint :func:`seed` saves per scope.
CHECKPOINT_TIME = "2026-01-02T03:04:05+00:00"


async def seed(stores: Stores, tenant: str | None) -> None:
    """Write known contents into the unscoped stores (``tenant=None``) or one tenant's.

    History: namespace ``""`` holds ``s1`` (3 messages) and ``s2`` (2), namespace ``ns2`` holds
    ``s3`` (1). Two files, one session snapshot, one todo list (namespace ``""``), one
    checkpoint (namespace ``ns2``).
    """
    view = stores if tenant is None else stores.tenant(tenant)
    history = view.history_provider()
    await history.save_messages("s1", [Message("user", [f"m{i}"]) for i in range(3)])
    await history.save_messages("s2", [Message("user", [f"m{i}"]) for i in range(2)])
    await view.history_provider(namespace="ns2").save_messages("s3", [Message("user", ["x"])])
    files = view.file_store()
    await files.write("notes/a.md", "alpha")
    await files.write("b.txt", "beta")
    await view.session_store().set("s1", AgentSession(session_id="s1"))
    todo = [TodoItem(id=1, title="t")]
    await view.todo_store().save_state(AgentSession(session_id="s1"), todo, next_id=2, source_id="todo")
    await view.checkpoint_storage(namespace="ns2").save(
        WorkflowCheckpoint(workflow_name="flow", graph_signature_hash="g", timestamp=CHECKPOINT_TIME)
    )
