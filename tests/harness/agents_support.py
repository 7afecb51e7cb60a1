"""What the agent tests import: a scripted OpenAI-compatible HTTP server that logs every request.

:class:`ScriptedOpenAI` listens on 127.0.0.1 (stdlib ``http.server`` in a thread) and answers
``POST /v1/chat/completions`` and ``POST /v1/responses`` the way OpenAI does, in one of three
shapes a real deployment has:

- ``responses-stored``: both APIs; the Responses API stores responses unless ``store`` is false
  and resolves ``previous_response_id`` (like api.openai.com);
- ``responses-stateless``: both APIs; any ``previous_response_id`` is a 400, nothing is stored
  (many OpenAI-compatible servers);
- ``chat-only``: ``/v1/responses`` is a 404 (vLLM, Ollama, llama.cpp, LM Studio style).

It validates a conversation as OpenAI does: a function call must be answered by its result
before the conversation goes on, else a 400 with OpenAI's message. The scripted model: a
prompt with "remember" writes ``preferences.md`` with the memory tool, "favourite colour?"
reads it back, "crash" calls the ``crash_now`` tool, a function result is acknowledged in text.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = [
    "FIRST",
    "SECOND",
    "SHAPES",
    "Logged",
    "ScriptedOpenAI",
    "StoreTarget",
    "agent_turn",
    "assert_turn_two_from_store",
]

SHAPES = ("responses-stored", "responses-stateless", "chat-only")

#: Every backend the agent tests run on (``store_target`` is parametrized over them).
BACKENDS = ["sqlite", "redis", "mongodb", "s3", "fsspec", "postgresql"]

MEMORY_FILE = "preferences.md"
MEMORY_TEXT = "Favourite colour: teal\n"
MEMORY_INDEX = f"- **{MEMORY_FILE}**"
FIRST = "Please remember that my favourite colour is teal."
SECOND = "What is my favourite colour?"


@dataclass
class Logged:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    status: int = 0


@dataclass
class _Event:
    kind: str  # "system", "user", "assistant", "call", "result"
    text: str = ""
    call_id: str = ""
    name: str = ""


class _ApiError(Exception):
    def __init__(self, status: int, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass
class ScriptedOpenAI:
    """A scripted OpenAI-compatible server; use as a context manager, read :attr:`requests`."""

    shape: str = "responses-stored"
    requests: list[Logged] = field(default_factory=list[Logged])
    #: When set, a request without ``Authorization: Bearer <api_key>`` is a 401, as OpenAI answers a wrong key.
    api_key: str | None = None

    def __post_init__(self) -> None:
        if self.shape not in SHAPES:
            raise ValueError(f"unknown shape {self.shape!r}")
        self._stored: dict[str, list[_Event]] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    @property
    def base_url(self) -> str:
        """The ``OPENAI_BASE_URL`` of this server."""
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def __enter__(self) -> ScriptedOpenAI:
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                logged = Logged(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
                with owner._lock:
                    owner.requests.append(logged)
                try:
                    if owner.api_key is not None and logged.headers.get("authorization") != f"Bearer {owner.api_key}":
                        raise _ApiError(401, "Incorrect API key provided.", "invalid_api_key")
                    status, answer = 200, owner._answer(self.path, body)
                except _ApiError as err:
                    status = err.status
                    answer = {"error": {"message": str(err), "type": "invalid_request_error", "code": err.code}}
                logged.status = status
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    # What a test reads.

    def model_requests(self) -> list[Logged]:
        """Requests to a model endpoint, in arrival order."""
        return [r for r in self.requests if r.path.endswith(("/chat/completions", "/responses"))]

    @staticmethod
    def texts(logged: Logged) -> list[str]:
        """Every text the request carries in its messages or input items (instructions excluded)."""
        return [e.text for e in _events(logged.path, logged.body) if e.text and e.kind != "system"]

    # The scripted API.

    def _answer(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        if path.rstrip("/").endswith("/chat/completions"):
            events = _events(path, body)
            _validate(events, chat=True)
            return _chat_completion(body, _script(events), next(self._ids))
        if path.rstrip("/").endswith("/responses"):
            if self.shape == "chat-only":
                raise _ApiError(404, "Not Found")
            earlier: list[_Event] = []
            previous = body.get("previous_response_id")
            if previous:
                with self._lock:
                    stored = self._stored.get(previous)
                if self.shape == "responses-stateless" or stored is None:
                    raise _ApiError(
                        400, f"Previous response with id '{previous}' not found.", "previous_response_not_found"
                    )
                earlier = stored
            events = [*earlier, *_events(path, body)]
            _validate(events, chat=False)
            reply = _script(events)
            number = next(self._ids)
            answer = _response(body, reply, number)
            if self.shape == "responses-stored" and body.get("store") is not False:
                with self._lock:
                    self._stored[answer["id"]] = [*events, *reply]
            return answer
        raise _ApiError(404, "Not Found")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))  # pyright: ignore
    return ""


def _events(path: str, body: dict[str, Any]) -> list[_Event]:
    events: list[_Event] = []
    if path.rstrip("/").endswith("/chat/completions"):
        for message in body.get("messages", []):
            role = message.get("role")
            if role in ("system", "developer"):
                events.append(_Event("system", _text_of(message.get("content"))))
            elif role == "tool":
                events.append(_Event("result", _text_of(message.get("content")), message.get("tool_call_id", "")))
            elif role == "assistant":
                if text := _text_of(message.get("content")):
                    events.append(_Event("assistant", text))
                for call in message.get("tool_calls") or []:
                    events.append(_Event("call", "", call.get("id", ""), call["function"]["name"]))
            else:
                events.append(_Event("user", _text_of(message.get("content"))))
        return events
    items = body.get("input", [])
    if isinstance(items, str):
        items = [{"type": "message", "role": "user", "content": items}]
    for item in items:
        kind = item.get("type", "message")
        if kind == "function_call":
            events.append(_Event("call", "", item.get("call_id", ""), item.get("name", "")))
        elif kind == "function_call_output":
            events.append(_Event("result", _text_of(item.get("output")), item.get("call_id", "")))
        elif kind == "message":
            role = item.get("role")
            text = _text_of(item.get("content"))
            events.append(_Event({"system": "system", "developer": "system"}.get(role, role or "user"), text))
    return events


def _validate(events: list[_Event], *, chat: bool) -> None:
    """Reject what OpenAI rejects: a call not answered before the conversation goes on, a result without a call."""
    pending: dict[str, str] = {}
    for event in events:
        if event.kind == "call":
            pending[event.call_id] = event.name
        elif event.kind == "result":
            if event.call_id not in pending:
                raise _ApiError(
                    400,
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    "with 'tool_calls'."
                    if chat
                    else f"No tool call found for function call output with call_id {event.call_id}.",
                )
            del pending[event.call_id]
        elif pending and event.kind in ("user", "assistant"):
            break
    if pending:
        call_id = next(iter(pending))
        raise _ApiError(
            400,
            "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            f"'tool_call_id'. The following tool_call_ids did not have response messages: {call_id}"
            if chat
            else f"No tool output found for function call {call_id}.",
        )


def _script(events: list[_Event]) -> list[_Event]:
    """The scripted model's reply to a conversation."""
    last = events[-1]
    if last.kind == "result":
        return [_Event("assistant", f"Done: {last.text}")]
    prompt = next((e.text for e in reversed(events) if e.kind == "user"), "").lower()
    call_id = f"call_{time.monotonic_ns()}"
    if "crash" in prompt:
        return [_Event("call", json.dumps({}), call_id, "crash_now")]
    if "remember" in prompt:
        arguments = {"file_name": MEMORY_FILE, "content": MEMORY_TEXT}
        return [_Event("call", json.dumps(arguments), call_id, "file_memory_write")]
    if "favourite colour?" in prompt:
        return [_Event("call", json.dumps({"file_name": MEMORY_FILE}), call_id, "file_memory_read")]
    return [_Event("assistant", "Hello.")]


_USAGE_CHAT = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}


def _chat_completion(body: dict[str, Any], reply: list[_Event], number: int) -> dict[str, Any]:
    calls = [e for e in reply if e.kind == "call"]
    message: dict[str, Any] = {"role": "assistant", "content": "".join(e.text for e in reply if e.kind == "assistant")}
    if calls:
        message["content"] = None
        message["tool_calls"] = [
            {"id": c.call_id, "type": "function", "function": {"name": c.name, "arguments": c.text}} for c in calls
        ]
    return {
        "id": f"chatcmpl-{number}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
        "usage": _USAGE_CHAT,
    }


def _response(body: dict[str, Any], reply: list[_Event], number: int) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    for event in reply:
        if event.kind == "call":
            output.append(
                {
                    "type": "function_call",
                    "id": f"fc_{number}",
                    "call_id": event.call_id,
                    "name": event.name,
                    "arguments": event.text,
                    "status": "completed",
                }
            )
        else:
            output.append(
                {
                    "type": "message",
                    "id": f"msg_{number}",
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": event.text, "annotations": []}],
                }
            )
    return {
        "id": f"resp_{number}",
        "object": "response",
        "created_at": int(time.time()),
        "model": body.get("model", "scripted"),
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "store": body.get("store", True),
        "previous_response_id": body.get("previous_response_id"),
        "usage": {
            "input_tokens": 1,
            "output_tokens": 1,
            "total_tokens": 2,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }


@dataclass(frozen=True)
class StoreTarget:
    """A store URL on one backend, and what a process needs to open it."""

    backend: str
    url: str
    #: Environment a child process needs besides the URL (S3 credentials).
    env: dict[str, str] = field(default_factory=dict[str, str])
    #: ``open_stores`` options for this process (a boto3 session for S3).
    options: dict[str, Any] = field(default_factory=dict[str, Any])

    def open(self) -> Any:
        from agent_stores.core import open_stores

        return open_stores(self.url, **self.options)


async def agent_turn(target: StoreTarget, session_id: str, prompt: str, **harness_options: Any) -> str:
    """One turn of examples/harness_agent.py on stores opened with this process's options (S3's session)."""
    from agent_framework import AgentSession, create_harness_agent

    from agent_stores.core import openai_client

    async with target.open() as stores:
        sessions = stores.session_store()
        agent = create_harness_agent(
            openai_client(), **stores.harness_kwargs(**harness_options), disable_web_search=True
        )
        session = await sessions.get(session_id) or AgentSession(session_id=session_id)
        response = await agent.run(prompt, session=session)
        await sessions.set(session_id, session)
    return response.text


def assert_turn_two_from_store(server: ScriptedOpenAI, turn_one_requests: int) -> None:
    """Every request of turn 2 carries turn 1 (from our store), the memory index and the memory file."""
    requests = server.model_requests()
    assert all(r.status == 200 for r in requests), [(r.path, r.status) for r in requests]
    turn_two = requests[turn_one_requests:]
    assert turn_two, "turn 2 sent no request"
    for request in turn_two:
        assert "previous_response_id" not in request.body or request.body["previous_response_id"] is None
        texts = server.texts(request)
        assert FIRST in texts, "turn 2's request does not carry turn 1 from the store"
    # The memory index (read from the file store) opens the run; the tool loop's next call continues it.
    assert any(MEMORY_INDEX in t for t in server.texts(turn_two[0])), "turn 2 does not carry the memory index"
    # The tool result the model got in turn 2 is the memory file read back from the store.
    assert any(MEMORY_TEXT.strip() in t for t in server.texts(turn_two[-1]))
