"""A harness agent whose long conversation is summarised once, and the summary kept in the store.

    export OPENAI_API_KEY=sk-...                       # api.openai.com, or:
    export OPENAI_BASE_URL=http://127.0.0.1:11434/v1   # any OpenAI-compatible server (no key needed)
    python long_conversation.py "Let us plan a trip to Lisbon."
    python long_conversation.py "What should we see on day two?"   # ... and so on, one turn per run

Once the conversation holds more than 12 messages, the framework's ``SummarizationStrategy``
replaces the older ones with a summary in what the model is sent. The store keeps that
decision, so later turns reuse the summary instead of asking the model for it again, and
every message stays stored (``export_messages``, ``agent-stores history``).
"""

import asyncio
import sys

from agent_framework import AgentSession, SummarizationStrategy, create_harness_agent

from agent_stores.core import open_stores, openai_client


async def main(prompt: str, url: str = "sqlite:///long.db", session_id: str = "trip") -> str:
    client = openai_client()
    summarize = SummarizationStrategy(client=client, target_count=4, threshold=8)  # keep about 4 after a summary
    async with open_stores(url) as stores:
        sessions = stores.session_store()
        agent = create_harness_agent(client, **stores.harness_kwargs(compaction=summarize), disable_web_search=True)
        session = await sessions.get(session_id) or AgentSession(session_id=session_id)
        response = await agent.run(prompt, session=session)
        await sessions.set(session_id, session)
        stored = await stores.history_provider().export_messages(session_id)
        sent = await stores.history_provider(skip_excluded=True).get_messages(session_id)
        print(f"stored: {len(stored)} messages, the model's view: {len(sent)} messages")
        return response.text


if __name__ == "__main__":
    print(asyncio.run(main(*sys.argv[1:])))
