"""Our spans and the operation-duration histogram, read with the SDK's in-memory exporters on a real agent run.

A harness agent (the framework's real OpenAI client against the scripted server) runs one turn
on every backend; every store operation of the turn is a client span following the database
semantic conventions, nested under the framework's ``invoke_agent`` span, and each is
recorded in ``db.client.operation.duration``. The SDK providers are set for this process once
(OpenTelemetry allows one global provider); their exporters are emptied per test.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_framework import AgentSession
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agent_stores.core import ObjectSessionStore, StoreConflictError
from agent_stores.core.memory import MemoryObjectDriver
from agent_stores.core.telemetry import CONVERSATION_ID, DURATION_METRIC, INSTRUMENTATION_NAME, set_conversation_ids
from agents_support import FIRST, ScriptedOpenAI, StoreTarget, agent_turn

_EXPORTER = InMemorySpanExporter()
_READER = InMemoryMetricReader()


@pytest.fixture(scope="module")
def providers() -> None:
    """The SDK's tracer and meter providers for this process, with in-memory exporters."""
    tracer_provider = trace.get_tracer_provider()
    if not isinstance(tracer_provider, TracerProvider):
        tracer_provider = TracerProvider()
        trace.set_tracer_provider(tracer_provider)
    tracer_provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
    if not isinstance(metrics.get_meter_provider(), MeterProvider):
        metrics.set_meter_provider(MeterProvider(metric_readers=[_READER]))


@pytest.fixture
def spans(providers: None) -> Iterator[InMemorySpanExporter]:
    _EXPORTER.clear()
    _READER.collect()  # drops what earlier tests recorded (cumulative points stay, filtered below)
    yield _EXPORTER
    set_conversation_ids(None)
    _EXPORTER.clear()


def _ours(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
    return [
        s
        for s in exporter.get_finished_spans()
        if s.instrumentation_scope and s.instrumentation_scope.name == INSTRUMENTATION_NAME
    ]


def _ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[str]:
    names: list[str] = []
    parent = span.parent
    while parent is not None and parent.span_id in by_id:
        names.append(by_id[parent.span_id].name)
        parent = by_id[parent.span_id].parent
    return names


@pytest.mark.asyncio
async def test_an_agent_turn_traces_every_store_operation(
    store_target: StoreTarget, spans: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_MODEL", "scripted-model")
    set_conversation_ids(True)
    with ScriptedOpenAI("chat-only") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        await agent_turn(store_target, "s-otel", FIRST)
    everything = spans.get_finished_spans()
    by_id = {s.context.span_id: s for s in everything if s.context is not None}
    ours = _ours(spans)
    operations = {(s.attributes or {}).get("db.collection.name"): set() for s in ours}
    for span in ours:
        attributes: dict[str, Any] = dict(span.attributes or {})
        assert span.kind is trace.SpanKind.CLIENT
        assert attributes["db.system.name"] == store_target.backend, span.name
        assert span.name == f"{attributes['db.operation.name']} {attributes['db.collection.name']}"
        operations[attributes["db.collection.name"]].add(attributes["db.operation.name"])
    servers = {((s.attributes or {}).get("server.address"), (s.attributes or {}).get("server.port")) for s in ours}
    namespaces = {(s.attributes or {}).get("db.namespace") for s in ours}
    if store_target.backend in ("redis", "s3", "postgresql"):  # a server on loopback, and its database or bucket
        port = re.search(r"127\.0\.0\.1:(\d+)", store_target.url)
        assert port is not None and ("127.0.0.1", int(port.group(1))) in servers, servers
        assert None not in namespaces
    elif store_target.backend == "mongodb":
        assert namespaces == {store_target.url.split("/")[3].split("?")[0]}
    else:  # embedded: no server
        assert servers == {(None, None)}
    assert {"get_messages", "save_messages"} <= operations["history"]
    assert {"get", "set"} <= operations["sessions"]
    assert "write" in operations["files"]  # the memory file the scripted model writes
    history = [s for s in ours if (s.attributes or {}).get("db.collection.name") == "history"]
    for span in history:
        assert any(name.startswith("invoke_agent") for name in _ancestors(span, by_id)), span.name
        assert (span.attributes or {})[CONVERSATION_ID] == "s-otel"
    data = _READER.get_metrics_data()
    assert data is not None
    points = [
        point
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        if scope.scope.name == INSTRUMENTATION_NAME
        for metric in scope.metrics
        if metric.name == DURATION_METRIC
        for point in metric.data.data_points  # pyright: ignore[reportAttributeAccessIssue]
    ]
    recorded = {(p.attributes["db.system.name"], p.attributes["db.operation.name"]) for p in points}
    assert (store_target.backend, "save_messages") in recorded


@pytest.mark.asyncio
async def test_conversation_ids_stay_out_unless_enabled(spans: InMemorySpanExporter) -> None:
    store = ObjectSessionStore(MemoryObjectDriver())
    await store.set("alice@example.com", AgentSession(session_id="x"))
    set_conversation_ids(False)
    await store.get("alice@example.com")
    set_conversation_ids(True)
    await store.delete("alice@example.com")
    carried = [(s.name, (s.attributes or {}).get(CONVERSATION_ID)) for s in _ours(spans)]
    assert carried == [("set sessions", None), ("get sessions", None), ("delete sessions", "alice@example.com")]


@pytest.mark.asyncio
async def test_conflicts_are_events_and_failures_carry_error_type(spans: InMemorySpanExporter) -> None:
    driver = MemoryObjectDriver()
    first, second = ObjectSessionStore(driver), ObjectSessionStore(driver)
    await first.set("s", AgentSession(session_id="s"))
    calls = 0

    async def change(current: AgentSession | None) -> AgentSession:
        nonlocal calls
        calls += 1
        if calls == 1:  # another replica writes between this update's read and write
            await second.set("s", AgentSession(session_id="other"))
        await asyncio.sleep(0)
        assert current is not None
        return current

    await first.update("s", change)
    read = await first.get_versioned("s")
    assert read is not None
    await first.set("s", read.session)
    with pytest.raises(StoreConflictError):
        await second.set("s", read.session, if_version=read.version)
    ours = _ours(spans)
    update = next(s for s in ours if s.name == "update sessions")
    assert [e.name for e in update.events] == ["agent_stores.conflict"]
    assert (update.events[0].attributes or {})["agent_stores.attempt"] == 1
    children = [s.name for s in ours if s.parent is not None and s.parent.span_id == update.context.span_id]
    # the read, the other replica's write (made inside the change), the refused write, then the retry
    assert children == [
        "get_versioned sessions",
        "set sessions",
        "set sessions",
        "get_versioned sessions",
        "set sessions",
    ]
    refused = [s for s in ours if s.name == "set sessions" and (s.attributes or {}).get("error.type")]
    assert [(s.attributes or {})["error.type"] for s in refused] == ["StoreConflictError"] * 2
    assert all("error.type" not in (s.attributes or {}) for s in ours if s.name == "update sessions")


def test_the_console_example_prints_spans_and_durations(tmp_path: Path) -> None:
    """examples/telemetry_console.py, in a process of its own (its own providers), as docs/telemetry.md shows it."""
    example = Path(__file__).resolve().parents[2] / "examples" / "telemetry_console.py"
    done = subprocess.run([sys.executable, str(example)], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    for operation in ("save_messages history", "get_messages history", "set sessions", "get sessions"):
        assert f'"name": "{operation}"' in done.stdout, operation
    assert '"db.system.name": "sqlite"' in done.stdout
    assert '"name": "db.client.operation.duration"' in done.stdout
