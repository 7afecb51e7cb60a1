"""Hosting code: every request's tenant comes from authentication, its session key from the client.

    export OPENAI_API_KEY=sk-...   # or OPENAI_BASE_URL=http://127.0.0.1:11434/v1 (no key needed)
    python hosted_tenants.py [sqlite:///hosted.db]

Two users send the same session key ("chat-1"). Each request goes through ``stores.tenant(...)``,
so the key names a session, history and memory folder of that tenant only: Bob cannot reach
what Alice told the agent, whatever key he sends.

Several replicas may serve turns of one session at once. Each request stores its session with
``update``, which writes only over the snapshot it has seen (compare-and-set) and otherwise
applies this turn's state changes again on the newest one, so no replica overwrites another's
(a state key two concurrent turns both changed keeps the value of the turn stored last).
"""

import asyncio
import sys

from agent_framework import AgentSession, create_harness_agent

from agent_stores.core import Stores, open_stores, openai_client


async def handle(stores: Stores, tenant: str, session_key: str, prompt: str) -> str:
    """One request: ``tenant`` from your authentication, never from the request; ``session_key`` from the client."""
    scoped = stores.tenant(tenant)  # the client's key is used only inside this tenant's view
    sessions = scoped.session_store()
    agent = create_harness_agent(openai_client(), **scoped.harness_kwargs(), disable_web_search=True)
    session = await sessions.get(session_key) or AgentSession(session_id=session_key)
    before = session.to_dict()["state"]
    response = await agent.run(prompt, session=session)
    after = session.to_dict()["state"]
    changed = {name: session.state[name] for name in after if after[name] != before.get(name)}
    removed = before.keys() - after.keys()

    def this_turn(latest: AgentSession | None) -> AgentSession:
        """This turn's state changes, on the newest snapshot (another replica may have stored one meanwhile)."""
        newest = latest or AgentSession(session_id=session_key)
        newest.state.update(changed)
        for name in removed:
            newest.state.pop(name, None)
        return newest

    await sessions.update(session_key, this_turn)
    return response.text


async def main(url: str = "sqlite:///hosted.db") -> None:
    async with open_stores(url) as stores:
        print("alice:", await handle(stores, "alice", "chat-1", "Please remember that my favourite colour is teal."))
        print("bob:  ", await handle(stores, "bob", "chat-1", "What is my favourite colour?"))
        print("alice:", await handle(stores, "alice", "chat-1", "What is my favourite colour?"))
        for tenant in ("alice", "bob"):
            history = stores.tenant(tenant).history_provider()
            print(f"{tenant} holds {len(await history.get_messages('chat-1'))} messages")


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:]))
