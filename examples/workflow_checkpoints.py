"""A workflow pauses for a person's approval in one process and resumes from the store in another.

Run it twice with the same store URL (SQLite: no server needed)::

    uv run examples/workflow_checkpoints.py sqlite:///workflow.db start
    uv run examples/workflow_checkpoints.py sqlite:///workflow.db resume

An optional third argument names a namespace, which keeps tenants (or test runs) on one
store apart.
The first run drafts a post, asks for approval and stops with the request pending; its
checkpoints are in the store. The second, a new process, finds the newest checkpoint with
``get_latest``, answers the pending request and finishes. Any store URL works the same way.
"""

import asyncio
import sys
from dataclasses import dataclass
from typing import Never

from agent_framework import Executor, Workflow, WorkflowBuilder, WorkflowContext, handler, response_handler

from agent_stores.core import open_stores


@dataclass
class Approval:
    """What the workflow asks a person: approve this draft?"""

    draft: str


class Writer(Executor):
    """Drafts a post, then waits for a person's answer before publishing it."""

    @handler
    async def write(self, topic: str, ctx: WorkflowContext) -> None:
        """Draft a post on ``topic`` and ask for approval (the workflow pauses here)."""
        await ctx.request_info(Approval(draft=f"Five facts about {topic}."), str)

    @response_handler
    async def publish(self, request: Approval, answer: str, ctx: WorkflowContext[Never, str]) -> None:
        """Publish the draft with the answer it got."""
        await ctx.yield_output(f"{request.draft} ({answer})")


def build() -> Workflow:
    """The workflow: one executor, named so its checkpoints can be found again."""
    return WorkflowBuilder(start_executor=Writer(id="writer"), name="publish-post").build()


async def main(url: str, step: str, namespace: str = "") -> None:
    async with open_stores(url) as stores:
        # The approval request is a dataclass of ours: allow the restore to rebuild it.
        checkpoints = stores.checkpoint_storage(namespace=namespace, allowed_checkpoint_types=[f"{__name__}:Approval"])
        workflow = build()
        if step == "start":
            result = await workflow.run("otters", checkpoint_storage=checkpoints)
            for request in result.get_request_info_events():
                print("waiting for approval of:", request.data.draft)
        else:
            latest = await checkpoints.get_latest(workflow_name=workflow.name)
            assert latest is not None, "no checkpoint: run the start step first"
            pending = latest.pending_request_info_events
            answers = {request_id: "approved" for request_id in pending}
            result = await workflow.run(
                checkpoint_id=latest.checkpoint_id, checkpoint_storage=checkpoints, responses=answers
            )
            print("published:", *result.get_outputs())


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:4]))
