"""Store operations as OpenTelemetry spans, printed by the console exporter.

    pip install "agent-stores[sqlite]" opentelemetry-sdk
    python telemetry_console.py

Set the SDK's providers once, before the first store operation; every store then reports its
operations with no further wiring. Each printed span is one operation (``save_messages
history``, ``get sessions`` ...) with the database attributes, and the duration histogram is
printed at exit.
"""

import asyncio

from agent_framework import AgentSession, Message
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, PeriodicExportingMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

from agent_stores.core import open_stores


def configure_telemetry() -> None:
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter()))
    trace.set_tracer_provider(tracer_provider)
    metrics.set_meter_provider(MeterProvider(metric_readers=[PeriodicExportingMetricReader(ConsoleMetricExporter())]))


async def main(url: str = "sqlite:///telemetry.db") -> None:
    async with open_stores(url) as stores:
        history, sessions = stores.history_provider(), stores.session_store()
        await history.save_messages("chat-1", [Message(role="user", contents=["Hello!"])])
        print(len(await history.get_messages("chat-1")), "message stored")
        await sessions.set("chat-1", AgentSession(session_id="chat-1"))
        await sessions.get("chat-1")


if __name__ == "__main__":
    configure_telemetry()
    asyncio.run(main())
