"""The chat-history conformance suite: prove a ``HistoryProvider`` stores what the framework expects.

Subclass :class:`HistoryProviderConformance`, declare a :class:`HistoryCapabilities`, and provide a
``history_factory`` fixture::

    import pytest
    from agent_stores.testing import HistoryCapabilities, HistoryProviderConformance

    class TestMyHistory(HistoryProviderConformance):
        capabilities = HistoryCapabilities(windowed_load=True, skip_excluded=True)
        divergences = {"test_some_clause": "why this store differs"}  # optional, strict xfail

        @pytest.fixture
        def history_factory(self, tmp_path):
            return lambda **options: MyHistoryProvider(tmp_path, **options)  # or an awaitable of one

Every call of the returned callable must open a provider over the **same** backing data: that
is how the suite checks restarts, two instances and concurrency. It always passes
``source_id=``; ``max_messages=``, ``skip_excluded=`` and ``ttl=`` only when the matching
capability is declared. The ``ttl`` clauses run on a fake clock: build the providers with
the clause's ``clock`` fixture (``history_factory(self, clock)``) and set ``fake_clock = True``.

The suite drives a provider exactly as ``Agent`` does: one ``AgentSession`` per session id, and
``get_messages(session_id, state=session.state.setdefault(provider.source_id, {}))`` /
``save_messages(session_id, messages, state=...)``. Providers that keep history in session
state (the framework's ``InMemoryHistoryProvider``) are testable too: a "restart" is a new
provider instance over the same session objects.

Stores declaring ``multi_process`` also provide a ``history_process_factory`` fixture returning
``("module:function", kwargs)``: a child process imports ``module``, calls
``function(**kwargs, source_id=...)`` (which may return an awaitable) and must get a provider
over the same backing data as ``history_factory``. ``kwargs`` must be JSON-serialisable; the
child runs with the parent's ``sys.path``.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import sys
import tempfile
import warnings
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import IO, Any, ClassVar, cast

import pytest
from agent_framework import AgentSession, Content, HistoryProvider, InMemoryHistoryProvider, Message
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_stores.core import CorruptRecordError, LogHistoryProvider, LogRecord
from agent_stores.core.drivers import LogVersion, conditional_delete, deletes_conditionally

from ._base import ConformanceBase, collect_pages, maybe_await, misbehaviour, relies_on, requires, unique_id
from .adversarial import adversarial_ids
from .clock import FakeClock

__all__ = [
    "CORRUPT_RECORDS",
    "HistoryCapabilities",
    "HistoryProviderConformance",
    "corrupt_log_history",
    "crash_log_history",
    "delay_conditional_delete",
    "sample_contents",
]


@dataclass(frozen=True)
class HistoryCapabilities:
    """What a history provider declares beyond the minimal contract (every default is "no").

    Attributes:
        windowed_load: The factory accepts ``max_messages=N``: loads return the newest N messages
            (never starting with an orphan tool result or approval response) and ``N <= 0`` is a
            ``ValueError``.
        skip_excluded: The factory accepts ``skip_excluded=True``: loads omit messages whose
            ``additional_properties["_excluded"]`` is truthy.
        concurrent_instances: Two provider instances in one process may save to one session at
            the same time (``asyncio.gather``) without losing, duplicating or splitting a save.
        multi_process: Two OS processes may save to one session at the same time with the same
            guarantees; the test class must also provide a ``history_process_factory`` fixture.
        admin: The provider has ``count_messages(session_id)``, ``delete_session(session_id)``
            and ``list_sessions(*, after=None, limit=100)`` as in ``LogHistoryProvider``; with
            ``ttl`` also ``purge_expired()``.
        ttl: The factory accepts ``ttl=`` seconds (sliding expiry): a session expires that long
            after its last save that stored messages and then loads as empty; a save after
            expiry starts a fresh history; ``ttl <= 0`` is a ``ValueError``. The expiry clauses
            run on the suite's fake clock (``fake_clock = True`` on the class, the factory's
            stores built with the ``clock`` fixture) and never wait.
        stored_compaction: The provider has ``compact(session_id, strategy, *, tokenizer=None)``
            as ``LogHistoryProvider``: it runs a framework compaction strategy on the session's
            view and stores what the strategy decided (annotations verbatim, added summaries)
            under the version it read, deciding again when a save lands meanwhile; loads
            return that view; every stored message stays (``export_messages``) until
            ``retain(session_id)`` drops the excluded ones, crash-safely. The suite's
            ``crash_history`` fixture stops a provider's writes (:func:`crash_log_history`, for a
            ``LogHistoryProvider``); a test class of another provider overrides it.
        corruptible: A stored record that no save writes (:data:`CORRUPT_RECORDS`) makes
            ``get_messages`` raise ``agent_stores.core.CorruptRecordError`` naming the session.
            The suite's ``corrupt_history`` fixture stores one (:func:`corrupt_log_history`,
            for a ``LogHistoryProvider``); a test class of another provider overrides it.

    """

    windowed_load: bool = False
    skip_excluded: bool = False
    concurrent_instances: bool = False
    multi_process: bool = False
    admin: bool = False
    ttl: bool = False
    corruptible: bool = False
    stored_compaction: bool = False


def sample_contents() -> list[Content]:
    """Return one valid instance of every ``Content`` type the framework defines (some of several shapes)."""
    png = b"\x89PNG\r\n\x1a\n\x00\xff"
    with warnings.catch_warnings():  # computer-use constructors are experimental; the samples are fixed
        warnings.simplefilter("ignore")
        call = Content.from_function_call(
            "call-1", "get_weather", arguments={"city": "Zürich", "big": 2**53 + 1}, id="call-1", status="completed"
        )
        return [
            Content.from_text(
                'héllo\nwörld\r\n\u2028 "quoted" \\ \t 🙂',
                annotations=[
                    {
                        "type": "citation",
                        "title": "a source",
                        "url": "https://example.com/source",
                        "annotated_regions": [{"type": "text_span", "start_index": 0, "end_index": 5}],
                    }
                ],
            ),
            Content.from_text_reasoning(id="rs-1", text="thinking…", protected_data="b3BhcXVl", status="completed"),
            Content.from_data(png, "image/png", name="pixel.png"),
            Content.from_uri("https://example.com/report.pdf", media_type="application/pdf", name="report.pdf"),
            Content.from_error(message="boom", error_code="E42", error_details="stack"),
            call,
            Content.from_function_call("call-2", "no_args"),
            Content.from_function_result("call-1", id="call-1", result="sunny"),
            Content.from_function_result(
                "call-2", result=[Content.from_text("part"), Content.from_data(png, "image/png")], exception="hidden"
            ),
            Content.from_usage({"input_token_count": 10, "output_token_count": 5, "total_token_count": 15}),
            Content.from_hosted_file("file-1", media_type="text/plain", name="notes.txt"),
            Content.from_hosted_vector_store("vs-1"),
            Content.from_code_interpreter_tool_call(
                call_id="ci-1", inputs=[Content.from_text("print(1)")], status="completed"
            ),
            Content.from_code_interpreter_tool_result(call_id="ci-1", outputs=[Content.from_text("1")]),
            Content.from_image_generation_tool_call(image_id="img-1"),
            Content.from_image_generation_tool_result(
                image_id="img-1", outputs=Content.from_uri("https://example.com/i.png", media_type="image/png")
            ),
            Content.from_mcp_server_tool_call("mcp-1", "search", server_name="docs", arguments='{"q": "x"}'),
            Content.from_mcp_server_tool_result("mcp-1", output=[{"type": "text", "text": "hit"}]),
            Content.from_search_tool_call("s-1", tool_name="web_search", arguments={"q": "x"}, status="completed"),
            Content.from_search_tool_result(
                "s-1",
                tool_name="web_search",
                result={"hits": 1},
                items=[Content.from_uri("https://example.com", media_type="text/html")],
            ),
            Content.from_shell_tool_call(
                call_id="sh-1", commands=["ls", "pwd"], timeout_ms=1000, max_output_length=100, status="completed"
            ),
            Content.from_shell_tool_result(
                call_id="sh-1",
                outputs=[Content.from_shell_command_output(stdout="a\n", stderr="", exit_code=0, timed_out=False)],
                max_output_length=100,
            ),
            Content.from_shell_command_output(stdout="partial", exit_code=None, timed_out=True),
            Content.from_computer_tool_call(
                id="cu-1",
                call_id="cu-call-1",
                actions=[{"type": "click", "x": 1, "y": 2}],
                status="completed",
                pending_safety_checks=[{"id": "sc-1", "code": "c", "message": "m"}],
            ),
            Content.from_computer_tool_result(
                call_id="cu-call-1",
                id="cu-1",
                screenshot=Content.from_data(png, "image/png"),
                acknowledged_safety_checks=[{"id": "sc-1"}],
            ),
            Content.from_function_approval_request("call-1", call),
            Content.from_function_approval_response(True, "call-1", call),
            Content.from_oauth_consent_request("https://login.example.com/consent?state=x&y=1"),
        ]


class SuiteCompaction:
    """A deterministic compaction strategy for the compaction clauses (the framework's protocol).

    It excludes every included message but the newest ``keep``, annotates each with the
    framework's exclusion keys and a nested, non-ASCII value of its own, and inserts a summary
    where the first excluded message stood. ``seen`` holds the texts of every list it was given;
    ``before_first`` runs once, before the first decision (the clauses force a race with it).
    """

    def __init__(self, keep: int = 2, before_first: Callable[[], Awaitable[None]] | None = None) -> None:
        self.keep = keep
        self.before_first = before_first
        self.seen: list[list[str]] = []

    async def __call__(self, messages: list[Message]) -> bool:
        self.seen.append([m.text for m in messages])
        if self.before_first is not None and len(self.seen) == 1:
            await self.before_first()
        included = [m for m in messages if not m.additional_properties.get("_excluded")]
        old = included[: -self.keep] if len(included) > self.keep else []
        if not old:
            return False
        for message in old:
            message.additional_properties["_excluded"] = True
            message.additional_properties["_exclude_reason"] = "suite"
            message.additional_properties["suite/ánnotation"] = {"n": len(messages), "v": [1, 2.5, None, "é\n"]}
        summary = Message(
            "assistant",
            [f"summary of {len(old)}: " + " | ".join(m.text for m in old)],
            message_id=f"suite-summary-{len(messages)}",
            additional_properties={"_summary_of_message_ids": [m.message_id for m in old]},
        )
        messages.insert(messages.index(old[0]), summary)
        return True


async def _compacted_reference(stored: Sequence[Message], strategy: Any) -> list[dict[str, Any]]:
    """What the framework makes of ``stored`` with ``strategy``: the view a compacting store must load."""
    from agent_framework import apply_compaction

    view = _copies(stored)
    await apply_compaction(view, strategy=strategy)
    return _dicts(view)


def _msg(role: str, text: str, message_id: str | None = None, **properties: Any) -> Message:
    return Message(role, [text], message_id=message_id, additional_properties=properties or None)


def _dicts(messages: Sequence[Message]) -> list[dict[str, Any]]:
    return [m.to_dict() for m in messages]


def _copies(messages: Sequence[Message]) -> list[Message]:
    """Fresh, equal messages: what a caller sends is never the object a store (or the reference) kept."""
    return [Message.from_dict(m.to_dict()) for m in messages]


def _ids(messages: Sequence[Message]) -> list[str | None]:
    return [m.message_id for m in messages]


class HistoryHarness:
    """Opens providers and keeps the clause's ``AgentSession`` objects, driving providers as ``Agent`` does."""

    def __init__(self, open_store: Callable[..., Awaitable[Any]]) -> None:
        self._open_store = open_store
        self._sessions: dict[str, AgentSession] = {}
        #: The source id of providers opened without one; unique per clause.
        self.source_id = unique_id("source")

    async def open(self, *, source_id: str | None = None, **options: Any) -> HistoryProvider:
        """Open a new provider instance over the store's backing data (closed at the end of the clause)."""
        return cast(HistoryProvider, await self._open_store(source_id=source_id or self.source_id, **options))

    def state(self, provider: HistoryProvider, session_id: str) -> dict[str, Any]:
        """Return the provider's slice of the session's state, as ``Agent`` passes it."""
        session = self._sessions.setdefault(session_id, AgentSession(session_id=session_id))
        return cast(dict[str, Any], session.state.setdefault(provider.source_id, {}))

    async def load(self, provider: HistoryProvider, session_id: str) -> list[Message]:
        """Load the session's history through ``provider``."""
        return await provider.get_messages(session_id, state=self.state(provider, session_id))

    async def save(self, provider: HistoryProvider, session_id: str, messages: Sequence[Message]) -> None:
        """Save fresh copies of ``messages`` through ``provider``."""
        await provider.save_messages(session_id, _copies(messages), state=self.state(provider, session_id))


# Long ids: lowercase-safe ones (often used verbatim) and ones that need encoding, past common limits.
_LONG_SUFFIXES = tuple(
    tail for n in (300, 1024, 10240) for tail in ("x" * n, "x" * (n - 1) + "y", "\u00e9" * (n // 2), "X" * n)
)


def _long_ids() -> list[str]:
    base = unique_id("sid")
    return [base + tail for tail in _LONG_SUFFIXES]


def _clip(value: str) -> str:
    return repr(value if len(value) <= 40 else f"{value[:37]}…({len(value)} chars)")


# The de-duplication pool: messages that collide by identity in every way filter_new_messages knows.
_POOL: tuple[Callable[[], Message], ...] = (
    lambda: _msg("user", "hi"),
    lambda: _msg("user", "again"),
    lambda: _msg("assistant", "ok"),
    lambda: _msg("assistant", "ok", "a-1"),
    lambda: _msg("assistant", "sure", "a-2"),
    lambda: _msg("user", "hi", "u-1"),
    lambda: _msg("system", "rules"),
    lambda: Message("tool", [Content.from_function_result("c-1", result="42")]),
)

# One save: (kind, n, pool indices). "fresh" sends pool messages; "prefix"/"suffix" first replay
# the first/last n % (len + 1) stored messages (as the reference stored them), then the pool ones.
_SAVE = st.tuples(
    st.sampled_from(["fresh", "prefix", "suffix"]),
    st.integers(min_value=0, max_value=12),
    st.lists(st.integers(min_value=0, max_value=len(_POOL) - 1), max_size=4),
)


def _resolve(kind: str, n: int, picks: list[int], stored: list[Message]) -> list[Message]:
    k = n % (len(stored) + 1)
    replayed = [] if kind == "fresh" or k == 0 else stored[:k] if kind == "prefix" else stored[-k:]
    return _copies(replayed) + [_POOL[i]() for i in picks]


#: The ttl of the expiry clauses, in seconds of the fake clock: long, so a server's own expiry
#: by its real clock (a MongoDB TTL index) never acts within a clause.
_TTL = 600.0

#: Rounds of the call-order clause: two overlapping saves each.
_ORDER_ROUNDS = 10

_PROCESS_TIMEOUT_S = 120.0
_PROCESS_MAX_LINES = 10_000  # a store that prints on stdout must not keep the wait going forever
_READY, _DONE = "agent-stores:ready", "agent-stores:done"
_CHILD_CODE = "from agent_stores.testing.history import run_writer_process; run_writer_process()"


def run_writer_process() -> None:
    """Run one writer process of the multi-process clause (JSON commands on stdin, one per line).

    The first line names the provider (``spec``, ``kwargs``, ``source_id``); each further line
    is ``{"session_id": ..., "batches": [[message dict, ...], ...]}``, saved batch by batch and
    acknowledged with a ``done`` line. End of input closes the provider.
    """
    setup = json.loads(sys.stdin.readline())
    module_name, _, attribute = str(setup["spec"]).partition(":")
    factory = getattr(importlib.import_module(module_name), attribute)
    with asyncio.Runner() as runner:
        provider = cast(
            HistoryProvider, runner.run(maybe_await(factory(**setup["kwargs"], source_id=setup["source_id"])))
        )
        try:
            print(_READY, flush=True)
            for line in sys.stdin:
                command = json.loads(line)
                for batch in command["batches"]:
                    messages = [Message.from_dict(m) for m in batch]
                    runner.run(provider.save_messages(command["session_id"], messages, state={}))
                print(_DONE, flush=True)
        finally:  # a store left open may keep a worker thread alive, and the process with it
            close = getattr(provider, "aclose", None)
            if close is not None:
                runner.run(maybe_await(close()))


class _WriterProcess:
    """A child process saving through the store's ``history_process_factory`` spec."""

    def __init__(self, process: asyncio.subprocess.Process, stderr: IO[bytes]) -> None:
        self._process = process
        self._stderr = stderr

    @classmethod
    async def start(cls, spec: str, kwargs: dict[str, Any], source_id: str) -> _WriterProcess:
        stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            _CHILD_CODE,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            env=env,
        )
        writer = cls(process, stderr)
        writer._send({"spec": spec, "kwargs": kwargs, "source_id": source_id})
        return writer

    def _send(self, payload: dict[str, Any]) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(payload).encode("utf-8") + b"\n")

    def save(self, session_id: str, batches: Sequence[Sequence[Message]]) -> None:
        """Tell the process to save ``batches`` in order (answered by :meth:`wait_for`)."""
        self._send({"session_id": session_id, "batches": [_dicts(b) for b in batches]})

    async def wait_for(self, token: str) -> None:
        """Wait for the process to print ``token``; fail with its stderr when it dies first or chatters on."""
        assert self._process.stdin is not None and self._process.stdout is not None
        await self._process.stdin.drain()
        for _ in range(_PROCESS_MAX_LINES):
            line = await asyncio.wait_for(self._process.stdout.readline(), _PROCESS_TIMEOUT_S)
            if not line:
                await self._process.wait()
                self._stderr.seek(0)
                detail = self._stderr.read().decode("utf-8", "replace")[-4000:]
                pytest.fail(f"writer process exited with {self._process.returncode}:\n{detail}", pytrace=False)
            if line.decode("utf-8", "replace").strip() == token:
                return
        pytest.fail(f"writer process printed {_PROCESS_MAX_LINES} lines without {token!r}", pytrace=False)

    async def stop(self) -> None:
        """Close the process's input and wait for it to exit."""
        if self._process.stdin is not None and not self._process.stdin.is_closing():
            self._process.stdin.close()
        try:
            await asyncio.wait_for(self._process.wait(), _PROCESS_TIMEOUT_S)
        except TimeoutError:
            self._process.kill()
            await self._process.wait()
        finally:
            self._stderr.close()


def _turns(label: str, count: int) -> list[list[Message]]:
    """``count`` turns of one writer: a user and an assistant message per save, every message with an id."""
    return [
        [
            _msg("user", f"{label} asks {i}", f"{label}-{i}-u"),
            _msg("assistant", f"{label} answers {i}", f"{label}-{i}-a"),
        ]
        for i in range(count)
    ]


def _check_interleaved(loaded: list[Message], writers: dict[str, list[list[Message]]]) -> None:
    """Assert ``loaded`` holds every writer's turns exactly once, each writer's in order, each save unsplit."""
    ids = _ids(loaded)
    expected = [m.message_id for turns in writers.values() for turn in turns for m in turn]
    missing = sorted(set(expected) - set(ids), key=str)
    doubled = sorted({i for i in ids if ids.count(i) > 1}, key=str)
    assert not missing and not doubled and len(ids) == len(expected), (
        f"lost {missing}, duplicated {doubled}, {len(ids)} stored for {len(expected)} saved"
    )
    for label, turns in writers.items():
        own = [i for i in ids if str(i).startswith(f"{label}-")]
        assert own == [m.message_id for turn in turns for m in turn], f"writer {label}'s messages were reordered"
        for turn in turns:
            first = ids.index(turn[0].message_id)
            assert ids[first : first + len(turn)] == _ids(turn), f"save {_ids(turn)} was split by another save"


_MESSAGE = b'{"type":"message","role":"user","contents":'
#: Records no store writes: malformed JSON, the wrong shapes, and crafted ones (nested past any
#: parser's depth, a content part that is a number, bytes that are not UTF-8). Label -> bytes.
CORRUPT_RECORDS: dict[str, bytes] = {
    "not JSON": b"{not json",
    "a list": b"[1, 2]",
    "a string": b'"text"',
    "wrong types": b'{"role": 5, "contents": 7}',
    "nested 3,000 deep": _MESSAGE
    + b'[{"type":"text","text":"x","additional_properties":'
    + b'{"a":' * 3000
    + b"1"
    + b"}" * 3000
    + b"}]}",
    "a list nested 3,000 deep": _MESSAGE
    + b'[{"type":"function_call","call_id":"c","name":"n","arguments":'
    + b"[" * 3000
    + b"]" * 3000
    + b"}]}",
    "a part that is a number": _MESSAGE + b"[5]}",
    "not UTF-8": _MESSAGE + b'[{"type":"text","text":"\xff\xfe"}]}',
}


# A retention's writes: stage, seal, delete the sealed log, append the retained one, drop the staging.
_SWAP_WRITE = 3


class SimulatedCrash(RuntimeError):
    """The process stopped here: what :func:`crash_log_history` raises instead of a write."""


class _CrashingLog:
    """A log driver that lets ``writes`` appends and deletes through, then raises :class:`SimulatedCrash`."""

    def __init__(self, driver: Any, writes: int) -> None:
        self._driver = driver
        self._left = writes

    def __getattr__(self, name: str) -> Any:
        return getattr(self._driver, name)

    def _write(self) -> None:
        if self._left <= 0:
            raise SimulatedCrash("the process stopped before this write")
        self._left -= 1

    async def append(self, *args: Any, **kwargs: Any) -> Any:
        self._write()
        return await self._driver.append(*args, **kwargs)

    async def delete(self, *args: Any, **kwargs: Any) -> Any:
        self._write()
        return await self._driver.delete(*args, **kwargs)

    @property
    def deletes_conditionally(self) -> bool:
        return deletes_conditionally(self._driver)

    async def delete_if_version(self, *args: Any, **kwargs: Any) -> Any:
        self._write()
        return await self._driver.delete_if_version(*args, **kwargs)


def crash_log_history(provider: LogHistoryProvider, writes: int) -> None:
    """Make ``provider`` stop (raise :class:`SimulatedCrash`) at its write number ``writes + 1`` (append or delete).

    The provider is then a crashed process: the clause drops it and opens a new one.
    """
    provider.driver = cast(Any, _CrashingLog(provider.driver, writes))


class _LateDelete:
    """A log driver whose first ``delete_if_version`` of ``key`` lets ``meanwhile`` run first."""

    def __init__(self, driver: Any, key: str, meanwhile: Callable[[], Awaitable[None]]) -> None:
        self._driver = driver
        self._key = key
        self.meanwhile: Callable[[], Awaitable[None]] | None = meanwhile

    def __getattr__(self, name: str) -> Any:
        return getattr(self._driver, name)

    @property
    def deletes_conditionally(self) -> bool:
        return deletes_conditionally(self._driver)

    async def delete_if_version(self, key: str, version: LogVersion) -> bool:
        if key == self._key and self.meanwhile is not None:
            meanwhile, self.meanwhile = self.meanwhile, None
            await meanwhile()
        return await conditional_delete(self._driver).delete_if_version(key, version)


def delay_conditional_delete(
    provider: LogHistoryProvider, key: str, meanwhile: Callable[[], Awaitable[None]]
) -> Callable[[], bool]:
    """Force a race: ``provider``'s first conditional delete of the log ``key`` runs ``meanwhile`` first.

    Returns a function telling whether that delete has happened (so a test can tell the race ran).
    """
    late = _LateDelete(provider.driver, key, meanwhile)
    provider.driver = cast(Any, late)
    return lambda: late.meanwhile is None


async def corrupt_log_history(provider: LogHistoryProvider, session_id: str, record: bytes) -> None:
    """Append ``record`` as it is to the session's stored history, through the provider's log driver.

    The ``corrupt_history`` fixture of any ``LogHistoryProvider`` (every backend's history
    provider); the suite uses it unless a test class overrides the fixture.
    """
    if not isinstance(provider, LogHistoryProvider):  # pyright: ignore[reportUnnecessaryIsInstance]
        pytest.fail(
            f"corruptible is declared, but {type(provider).__name__} is not a LogHistoryProvider: "
            "override the corrupt_history fixture to store a raw record",
            pytrace=False,
        )
    key = provider.keys.history(provider.source_id, session_id)
    tail = await provider.driver.tail(key, 0)
    await provider.driver.append(
        key, [LogRecord("conformance-crafted", record)], expected_version=tail.version, session_id=session_id
    )


#: What clauses rely on, besides their own subject (see ``relies_on``), for a provider over a log driver.
_CONDITIONAL_APPEND = (
    "the log driver refuses an append at a version the log is not at "
    "(LogDriverConformance.test_append_at_a_wrong_version_conflicts_and_stores_nothing)"
)
_FRESH_VERSIONS = (
    "the log driver never reuses a version after a delete or expiry "
    "(LogDriverConformance.test_versions_never_repeat_after_delete_and_rewrite)"
)
_READ_LAST = (
    "the log driver's read(last=n) returns the newest n records "
    "(LogDriverConformance.test_read_last_returns_the_newest_records_oldest_first)"
)
_EXPIRED_ABSENT = (
    "the log driver treats an expired log as absent for every method "
    "(LogDriverConformance.test_expired_log_is_absent_for_every_method)"
)


class HistoryProviderConformance(ConformanceBase):
    """Clauses every chat-history provider must pass; optional ones are selected by ``capabilities``.

    Provide a ``history_factory`` fixture (see the module docstring). Declare what the store can
    do in ``capabilities`` (a :class:`HistoryCapabilities`); list known deviations in
    ``divergences`` with a reason.
    """

    capabilities: ClassVar[HistoryCapabilities] = HistoryCapabilities()
    factory_fixture: ClassVar[str] = "history_factory"
    driver_suite: ClassVar[str | None] = "LogDriverConformance"

    @pytest.fixture
    def history(self, open_store: Callable[..., Awaitable[Any]]) -> HistoryHarness:
        """Return the clause's harness: it opens providers and keeps the clause's sessions."""
        return HistoryHarness(open_store)

    # -- basics ---------------------------------------------------------------------------

    async def test_unknown_session_loads_empty(self, history: HistoryHarness) -> None:
        """Loading a session nothing was saved to returns ``[]``.

        Failure means the store returns ``None``, raises for a missing session, or returns
        messages of another session. Treat a missing log as empty.
        """
        provider = await history.open()
        assert await history.load(provider, unique_id("session")) == []

    async def test_empty_save_is_a_no_op(self, history: HistoryHarness) -> None:
        """Saving an empty list stores nothing and changes nothing.

        Failure means an empty save raised, created a placeholder record, or disturbed the
        existing history. Return early when there is nothing to save.
        """
        provider = await history.open()
        session_id = unique_id("session")
        await history.save(provider, session_id, [])
        assert await history.load(provider, session_id) == []
        existing = [_msg("user", "hello", "m-1"), _msg("assistant", "hi")]
        await history.save(provider, session_id, existing)
        await history.save(provider, session_id, [])
        assert _dicts(await history.load(await history.open(), session_id)) == _dicts(existing)

    async def test_messages_load_in_save_order(self, history: HistoryHarness) -> None:
        """Messages come back in the order they were saved, within one save and across saves.

        Failure means the store orders by something else (message id, timestamp with ties,
        hash order, a set) or reverses a batch. Keep an explicit per-session sequence and read
        in ascending order.
        """
        provider = await history.open()
        session_id = unique_id("session")
        first = [
            _msg("system", "rules"),
            _msg("user", "q1", "m-9"),
            _msg("assistant", "a1", "m-10"),
            _msg("user", "q2"),
            _msg("assistant", "a2", "m-2"),
        ]
        second = [_msg("user", "q3", "m-1"), _msg("assistant", "a3", "m-0")]
        third = [_msg("user", "q4"), _msg("assistant", "a4", "m-a")]
        for batch in (first, second, third):
            await history.save(provider, session_id, batch)
        assert _dicts(await history.load(provider, session_id)) == _dicts(first + second + third)

    async def test_overlapping_saves_land_in_call_order(self, history: HistoryHarness) -> None:
        """Saves to one session through one provider that overlap land in the order they were called.

        Each round starts a save of a four-message turn, lets it begin (one pass of the event
        loop), then starts a save of one message while the first is still under way; the turns
        must load in call order. Failure means a later save overtook an earlier one: the store
        lets overlapping saves race (a save that takes more requests, or one that lost a
        conditional append and retried, lands behind the save that started after it), so a
        conversation is stored out of order. Let saves to one session through one provider
        take turns in call order (``LogHistoryProvider`` keeps a first-come, first-served lock
        per session).
        """
        provider = await history.open()
        session_id = unique_id("session")
        called: list[Message] = []
        for round_ in range(_ORDER_ROUNDS):
            long = [
                _msg("user" if i % 2 == 0 else "assistant", f"turn {round_}.{i}", f"{round_}-{i}") for i in range(4)
            ]
            short = [_msg("user", f"after {round_}", f"{round_}-next")]
            first = asyncio.create_task(history.save(provider, session_id, long))
            await asyncio.sleep(0)  # the first save has started
            second = asyncio.create_task(history.save(provider, session_id, short))
            await asyncio.gather(first, second)
            called += long + short
        loaded = _ids(await history.load(await history.open(), session_id))
        assert loaded == _ids(called), f"saves landed out of call order: {loaded[:12]}..."

    async def test_new_instance_sees_saved_history(self, history: HistoryHarness) -> None:
        """A provider opened later (a restart) sees everything saved before, and both keep appending one history.

        Failure means history lives in the provider instance (a cache that is never reloaded or
        never written through) instead of in the store. Read from and write to the backing store.
        """
        session_id = unique_id("session")
        before = await history.open()
        first = [_msg("user", "before restart", "m-1"), _msg("assistant", "noted", "m-2")]
        await history.save(before, session_id, first)
        after = await history.open()
        assert _dicts(await history.load(after, session_id)) == _dicts(first)
        second = [_msg("user", "after restart", "m-3")]
        await history.save(after, session_id, second)
        assert _dicts(await history.load(before, session_id)) == _dicts(first + second)

    async def test_changes_to_loaded_messages_never_reach_a_later_load(self, history: HistoryHarness) -> None:
        """What a caller does to loaded messages changes nothing stored: every later load returns the messages as saved.

        The framework changes loaded messages in place (a compaction strategy or a tokenizer
        annotates ``additional_properties``; the tool loop reuses the list). Each load here is
        changed in a different way (a text, an id, a property, nested function arguments, a
        content added or removed, a role), then the session is loaded again through the same
        provider and through a new one. Equal messages saved twice load as two objects, so
        marking one never marks the other. Failure means the store hands out messages it keeps
        and serves them again after they were changed. Return new messages, or (to share
        messages across loads) return a kept message again only after checking that it still
        equals its record.
        """
        provider = await history.open()
        session_id = unique_id("session")
        saved = [
            _msg("user", "yes"),
            _msg("user", "yes"),
            Message(
                "assistant",
                [Content.from_function_call("call-1", "forecast", arguments={"city": "Oslo", "days": [1, 2]})],
                message_id="m-call",
            ),
            Message("tool", [Content.from_function_result("call-1", result={"t": 3.5})], message_id="m-result"),
            _msg("assistant", "sunny", "m-answer", note="kept"),
        ]
        await history.save(provider, session_id, saved)
        expected = _dicts(saved)

        def mark(loaded: list[Message]) -> None:
            loaded[0].additional_properties["_excluded"] = True
            loaded[0].contents[0].text = "no"

        def nested(loaded: list[Message]) -> None:
            cast(dict[str, list[int]], loaded[2].contents[0].arguments)["days"].append(3)
            loaded[3].contents[0].additional_properties["_group"] = {"id": 1}

        def reshape(loaded: list[Message]) -> None:
            loaded[4].contents.append(Content.from_text("appended"))
            loaded[2].contents.clear()
            loaded[3].message_id = "changed"
            loaded[1].role = "assistant"
            loaded[4].author_name = "someone"

        for change in (mark, nested, reshape):
            loaded = await history.load(provider, session_id)
            assert _dicts(loaded) == expected, f"before the change {change.__name__!r}, a load differs from the save"
            assert loaded[0] is not loaded[1], "two equal saved messages loaded as one object"
            change(loaded)
            if change is mark:
                assert loaded[1].to_dict() == expected[1], "marking one loaded message marked its equal twin too"
            again = await history.load(provider, session_id)
            assert _dicts(again) == expected, (
                f"after the caller's change {change.__name__!r} to loaded messages, a later load through the "
                "same provider returns the changed messages, not the saved ones"
            )
            assert _dicts(await history.load(await history.open(), session_id)) == expected, (
                f"the caller's change {change.__name__!r} reached the store"
            )

    @requires("admin")
    async def test_a_load_after_another_instance_rewrote_the_session_returns_the_new_messages(
        self, history: HistoryHarness
    ) -> None:
        """After another instance deletes a session and saves different messages, a load returns those.

        The session is rewritten twice: once with messages that share the first record and
        differ after it (as many as before), once back to the original. Failure means a
        provider served messages it built from the old log (a cache keyed by position, length
        or version, not by the stored record itself).
        """
        session_id = unique_id("session")
        options: list[dict[str, Any]] = [{}, {"max_messages": 3}] if self.capabilities.windowed_load else [{}]
        readers = [await history.open(**o) for o in options]
        writer: Any = await history.open()
        original = [_msg("user", "hello"), _msg("assistant", "first answer", "m-1"), _msg("user", "thanks")]
        rewritten = [_msg("user", "hello"), _msg("assistant", "second answer", "m-2"), _msg("user", "thanks!")]
        await history.save(writer, session_id, original)
        for reader in readers:
            for _ in range(2):
                assert _dicts(await history.load(reader, session_id)) == _dicts(original)
        for round_, messages in enumerate((rewritten, original)):
            assert await writer.delete_session(session_id) is True
            await history.save(writer, session_id, messages)
            for reader in readers:
                got = _dicts(await history.load(reader, session_id))
                assert got == _dicts(messages), f"rewrite {round_ + 1}: a load returned messages of the old log"

    # -- fidelity -------------------------------------------------------------------------

    async def test_every_content_type_round_trips(self, history: HistoryHarness) -> None:
        """Every ``Content`` type comes back exactly: ``to_dict()`` of what was loaded equals what was saved.

        Failure means the store's encoding drops or changes fields (nested contents, bytes in
        data URIs, annotations, integers beyond 2**53, unicode). Store ``Message.to_dict()``
        as JSON and rebuild with ``Message.from_dict()``; never hand-pick fields.
        """
        provider = await history.open()
        session_id = unique_id("session")
        messages = [Message("assistant", [c], message_id=f"m-{i}") for i, c in enumerate(sample_contents())]
        messages.append(Message("assistant", sample_contents(), message_id="m-all"))
        await history.save(provider, session_id, messages)
        loaded = _dicts(await history.load(await history.open(), session_id))
        assert len(loaded) == len(messages), "messages were lost or added"
        for saved, got in zip(_dicts(messages), loaded, strict=True):
            assert got == saved, f"{saved['contents'][0]['type']} content did not round-trip"

    async def test_message_fields_round_trip(self, history: HistoryHarness) -> None:
        """Roles, ``message_id``, ``author_name`` and ``additional_properties`` come back exactly.

        Failure means the store keeps only role and text, drops ``additional_properties``
        (compaction marks like ``_excluded`` live there), or coerces values (large integers,
        nested lists, ``None``, unicode keys). Store the whole ``Message.to_dict()``.
        """
        provider = await history.open()
        session_id = unique_id("session")
        properties: dict[str, Any] = {
            "_excluded": False,
            "nested": {"list": [1, 2.5, None, True, "é"], "big": 2**53 + 1, "neg": -(2**62)},
            "ключ": "значение",
            "empty": {},
        }
        messages = [
            Message("system", ["rules"]),
            Message("user", ["hi"], author_name="Ada", message_id="m-1", additional_properties=properties),
            Message("assistant", ["x" * 65536], author_name="bot ü", message_id="m-2"),
            Message("tool", [Content.from_function_result("c-1", result="r")], message_id="m-3"),
            Message("developer", ["a role the framework does not name"], additional_properties={"k": "v"}),
            Message("assistant", [], message_id="m-4"),
            Message("user", ["line\nbreak\r\n\u2028 \x00 end"], message_id=" spaced id/é "),
        ]
        await history.save(provider, session_id, messages)
        assert _dicts(await history.load(await history.open(), session_id)) == _dicts(messages)

    # -- de-duplication -------------------------------------------------------------------

    async def test_replayed_transcript_is_not_stored_twice(self, history: HistoryHarness) -> None:
        """A save that replays the stored transcript and adds new messages stores only the new ones.

        Failure means the store appends every incoming message. Decide what to store with the
        framework's ``filter_new_messages(existing, incoming)``, as ``InMemoryHistoryProvider``
        does (``LogHistoryProvider`` shows how to do it from stored digests).
        """
        provider = await history.open()
        session_id = unique_id("session")
        turn1 = [_msg("user", "q1"), _msg("assistant", "a1", "m-1")]
        turn2 = [_msg("user", "q2"), _msg("assistant", "a2")]
        await history.save(provider, session_id, turn1)
        await history.save(provider, session_id, turn1 + turn2)
        await history.save(provider, session_id, turn1 + turn2)
        assert _dicts(await history.load(provider, session_id)) == _dicts(turn1 + turn2)

    async def test_repeated_user_message_without_id_is_kept(self, history: HistoryHarness) -> None:
        """A user sending the same text twice (no message id) gets two stored messages.

        Failure means the store de-duplicates by content over the whole history (or a set of
        identities). The framework keeps a repeated id-less user input; use
        ``filter_new_messages`` instead of a global identity check.
        """
        provider = await history.open()
        session_id = unique_id("session")
        await history.save(provider, session_id, [_msg("user", "yes")])
        await history.save(provider, session_id, [_msg("user", "yes")])
        await history.save(provider, session_id, [_msg("assistant", "done")])
        await history.save(provider, session_id, [_msg("user", "yes")])
        expected = [_msg("user", "yes"), _msg("user", "yes"), _msg("assistant", "done"), _msg("user", "yes")]
        assert _dicts(await history.load(provider, session_id)) == _dicts(expected)

    # Each example uses a fresh session id, so the store fixture is safely shared across examples;
    # every subclass (one per store) runs the same method, hence the "differing executors".
    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.differing_executors],
    )
    @given(saves=st.lists(_SAVE, min_size=1, max_size=7))
    async def test_deduplication_matches_the_framework(
        self, history: HistoryHarness, saves: list[tuple[str, int, list[int]]]
    ) -> None:
        """Any sequence of saves stores exactly what the framework's ``InMemoryHistoryProvider`` stores.

        The saves mix messages with and without ids, repeated id-less user messages, replayed
        transcript prefixes and overlapping suffixes. Failure means the store's de-duplication
        differs from ``filter_new_messages(existing, incoming)``; hypothesis prints the smallest
        sequence of saves that shows it. Compute the decision exactly as the framework does.
        """
        provider = await history.open()
        session_id = unique_id("session")
        reference = InMemoryHistoryProvider()
        reference_state: dict[str, Any] = {}
        for kind, n, picks in saves:
            stored = await reference.get_messages(session_id, state=reference_state)
            incoming = _resolve(kind, n, picks, stored)
            await reference.save_messages(session_id, _copies(incoming), state=reference_state)
            await history.save(provider, session_id, incoming)
        expected = await reference.get_messages(session_id, state=reference_state)
        assert _dicts(await history.load(provider, session_id)) == _dicts(expected)

    # -- isolation ------------------------------------------------------------------------

    async def test_source_ids_are_isolated(self, history: HistoryHarness) -> None:
        """Providers with different ``source_id`` on one session never see each other's messages.

        Failure means ``source_id`` is not part of the storage key, so two providers on one
        agent (say, a full history and an audit copy) mix their messages. Put the source id in
        every key, through an injective encoding (ids differing only in case or separators too).
        """
        base = unique_id("source")
        sources = [f"{base}-a", f"{base}-A", f"{base}/a", f"{base}_a"]
        session_id = unique_id("session")
        providers = [await history.open(source_id=s) for s in sources]
        for i, provider in enumerate(providers):
            await history.save(provider, session_id, [_msg("user", f"for source {i}", f"m-{i}")])
        for i, source in enumerate(sources):
            reopened = await history.open(source_id=source)
            got = _ids(await history.load(reopened, session_id))
            assert got == [f"m-{i}"], f"source id {source!r} sees {got}"

    async def test_session_ids_never_share_history(self, history: HistoryHarness) -> None:
        """Distinct session ids keep distinct histories, whatever characters they hold.

        Ids are a unique base with each of the suite's adversarial fragments
        (:mod:`agent_stores.testing.adversarial`) after it and before it: they differ only in
        case, whitespace, separators, percent-encoding, ``..``, glob, operator or template
        characters, or unicode normalisation. Failure means the key derivation is not
        injective (lowercasing, stripping, slugifying, URL-decoding) or an id escapes its key
        space. Encode ids injectively, e.g. with the framework's ``_storage_key_segment`` as
        ``agent_stores.core.KeySpace`` does.
        """
        await self._check_separate_histories(history, adversarial_ids(unique_id("sid"), before=True))

    async def test_long_session_ids_keep_separate_histories(self, history: HistoryHarness) -> None:
        """Session ids of 300 characters, 1 kB and 10 kB work and keep distinct histories.

        Failure means a long id breaks a backend limit (file name length, key size, index width)
        or is truncated so that ids sharing a long prefix collide. Map ids past the backend's
        limit to a collision-resistant digest (``_storage_key_segment`` does so only for ids it
        encodes, not for lowercase-safe ones used verbatim).
        """
        await self._check_separate_histories(history, _long_ids())

    @staticmethod
    async def _check_separate_histories(history: HistoryHarness, ids: list[str]) -> None:
        provider = await history.open()
        for i, session_id in enumerate(ids):
            await history.save(provider, session_id, [_msg("user", f"message {i}", f"m-{i}")])
        reopened = await history.open()
        wrong: list[str] = []
        for i, session_id in enumerate(ids):
            got = _ids(await history.load(reopened, session_id))
            if got != [f"m-{i}"]:
                owners = ", ".join(_clip(ids[int(str(g)[2:])]) for g in got if str(g).startswith("m-"))
                wrong.append(f"{_clip(session_id)} holds messages of [{owners}]")
        assert not wrong, "session ids share storage:\n" + "\n".join(wrong)

    # -- concurrency ----------------------------------------------------------------------

    @requires("concurrent_instances")
    async def test_concurrent_saves_lose_and_duplicate_nothing(self, history: HistoryHarness) -> None:
        """Two instances saving turns to one session at once keep every message once, in order, saves unsplit.

        Failure means a lost update (read-modify-write without a condition), a duplicate from a
        retried write, or interleaving inside one save. Append each save atomically with a
        condition (expected length or sequence) and retry on conflict.
        """
        first, second = await history.open(), await history.open()
        session_id = unique_id("session")
        writers = {"w1": _turns("w1", 12), "w2": _turns("w2", 12)}

        async def write(provider: HistoryProvider, turns: list[list[Message]]) -> None:
            for turn in turns:
                await history.save(provider, session_id, turn)

        await asyncio.gather(write(first, writers["w1"]), write(second, writers["w2"]))
        _check_interleaved(await history.load(await history.open(), session_id), writers)

    @requires("concurrent_instances")
    async def test_concurrent_replays_store_once(self, history: HistoryHarness) -> None:
        """Two instances saving the same messages to one session at once store them once.

        Failure means de-duplication reads the history and appends in two unguarded steps, so
        both writers see an empty session and both append. Make check-and-append atomic
        (conditional append with retry, a transaction, or a server-side script).
        """
        providers = [await history.open() for _ in range(2)]
        for round_ in range(5):
            session_id = unique_id("session")
            batch = [_msg("user", f"round {round_}", f"r{round_}-u"), _msg("assistant", "ok", f"r{round_}-a")]
            await asyncio.gather(*(history.save(p, session_id, batch) for p in providers))
            assert _dicts(await history.load(providers[0], session_id)) == _dicts(batch)

    @requires("multi_process")
    async def test_processes_saving_concurrently_lose_and_duplicate_nothing(
        self, history: HistoryHarness, request: pytest.FixtureRequest
    ) -> None:
        """Two OS processes saving to one session at once lose, duplicate, reorder and split nothing.

        Each round both processes save the same two messages to a fresh session (stored once),
        then both save interleaved turns. Failure means the store's atomicity is only
        process-local (an ``asyncio.Lock`` or a thread lock). Use the backend's own atomic
        primitive: a transaction, a conditional write, a server-side script.
        The test class must provide ``history_process_factory`` returning
        ``("module:function", json_kwargs)`` over the same data as ``history_factory``.
        """
        try:
            spec, kwargs = cast(tuple[str, dict[str, Any]], request.getfixturevalue("history_process_factory"))
        except pytest.FixtureLookupError:
            pytest.fail("multi_process is declared, so the class must provide history_process_factory", pytrace=False)
        reader = await history.open()
        processes = [await _WriterProcess.start(spec, kwargs, history.source_id) for _ in range(2)]
        try:
            for process in processes:
                await process.wait_for(_READY)

            async def run(jobs: Sequence[Sequence[Sequence[Message]]], session_id: str) -> None:
                for process, batches in zip(processes, jobs, strict=True):
                    process.save(session_id, batches)
                await asyncio.gather(*(p.wait_for(_DONE) for p in processes))

            for round_ in range(8):
                session_id = unique_id("session")
                batch = [_msg("user", f"round {round_}", f"r{round_}-u"), _msg("assistant", "ok", f"r{round_}-a")]
                await run([[batch], [batch]], session_id)
                got = _ids(await history.load(reader, session_id))
                assert got == _ids(batch), f"round {round_}: both processes' identical save stored as {got}"
            session_id = unique_id("session")
            writers = {"p1": _turns("p1", 15), "p2": _turns("p2", 15)}
            await run(list(writers.values()), session_id)
            _check_interleaved(await history.load(reader, session_id), writers)
        finally:
            for process in processes:
                await process.stop()

    # -- windowed load --------------------------------------------------------------------

    @relies_on(_READ_LAST)
    @requires("windowed_load")
    async def test_max_messages_loads_the_newest_window(self, history: HistoryHarness) -> None:
        """With ``max_messages=N`` a load returns the newest N messages, oldest first.

        Failure means the window is the oldest N, is reversed, or ignores the option. Read the
        last N records (without reading the whole log) and return them in save order.
        """
        session_id = unique_id("session")
        messages = [_msg("user" if i % 2 == 0 else "assistant", f"m{i}", f"m-{i}") for i in range(9)]
        await history.save(await history.open(), session_id, messages)
        for n in (1, 3, 9, 50):
            windowed = await history.open(max_messages=n)
            assert _dicts(await history.load(windowed, session_id)) == _dicts(messages[-n:]), (
                f"max_messages={n} did not load the newest {n} messages, oldest first"
            )

    @relies_on(_READ_LAST)
    @requires("windowed_load")
    async def test_window_never_starts_with_an_orphan_answer(self, history: HistoryHarness) -> None:
        """A window never starts with a tool result or approval response whose request lies outside it.

        Expected: the newest N messages minus any leading answers (``tool`` role,
        ``function_result`` or ``function_approval_response`` contents); never more than N.
        Failure means the model would receive a tool result without its call, which chat APIs
        reject. Drop leading answer messages after cutting the window.
        """
        call = Content.from_function_call("c-1", "lookup", arguments={"q": "x"}, id="c-1")
        call2 = Content.from_function_call("c-2", "lookup", arguments={"q": "y"}, id="c-2")
        messages = [
            _msg("user", "look up x and y", "m-0"),
            Message("assistant", [call, call2], message_id="m-1"),
            Message("tool", [Content.from_function_result("c-1", id="c-1", result="x!")], message_id="m-2"),
            Message("tool", [Content.from_function_result("c-2", id="c-2", result="y!")], message_id="m-3"),
            _msg("assistant", "x! and y!", "m-4"),
            Message("assistant", [Content.from_function_approval_request("c-1", call)], message_id="m-5"),
            Message("user", [Content.from_function_approval_response(True, "c-1", call)], message_id="m-6"),
            _msg("assistant", "approved", "m-7"),
        ]
        session_id = unique_id("session")
        await history.save(await history.open(), session_id, messages)
        tail = ["m-4", "m-5", "m-6", "m-7"]
        expected = {
            1: ["m-7"],
            2: ["m-7"],
            3: tail[1:],
            4: tail,
            5: tail,
            6: tail,
            7: _ids(messages[1:]),
            8: _ids(messages),
        }
        for n, ids in expected.items():
            windowed = await history.open(max_messages=n)
            assert _ids(await history.load(windowed, session_id)) == ids, (
                f"max_messages={n} loaded other messages than the newest {n}, less any leading orphan answers"
            )

    @requires("windowed_load")
    async def test_invalid_max_messages_is_rejected(self, history: HistoryHarness) -> None:
        """``max_messages`` of 0 or less is a ``ValueError`` when the provider is created.

        Failure means a zero or negative window silently loads nothing (or everything).
        Validate the option in the constructor.
        """
        for n in (0, -1):
            with pytest.raises(ValueError):
                await history.open(max_messages=n)

    @requires("windowed_load")
    async def test_windowed_provider_deduplicates_against_the_whole_history(self, history: HistoryHarness) -> None:
        """A provider with ``max_messages`` still de-duplicates a replayed transcript longer than its window.

        Failure means saves compare incoming messages with the loaded window instead of the
        stored history, storing the replayed part again. De-duplicate against the stored log.
        """
        session_id = unique_id("session")
        transcript = [_msg("user" if i % 2 == 0 else "assistant", f"m{i}") for i in range(6)]
        await history.save(await history.open(), session_id, transcript)
        windowed = await history.open(max_messages=2)
        added = [_msg("user", "new")]
        await history.save(windowed, session_id, transcript + added)
        assert _dicts(await history.load(await history.open(), session_id)) == _dicts(transcript + added)

    # -- ttl ------------------------------------------------------------------------------

    @requires("ttl", fake_clock=True)
    async def test_ttl_expires_a_session_after_its_last_save(self, history: HistoryHarness, clock: FakeClock) -> None:
        """With ``ttl`` a session loads in full until ``ttl`` after its last save, then loads as empty.

        On the fake clock: the session is saved, saved again half a ttl later, loaded when a ttl
        has passed since the first save but not since the second (whole: the expiry slides),
        then loaded a ttl after the second save (empty). Failure means expiry counts from the
        first save (not sliding), never happens, or a later save does not extend it. Reset the
        expiry on every save that stores messages, and treat an expired session as absent on
        every read.
        """
        provider, reader = await history.open(ttl=_TTL), await history.open(ttl=_TTL)
        session_id = unique_id("session")
        await history.save(provider, session_id, [_msg("user", "early", "m-1")])
        clock.advance(_TTL / 2)
        await history.save(provider, session_id, [_msg("assistant", "later", "m-2")])
        clock.advance(_TTL / 2 + 1)  # a ttl after the first save, half a ttl after the second
        loaded = _ids(await history.load(reader, session_id))
        assert loaded == ["m-1", "m-2"], f"a save did not extend the expiry: loaded {loaded}"
        clock.advance(_TTL / 2 - 2)  # just short of a ttl after the second save
        assert _ids(await history.load(reader, session_id)) == ["m-1", "m-2"], "the session expired early"
        clock.advance(2)  # past a ttl after the second save
        assert await history.load(reader, session_id) == [], "the session did not expire"

    @relies_on(_CONDITIONAL_APPEND, _EXPIRED_ABSENT)
    @requires("ttl", fake_clock=True)
    async def test_save_after_expiry_starts_a_fresh_history(self, history: HistoryHarness, clock: FakeClock) -> None:
        """A save to an expired session starts a new history: nothing of the expired one comes back.

        Failure means the expired records are still stored under the session and reappear once
        a save renews the expiry, or a replayed message is de-duplicated against expired ones.
        Remove (or ignore) the expired records atomically with the first save after expiry.
        """
        provider, reader = await history.open(ttl=_TTL), await history.open(ttl=_TTL)
        session_id = unique_id("session")
        old = [_msg("user", "old", "m-1"), _msg("assistant", "older", "m-2")]
        await history.save(provider, session_id, old)
        clock.advance(_TTL + 1)
        fresh = [_msg("assistant", "older", "m-2"), _msg("user", "new", "m-3")]
        await history.save(provider, session_id, fresh)
        assert _dicts(await history.load(reader, session_id)) == _dicts(fresh), "expired records came back"

    @requires("ttl")
    async def test_invalid_ttl_is_rejected(self, history: HistoryHarness) -> None:
        """A ``ttl`` of 0 or less is a ``ValueError`` when the provider is created.

        Failure means a zero or negative ttl silently expires everything at once, or never.
        Validate the option in the constructor.
        """
        for ttl in (0, -1):
            with pytest.raises(ValueError):
                await history.open(ttl=ttl)

    # -- skip_excluded --------------------------------------------------------------------

    @requires("skip_excluded")
    async def test_skip_excluded_omits_excluded_messages(self, history: HistoryHarness) -> None:
        """With ``skip_excluded=True`` loads omit messages marked ``_excluded``; saves still see them.

        Failure means excluded messages are loaded (or non-excluded ones dropped), or a replay is
        de-duplicated against the filtered view and stores excluded messages again. Filter on
        load only, on ``additional_properties["_excluded"]`` being truthy.
        """
        session_id = unique_id("session")
        messages = [
            _msg("user", "keep", "m-1"),
            _msg("assistant", "compacted", "m-2", _excluded=True),
            _msg("user", "kept too", "m-3", _excluded=False),
            _msg("assistant", "compacted too", _excluded=1),
            _msg("assistant", "last"),
        ]
        await history.save(await history.open(), session_id, messages)
        skipping = await history.open(skip_excluded=True)
        kept = [messages[0], messages[2], messages[4]]
        assert _dicts(await history.load(skipping, session_id)) == _dicts(kept)
        added = [_msg("user", "next", "m-6")]
        await history.save(skipping, session_id, messages + added)
        assert _dicts(await history.load(await history.open(), session_id)) == _dicts(messages + added)

    # -- admin ----------------------------------------------------------------------------

    @requires("admin")
    async def test_count_messages_counts_stored_messages(self, history: HistoryHarness) -> None:
        """``count_messages`` returns how many messages a session holds (0 for an unknown one).

        Failure means the count includes de-duplicated messages, counts another session, or
        raises for a missing session. Count the session's stored records; treat a missing log as 0.
        """
        provider: Any = await history.open()
        session_id = unique_id("session")
        assert await provider.count_messages(session_id) == 0
        batch = [_msg("user", "a"), _msg("assistant", "b", "m-1"), _msg("user", "c")]
        await history.save(provider, session_id, batch)
        await history.save(provider, session_id, batch)
        assert await provider.count_messages(session_id) == 3

    @requires("admin")
    async def test_delete_session_removes_only_that_session(self, history: HistoryHarness) -> None:
        """``delete_session`` removes one session's history, reports whether it existed, and spares others.

        Failure means deletion leaves records behind (a new save then de-duplicates against
        them), touches a session whose key shares a prefix, or returns the wrong flag. Delete by
        the session's exact key (never by a prefix or pattern) together with its sequence state.
        """
        provider: Any = await history.open()
        session_id = unique_id("session")
        sibling = session_id + "-2"
        await history.save(provider, session_id, [_msg("user", "gone", "m-1")])
        await history.save(provider, sibling, [_msg("user", "stays", "m-2")])
        assert await provider.delete_session(session_id) is True
        assert await history.load(provider, session_id) == []
        assert await provider.count_messages(session_id) == 0
        assert await provider.delete_session(session_id) is False
        assert _ids(await history.load(provider, sibling)) == ["m-2"]
        await history.save(provider, session_id, [_msg("user", "gone", "m-1")])
        assert _ids(await history.load(provider, session_id)) == ["m-1"]

    @requires("admin")
    async def test_list_sessions_pages_through_this_source(self, history: HistoryHarness) -> None:
        """``list_sessions`` lists exactly this source's non-empty sessions, paging with ``after``/``limit``.

        Failure means sessions of another source id are listed, ids come back mangled (not
        decoded), a deleted session is still listed, or paging repeats or skips ids. List by the
        source's key prefix including its separator, decode each key back to the session id, and
        page in one stable order strictly after ``after``.
        """
        provider: Any = await history.open()
        other: Any = await history.open(source_id=history.source_id + "-other")
        base = unique_id("sid")
        ids = [f"{base}-a", f"{base}-B", f"{base}/c", f"{base}-\u00e9", f"{base} d"]
        for session_id in ids:
            await history.save(provider, session_id, [_msg("user", "x")])
        await history.save(other, f"{base}-other", [_msg("user", "x")])
        listed: list[str] = await provider.list_sessions(limit=1000)
        assert sorted(listed) == sorted(ids)

        async def page(after: str | None) -> list[str]:
            return await provider.list_sessions(after=after, limit=2)

        paged = await collect_pages(
            "list_sessions(limit=2)", page, name=str, page_size=2, most=len(ids) + 2, stop_on_short_page=False
        )
        assert paged == listed
        await provider.delete_session(ids[0])
        assert sorted(await provider.list_sessions(limit=1000)) == sorted(ids[1:])

    @relies_on(_CONDITIONAL_APPEND, _FRESH_VERSIONS)
    @requires("admin")
    async def test_stale_instance_saves_after_another_rewrote_the_session(self, history: HistoryHarness) -> None:
        """Instance A saves; instance B deletes the session and saves as many messages; A saves again: nothing lost.

        A replays its transcript plus one new message; the session must then hold B's messages
        followed by all of A's (what ``InMemoryHistoryProvider`` stores for the same saves).
        Failure means A decided what to store from its memory of the deleted history and its
        append did not conflict: the store's log version came back after delete and rewrite (a
        version derived from the length), so A's replayed messages were taken as already stored.
        """
        first, second = await history.open(), await history.open()
        session_id = unique_id("session")
        mine = [_msg("user", "from A", "a-1"), _msg("assistant", "to A", "a-2")]
        await history.save(first, session_id, mine)
        admin: Any = second
        assert await admin.delete_session(session_id) is True
        theirs = [_msg("user", "from B", "b-1"), _msg("assistant", "to B", "b-2")]
        await history.save(second, session_id, theirs)
        added = [_msg("user", "A again", "a-3")]
        await history.save(first, session_id, mine + added)
        loaded = _ids(await history.load(await history.open(), session_id))
        assert loaded == _ids(theirs + mine + added), (
            f"the session holds the message ids {loaded}, not B's messages followed by all of A's: A's save was "
            "taken as already stored"
        )

    @relies_on(_CONDITIONAL_APPEND, _FRESH_VERSIONS)
    @requires("ttl", fake_clock=True)
    async def test_stale_instance_saves_after_the_session_expired_and_was_rewritten(
        self, history: HistoryHarness, clock: FakeClock
    ) -> None:
        """Instance A saves; the session expires; instance B saves as many messages; A saves again: nothing lost.

        Failure means the log's version after expiry and a rewrite equals the one A remembers
        (a version derived from the length), so A's replayed messages are taken as stored.
        Never reuse a version once a log expired.
        """
        first, second = await history.open(ttl=_TTL), await history.open(ttl=_TTL)
        session_id = unique_id("session")
        mine = [_msg("user", "from A", "a-1"), _msg("assistant", "to A", "a-2")]
        await history.save(first, session_id, mine)
        clock.advance(_TTL + 1)
        theirs = [_msg("user", "from B", "b-1"), _msg("assistant", "to B", "b-2")]
        await history.save(second, session_id, theirs)
        added = [_msg("user", "A again", "a-3")]
        await history.save(first, session_id, mine + added)
        loaded = _ids(await history.load(await history.open(ttl=_TTL), session_id))
        assert loaded == _ids(theirs + mine + added), (
            f"the session holds the message ids {loaded}, not B's messages followed by all of A's: A's save was "
            "taken as already stored"
        )

    @relies_on(_EXPIRED_ABSENT)
    @requires("ttl", "admin", fake_clock=True)
    async def test_count_messages_of_an_expired_session_is_zero(
        self, history: HistoryHarness, clock: FakeClock
    ) -> None:
        """An expired session counts 0 messages, is not listed, and ``delete_session`` reports it did not exist.

        Failure means the admin calls read the expired records that loads already hide, so an
        operator sees (and exports) sessions that expired. Treat an expired log as absent in
        every call.
        """
        provider: Any = await history.open(ttl=_TTL)
        session_id = unique_id("session")
        await history.save(provider, session_id, [_msg("user", "a", "m-1"), _msg("assistant", "b", "m-2")])
        assert await provider.count_messages(session_id) == 2, "count_messages of a live session"
        clock.advance(_TTL + 1)
        assert await provider.count_messages(session_id) == 0, "count_messages counts an expired session"
        assert session_id not in await provider.list_sessions(limit=1000), "list_sessions lists an expired session"
        assert await provider.delete_session(session_id) is False, "delete_session found an expired session"

    @requires("ttl", "admin", fake_clock=True)
    async def test_purge_expired_spares_live_sessions(self, history: HistoryHarness, clock: FakeClock) -> None:
        """``purge_expired`` removes expired sessions only: those without ttl or not yet expired stay whole.

        It returns how many logs it removed, an int: at least the clause's expired session
        (other data in the store may add to it). Failure means the purge removed live history
        (a purge of every log, or an expiry comparison the wrong way round) or did not count
        what it removed. A purged session then saves and loads afresh; failure there means the
        purge left part of the session behind (records without their log), so every later save
        to it fails or shows purged messages.
        """
        expiring: Any = await history.open(ttl=_TTL)
        lasting: Any = await history.open(ttl=_TTL * 10)
        forever: Any = await history.open()
        sessions = {name: unique_id(f"session-{name}") for name in ("expiring", "lasting", "forever")}
        kept = [_msg("user", "keep me", "m-1"), _msg("assistant", "kept", "m-2")]
        for name, provider in (("expiring", expiring), ("lasting", lasting), ("forever", forever)):
            await history.save(provider, sessions[name], kept)
        clock.advance(_TTL + 1)
        purged = await forever.purge_expired()
        assert isinstance(purged, int) and purged >= 1, f"purge_expired returned {purged!r} for an expired session"
        reader: Any = await history.open()
        for name in ("lasting", "forever"):
            assert _ids(await history.load(reader, sessions[name])) == ["m-1", "m-2"], f"purge removed a {name} session"
            assert await reader.count_messages(sessions[name]) == 2
        assert await reader.count_messages(sessions["expiring"]) == 0
        listed = set(await reader.list_sessions(limit=1000))
        assert {sessions["lasting"], sessions["forever"]} <= listed
        assert sessions["expiring"] not in listed
        again = [_msg("user", "after the purge", "m-3")]
        await history.save(forever, sessions["expiring"], again)
        assert _ids(await history.load(reader, sessions["expiring"])) == ["m-3"], "a purged session came back"
        assert await reader.count_messages(sessions["expiring"]) == 1
        assert sessions["expiring"] in set(await reader.list_sessions(limit=1000))

    # -- corrupt records --------------------------------------------------------------------

    # -- stored compaction ----------------------------------------------------------------

    @requires("stored_compaction")
    async def test_compaction_is_stored_and_loaded_verbatim(self, history: HistoryHarness) -> None:
        """A compaction's decisions load back exactly as the strategy left them; the transcript stays whole.

        Expected: after ``compact``, a new provider loads what the framework's
        ``apply_compaction`` makes of the stored messages (every annotation verbatim, the
        summary where the first summarised message stood, the ids the framework assigned); a
        second compaction acts on that view; ``export_messages`` returns the saved messages
        unchanged. Failure means annotations are dropped or altered on the way through storage,
        the compaction is not applied on load, or it rewrote or deleted stored messages.
        """
        provider: Any = await history.open()
        session_id = unique_id("session")
        saved = [
            _msg("user" if i % 2 == 0 else "assistant", f"turn {i}", None if i % 3 else f"m-{i}") for i in range(7)
        ]
        await history.save(provider, session_id, saved)
        expected = await _compacted_reference(saved, SuiteCompaction(keep=3))
        assert await provider.compact(session_id, SuiteCompaction(keep=3)) is True, "compact stored nothing"
        assert _dicts(await history.load(await history.open(), session_id)) == expected, (
            "the loaded view is not what the strategy decided"
        )
        more = [_msg("user", "turn 7"), _msg("assistant", "turn 8", "m-8")]
        await history.save(provider, session_id, more)
        expected = await _compacted_reference([*map(Message.from_dict, expected), *more], SuiteCompaction(keep=1))
        assert await provider.compact(session_id, SuiteCompaction(keep=1)) is True
        assert _dicts(await history.load(await history.open(), session_id)) == expected, (
            "a second compaction did not act on the view the first one left"
        )
        exported = await cast(Any, await history.open()).export_messages(session_id)
        assert _dicts(exported) == _dicts([*saved, *more]), "the stored transcript was rewritten or lost messages"

    @requires("stored_compaction", "skip_excluded")
    async def test_skip_excluded_loads_the_compacted_view(self, history: HistoryHarness) -> None:
        """With ``skip_excluded=True`` a compacted session loads the summary and the kept messages only.

        Failure means messages a stored compaction excluded still reach the model, or the
        summary is missing. Apply compaction records first, then filter on ``_excluded``.
        """
        provider: Any = await history.open()
        session_id = unique_id("session")
        saved = [_msg("user", f"q{i}", f"m-{i}") for i in range(5)]
        await history.save(provider, session_id, saved)
        assert await provider.compact(session_id, SuiteCompaction(keep=2))
        loaded = await history.load(await history.open(skip_excluded=True), session_id)
        assert [m.text for m in loaded] == ["summary of 3: q0 | q1 | q2", "q3", "q4"]

    @requires("stored_compaction")
    async def test_compaction_racing_a_save_decides_again_on_the_new_tail(self, history: HistoryHarness) -> None:
        """A save landing between a compaction's read and its write makes the compaction read and decide again.

        The strategy's first run lets another provider instance save a turn (a forced race).
        Expected: the strategy runs a second time on a list that holds the new turn, the new
        turn is never lost, and the stored decision is the second one. Failure means the
        compaction was stored without the version check (its decision describes an outdated
        transcript, or its references point at the wrong messages).
        """
        provider: Any = await history.open()
        other = await history.open()
        session_id = unique_id("session")
        saved = [_msg("user", f"q{i}", f"m-{i}") for i in range(4)]
        await history.save(provider, session_id, saved)
        racing = [_msg("user", "racing", "m-r"), _msg("assistant", "racing answer", "m-ra")]

        async def race() -> None:
            await history.save(other, session_id, racing)

        strategy = SuiteCompaction(keep=2, before_first=race)
        assert await provider.compact(session_id, strategy) is True
        assert len(strategy.seen) == 2, "the compaction was stored although a save landed after its read"
        assert strategy.seen[1][-2:] == ["racing", "racing answer"], "the retry did not see the racing save"
        expected = await _compacted_reference([*saved, *racing], SuiteCompaction(keep=2))
        assert _dicts(await history.load(await history.open(), session_id)) == expected
        exported = await cast(Any, await history.open()).export_messages(session_id)
        assert _dicts(exported) == _dicts([*saved, *racing]), "a message was lost or duplicated"

    @requires("stored_compaction")
    async def test_saves_after_a_compaction_store_nothing_twice(self, history: HistoryHarness) -> None:
        """A replayed transcript saved after a compaction is de-duplicated as if no compaction were stored.

        Failure means de-duplication compared the incoming messages with the compaction record
        instead of the stored messages before it, and stored a replay twice.
        """
        provider: Any = await history.open()
        session_id = unique_id("session")
        saved = [_msg("user" if i % 2 == 0 else "assistant", f"t{i}") for i in range(6)]
        await history.save(provider, session_id, saved)
        assert await provider.compact(session_id, SuiteCompaction(keep=2))
        await history.save(await history.open(), session_id, saved[-2:])
        await history.save(provider, session_id, saved[-1:])
        await history.save(await history.open(), session_id, saved)
        exported = await cast(Any, await history.open()).export_messages(session_id)
        assert _dicts(exported) == _dicts(saved), "a replay after a compaction was stored again"

    @requires("stored_compaction", "windowed_load")
    async def test_windows_after_a_compaction_count_messages_and_keep_tool_groups_whole(
        self, history: HistoryHarness
    ) -> None:
        """``max_messages`` counts messages, not compaction records, and never starts inside a tool-call group.

        Expected: the newest N stored messages with the compaction applied, less a leading tool
        result whose call lies outside the window. Failure means a stored compaction shrank the
        window, or a window began with an orphan tool result.
        """
        call = Content.from_function_call("c-1", "lookup", arguments={"q": "x"}, id="c-1")
        saved = [
            _msg("user", "look up x", "m-0"),
            Message("assistant", [call], message_id="m-1"),
            Message("tool", [Content.from_function_result("c-1", id="c-1", result="x!")], message_id="m-2"),
            _msg("assistant", "x!", "m-3"),
            _msg("user", "thanks", "m-4"),
            _msg("assistant", "welcome", "m-5"),
        ]
        session_id = unique_id("session")
        provider: Any = await history.open()
        await history.save(provider, session_id, saved)
        assert await provider.compact(session_id, SuiteCompaction(keep=5))
        expected = {5: ["m-1", "m-2", "m-3", "m-4", "m-5"], 4: ["m-3", "m-4", "m-5"], 2: ["m-4", "m-5"]}
        for n, ids in expected.items():
            loaded = await history.load(await history.open(max_messages=n), session_id)
            assert _ids(loaded) == ids, f"max_messages={n} loaded {_ids(loaded)}"

    @requires("stored_compaction")
    async def test_retention_drops_excluded_messages_and_keeps_the_model_view(self, history: HistoryHarness) -> None:
        """``retain`` drops what stored compactions excluded and leaves what the model is sent as it was.

        Expected: after a compaction and ``retain``, a new provider loads (``skip_excluded``
        or not) exactly the view the model was sent before: the summary and the kept messages
        with their annotations; ``export_messages`` returns just those; a second ``retain``
        drops nothing; a replay of kept messages is stored once, new messages after them, and a
        later compaction and retention act on the retained transcript. Failure means retention
        dropped kept messages or summaries, left excluded ones, changed annotations, or broke
        de-duplication.
        """
        provider: Any = await history.open()
        session_id = unique_id("session")
        saved = [
            _msg("user" if i % 2 == 0 else "assistant", f"turn {i}", None if i % 3 else f"m-{i}") for i in range(7)
        ]
        await history.save(provider, session_id, saved)
        assert await provider.compact(session_id, SuiteCompaction(keep=3))
        sent = _dicts(await history.load(await history.open(skip_excluded=True), session_id))
        assert await provider.retain(session_id) == 4, "retain did not report the 4 excluded messages it dropped"
        options: dict[str, Any]
        for options in ({"skip_excluded": True}, {}):
            loaded = _dicts(await history.load(await history.open(**options), session_id))
            assert loaded == sent, f"after retain, a load with {options} is not what the model was sent"
        reader: Any = await history.open()
        assert _dicts(await reader.export_messages(session_id)) == sent, "excluded messages are still stored"
        assert await reader.retain(session_id) == 0, "a second retain dropped more"
        await history.save(await history.open(), session_id, [*saved[-2:], _msg("user", "turn 7", "m-7")])
        kept = [*sent, _msg("user", "turn 7", "m-7").to_dict()]
        assert _dicts(await reader.export_messages(session_id)) == kept, "a replay after retention was stored twice"
        assert await provider.compact(session_id, SuiteCompaction(keep=1))
        expected = await _compacted_reference([Message.from_dict(m) for m in kept], SuiteCompaction(keep=1))
        assert await reader.retain(session_id) == 4, "the stored summary and the 3 kept messages were excluded"
        assert _dicts(await history.load(await history.open(), session_id)) == [
            m for m in expected if not m.get("additional_properties", {}).get("_excluded")
        ], "a retention after a retention did not keep the compacted view"

    @pytest.fixture
    def crash_history(self) -> Callable[[Any, int], None]:
        """Make a provider stop at a given write (:func:`crash_log_history`); override it for other providers."""
        return crash_log_history

    @requires("stored_compaction")
    async def test_retention_stopped_at_any_write_keeps_a_transcript_and_a_rerun_finishes(
        self, history: HistoryHarness, request: pytest.FixtureRequest
    ) -> None:
        """A retention stopped before any of its writes leaves the old or the new transcript; a rerun finishes it.

        The ``crash_history`` fixture stops the provider before one write of its retention
        (the fourth; each in turn with ``AGENT_STORES_HEAVY=1``). Then a new provider loads
        either the whole compacted view or the retained one, and the model's view
        (``skip_excluded``) unchanged; a ``retain`` through another provider finishes; a save
        then lands after the retained transcript, once. Failure means a crash can leave a
        session empty or half rewritten, or a rerun loses or repeats messages.
        """
        crash: Callable[[Any, int], None] = request.getfixturevalue("crash_history")
        saved = [_msg("user" if i % 2 == 0 else "assistant", f"turn {i}", f"m-{i}") for i in range(5)]
        later = _msg("user", "after the crash", "m-later")
        failures: list[str] = []
        # Stopping before the swap's append (an absent log beside a staged one) asks the most of a
        # driver; every stop runs with AGENT_STORES_HEAVY=1 (the core tests run them on real servers).
        every_stop = os.environ.get("AGENT_STORES_HEAVY") == "1"
        writes = 0 if every_stop else _SWAP_WRITE
        while True:
            session_id = unique_id("session")
            provider: Any = await history.open()
            await history.save(provider, session_id, saved)
            assert await provider.compact(session_id, SuiteCompaction(keep=2))
            old = _dicts(await history.load(await history.open(), session_id))
            sent = _dicts(await history.load(await history.open(skip_excluded=True), session_id))
            crash(provider, writes)
            try:
                await provider.retain(session_id)
            except SimulatedCrash:
                pass
            else:
                break  # the retention made fewer writes than this: every stop was tried
            loaded = _dicts(await history.load(await history.open(), session_id))
            if loaded not in (old, sent):
                failures.append(
                    f"stopped before write {writes + 1}: a load returned {[m.get('message_id') for m in loaded]}"
                )
            if _dicts(await history.load(await history.open(skip_excluded=True), session_id)) != sent:
                failures.append(f"stopped before write {writes + 1}: the model's view changed")
            await cast(Any, await history.open()).retain(session_id)
            await history.save(await history.open(), session_id, [later])
            held = _dicts(await cast(Any, await history.open()).export_messages(session_id))
            if held != [*sent, later.to_dict()]:
                failures.append(
                    f"stopped before write {writes + 1}: after a save and a rerun the session holds "
                    f"{[m.get('message_id') for m in held]}"
                )
            writes += 1
            if not every_stop:
                break
        assert writes > _SWAP_WRITE, f"a retention made only {writes} writes: it cannot have staged, sealed and swapped"
        assert not failures, "\n".join(failures)

    @pytest.fixture
    def corrupt_history(self) -> Callable[[Any, str, bytes], Awaitable[None]]:
        """Store one raw record after a session's history (:func:`corrupt_log_history`); override it for others."""
        return corrupt_log_history

    @requires("corruptible")
    async def test_crafted_records_are_corrupt_record_errors(
        self, history: HistoryHarness, request: pytest.FixtureRequest
    ) -> None:
        """A stored record of every hostile shape makes a load raise ``CorruptRecordError`` naming the session.

        Each of :data:`CORRUPT_RECORDS` is stored after a saved message; loading through the
        provider that saved it and through a new one raises ``CorruptRecordError`` (a
        ``ValueError``) whose message names the session, and, with ``admin``, the session can
        still be deleted and then loads empty. A failure lists each shape: a ``RecursionError``,
        ``AttributeError``, ``UnicodeDecodeError`` or bare ``ValueError`` means the decoder let
        the parser's own error escape; decode every record in one step that translates them all.
        """
        corrupt: Callable[[Any, str, bytes], Awaitable[None]] = request.getfixturevalue("corrupt_history")
        provider = await history.open()
        failures: list[str] = []
        for label, record in CORRUPT_RECORDS.items():
            session_id = unique_id("session")
            await history.save(provider, session_id, [_msg("user", "stored before", "m-1")])
            await history.load(provider, session_id)  # a provider that caches decoded records holds this one
            await corrupt(provider, session_id, record)
            for which, reader in (("the saving provider", provider), ("a new provider", await history.open())):
                if wrong := await misbehaviour(history.load(reader, session_id), CorruptRecordError, session_id):
                    failures.append(f"{label}: {which} {wrong}")
            if self.capabilities.admin:
                admin: Any = provider
                try:
                    deleted = await admin.delete_session(session_id)
                    left = await history.load(provider, session_id)
                except Exception as err:
                    failures.append(f"{label}: delete_session, then a load, raised {type(err).__name__}: {err}")
                else:
                    if deleted is not True or left:
                        failures.append(f"{label}: delete_session returned {deleted!r}, then loaded {_ids(left)}")
        assert not failures, "\n".join(failures)
