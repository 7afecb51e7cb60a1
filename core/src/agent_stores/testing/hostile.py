"""Hostile input and tenant isolation, against every store one backend's ``open_stores`` hands out.

Subclass :class:`HostileInputSuite` in a backend's test module and provide ``tenant_stores``: a
fixture returning a callable ``tenant -> (Stores, store_options)`` that opens the backend for one
tenant without I/O. ``store_options`` are the keyword arguments that place that tenant's file and
session stores (``{"prefix": "<tenant>/"}`` where the stores take a prefix, ``{}`` where the
tenant already has a location of its own, such as its own folder or bucket prefix)::

    class TestRedisHostile(HostileInputSuite):
        @pytest.fixture
        def tenant_stores(self, redis_single, key_prefix):
            return lambda tenant: (open_stores(redis_single.url, key_prefix=key_prefix), {"prefix": f"{tenant}/"})

The hypothesis clauses draw identifiers and paths from :func:`hostile_text`: traversal, NUL,
control characters, glob/regex/Lua metacharacters, Mongo operator shapes, Redis hash tags, the
key-derivation markers themselves, case and Unicode-normalisation twins, up to 10 kB. For every
pair of distinct inputs each store must either refuse one with a ``ValueError`` or store it in
a place of its own: no crash, no other exception, no escape, no collision (two distinct ids
never read each other's data). Each clause runs the class's ``default_examples`` (200; a slow
server's module sets fewer), 5,000 with ``AGENT_STORES_HEAVY=1``, or
``AGENT_STORES_HOSTILE_EXAMPLES``. Each clause records what
it tried in :data:`TALLY` (cases, refused, stored), which a run can write out as figures.

Every clause runs its own event loop (``asyncio.Runner``): hypothesis drives a plain function
per example, and the backend's client stays on one loop for the whole clause.
"""

from __future__ import annotations

import asyncio
import json
import os
import unicodedata
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import pytest
from agent_framework import AgentSession, Message, WorkflowCheckpoint
from agent_framework._harness._todo import TodoItem
from agent_framework.exceptions import WorkflowCheckpointException
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agent_stores.core.files import normalize_path
from agent_stores.core.stores import Stores

from .adversarial import ADVERSARIAL_FRAGMENTS
from .checkpoints import make_checkpoint

__all__ = [
    "FRAGMENTS",
    "OPERATOR_SHAPES",
    "TALLY",
    "HostileInputSuite",
    "TenantStores",
    "hostile_examples",
    "hostile_text",
    "record_figures",
]

T = TypeVar("T")

# A tenant's backend and the options that place its file and session stores.
TenantStores = Callable[[str], tuple[Stores, dict[str, Any]]]


def hostile_examples(default: int = 200) -> int:
    """Examples per hypothesis clause: ``default``, 5,000 under ``AGENT_STORES_HEAVY=1``.

    ``AGENT_STORES_HOSTILE_EXAMPLES`` overrides both.
    """
    explicit = os.environ.get("AGENT_STORES_HOSTILE_EXAMPLES")
    if explicit:
        return int(explicit)
    return 5000 if os.environ.get("AGENT_STORES_HEAVY") == "1" else default


#: The fragments :func:`hostile_text` mixes into drawn text: every adversarial fragment.
FRAGMENTS: tuple[str, ...] = ADVERSARIAL_FRAGMENTS

# Non-string values shaped like query operators or other types: refused, never interpreted.
OPERATOR_SHAPES: tuple[Any, ...] = ({"$ne": None}, {"$gt": ""}, ["a"], ("a",), 5, 1.5, b"a", True)


def hostile_text(*, max_size: int = 10_000) -> st.SearchStrategy[str]:
    """Strings mixing :data:`FRAGMENTS` with arbitrary text, now and then up to ``max_size`` characters."""
    fragment = st.sampled_from(FRAGMENTS)
    mixed = st.lists(st.one_of(fragment, st.text(max_size=6)), min_size=1, max_size=6).map("".join)
    long = st.tuples(fragment, st.text(min_size=1, max_size=3), st.integers(1, max_size)).map(
        lambda parts: ((parts[0] + parts[1]) * parts[2])[: parts[2]]
    )
    return st.one_of(fragment, mixed, mixed, st.text(max_size=20), long)


def _twins(strategy: st.SearchStrategy[str]) -> st.SearchStrategy[tuple[str, str]]:
    """Pairs of strings, often twins under case folding or Unicode normalisation."""

    def twin(value: str) -> st.SearchStrategy[tuple[str, str]]:
        return st.sampled_from(
            [
                (value, value.upper()),
                (value, value.lower()),
                (value, unicodedata.normalize("NFC", value)),
                (value, unicodedata.normalize("NFD", value)),
                (value, value + " "),
                (value, value.replace("/", "\\")),
            ]
        )

    return st.one_of(st.tuples(strategy, strategy), strategy.flatmap(twin))


@dataclass
class Tally:
    """What one clause tried: cases (examples), operations refused with ``ValueError`` and stored."""

    cases: int = 0
    refused: int = 0
    stored: int = 0


TALLY: dict[str, Tally] = {}

FIGURES_ENV = "AGENT_STORES_FIGURES"


def record_figures(clause: str, **figures: int) -> None:
    """Append one clause's figures as a JSON line to the file ``$AGENT_STORES_FIGURES`` names (if set)."""
    path = os.environ.get(FIGURES_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as out:
            out.write(json.dumps({"clause": clause, **figures}) + "\n")


_REFUSALS = (ValueError,)


async def _refused(action: Awaitable[T]) -> tuple[bool, T | None]:
    """Await ``action``: ``(True, None)`` when it raised ``ValueError``, else ``(False, result)``."""
    try:
        return False, await action
    except _REFUSALS:
        return True, None


def _run_examples(
    clause: str,
    strategy: st.SearchStrategy[T],
    case: Callable[[T, Tally], Coroutine[Any, Any, None]],
    stores: Stores,
    examples: int,
) -> None:
    """Run ``case`` on ``examples`` draws of ``strategy`` on one event loop, then close ``stores`` on it."""
    tally = TALLY.setdefault(clause, Tally())
    with asyncio.Runner() as runner:

        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
        )
        @given(strategy)
        def check(value: T) -> None:
            tally.cases += 1
            runner.run(case(value, tally))

        try:
            check()
        finally:
            runner.run(stores.aclose())
            record_figures(clause, cases=tally.cases, refused=tally.refused, stored=tally.stored)


def _marker() -> str:
    return f"hostile-{uuid.uuid4().hex}"


class HostileInputSuite:
    """Hostile identifiers and paths, and tenant isolation, on every store of one backend.

    Provide a ``tenant_stores`` fixture (see the module docs). Each clause opens the stores it
    needs from it and closes them.
    """

    default_examples: ClassVar[int] = 200

    def _clause(self, what: str) -> str:
        return f"{type(self).__name__}: {what}"

    @property
    def examples(self) -> int:
        """Examples each hypothesis clause runs (see :func:`hostile_examples`)."""
        return hostile_examples(self.default_examples)

    # -- hostile input ---------------------------------------------------------------------

    def test_hostile_history_ids(self, tenant_stores: TenantStores) -> None:
        """Namespaces, source ids and session ids: refused, or each its own history."""
        stores, _ = tenant_stores("history")
        ident = st.tuples(hostile_text(), hostile_text(), hostile_text())

        async def case(pair: tuple[tuple[str, str, str], tuple[str, str, str]], tally: Tally) -> None:
            first, second = pair
            assume(first != second)
            marker = _marker()
            stored: list[tuple[Any, str, str]] = []
            for index, (namespace, source_id, session_id) in enumerate(pair):
                text = f"{marker}-{index}"
                try:
                    provider = stores.history_provider(source_id=source_id, namespace=namespace)
                except ValueError:
                    tally.refused += 1
                    continue
                refused, _ = await _refused(provider.save_messages(session_id, [Message(role="user", contents=[text])]))
                if refused:
                    tally.refused += 1
                    continue
                tally.stored += 1
                stored.append((provider, session_id, text))
            for provider, session_id, text in stored:
                got = [m.text for m in await provider.get_messages(session_id)]
                assert got == [text], f"history {session_id!r} of {provider.source_id!r} read {got!r}"
                listed = [s async for s in provider.iter_sessions()]
                assert session_id in listed, f"{session_id!r} missing from its listing {listed!r}"
            for provider, session_id, _text in stored:
                await provider.delete_session(session_id)
                assert await provider.get_messages(session_id) == []

        _run_examples(
            self._clause("history ids"),
            _twins(ident.map(lambda t: "\x1f".join(t))).map(_split3),
            case,
            stores,
            self.examples,
        )

    def test_hostile_file_paths(self, tenant_stores: TenantStores) -> None:
        """File paths: refused, or each normalized path its own file, found where it belongs."""
        stores, options = tenant_stores("files")
        files: Any = stores.file_store(**options)
        case_sensitive = bool(getattr(files, "case_sensitive", True))

        def place(path: str) -> str:
            normalized = normalize_path(path)
            return normalized if case_sensitive else normalized.casefold()

        async def case(pair: tuple[str, str], tally: Tally) -> None:
            marker = _marker()
            written: dict[str, tuple[str, str]] = {}  # place -> (normalized path, content)
            for index, path in enumerate(pair):
                content = f"{marker}-{index}\n"
                try:
                    expected = place(path)
                except ValueError:
                    expected = None
                try:
                    await files.write(path, content)
                except ValueError:  # the path rules, or a limit of the store (a name too long)
                    tally.refused += 1
                    continue
                except (NotADirectoryError, FileExistsError, IsADirectoryError):
                    # A folder store cannot hold a file and a folder of one name ("a" and "a/b",
                    # also a folder left by an earlier example): a clear error, not a collision.
                    tally.refused += 1
                    continue
                assert expected is not None, f"{path!r} breaks the path rules but was written"
                tally.stored += 1
                written[expected] = (normalize_path(path), content)
            for normalized, content in written.values():
                got = await files.read(normalized)
                assert got == content, f"{normalized!r} read {got!r}, wrote {content!r}"
                assert await files.file_exists(normalized)
                parent, _, name = normalized.rpartition("/")
                children = [(e.name, e.type) for e in await files.list_children(parent)]
                assert (name, "file") in children, f"{normalized!r} not listed in {parent!r}: {children!r}"
            found = sorted(r.file_name for r in await files.search("", marker, recursive=True))
            assert found == sorted(n for n, _ in written.values()), f"search for {marker!r} found {found!r}"
            for normalized, _content in written.values():
                assert await files.delete(normalized)
                assert await files.read(normalized) is None

        _run_examples(self._clause("file paths"), _twins(hostile_text(max_size=1000)), case, stores, self.examples)

    def test_hostile_session_ids(self, tenant_stores: TenantStores) -> None:
        """Session store ids: refused, or each its own snapshot."""
        stores, options = tenant_stores("sessions")
        sessions: Any = stores.session_store(**options)

        async def case(pair: tuple[str, str], tally: Tally) -> None:
            assume(pair[0] != pair[1])
            marker = _marker()
            stored: list[tuple[str, str]] = []
            for index, session_id in enumerate(pair):
                session = AgentSession(session_id=f"{marker}-{index}")
                session.state["marker"] = f"{marker}-{index}"
                refused, _ = await _refused(sessions.set(session_id, session))
                if refused:
                    tally.refused += 1
                    continue
                tally.stored += 1
                stored.append((session_id, f"{marker}-{index}"))
            for session_id, expected in stored:
                got = await sessions.get(session_id)
                assert got is not None and got.state.get("marker") == expected, f"{session_id!r} read {got!r}"
            for session_id, _expected in stored:
                await sessions.delete(session_id)
                assert await sessions.get(session_id) is None

        _run_examples(self._clause("session ids"), _twins(hostile_text()), case, stores, self.examples)

    def test_hostile_checkpoint_ids(self, tenant_stores: TenantStores) -> None:
        """Checkpoint ids and workflow names: refused, or each checkpoint its own, listed under its workflow."""
        stores, _ = tenant_stores("checkpoints")
        storage = stores.checkpoint_storage(namespace="hostile")

        async def case(pair: tuple[tuple[str, str], tuple[str, str]], tally: Tally) -> None:
            (first_id, _), (second_id, _) = pair
            assume(first_id != second_id)
            marker = _marker()
            saved: list[WorkflowCheckpoint] = []
            for index, (checkpoint_id, workflow) in enumerate(pair):
                checkpoint = make_checkpoint(workflow, checkpoint_id=checkpoint_id, at=index, state={"m": marker})
                checkpoint.state["index"] = index
                refused, _ = await _refused(storage.save(checkpoint))
                if refused:
                    tally.refused += 1
                    continue
                tally.stored += 1
                saved.append(checkpoint)
            for checkpoint in saved:
                loaded = await storage.load(checkpoint.checkpoint_id)
                assert loaded.state == checkpoint.state and loaded.workflow_name == checkpoint.workflow_name
                ids = await storage.list_checkpoint_ids(workflow_name=checkpoint.workflow_name)
                same = [c.checkpoint_id for c in saved if c.workflow_name == checkpoint.workflow_name]
                assert sorted(ids) == sorted(same), f"workflow {checkpoint.workflow_name!r} lists {ids!r}"
            for checkpoint in saved:
                assert await storage.delete(checkpoint.checkpoint_id)
                with pytest.raises(WorkflowCheckpointException):
                    await storage.load(checkpoint.checkpoint_id)

        ids = _twins(hostile_text(max_size=2000))
        workflows = st.tuples(hostile_text(max_size=2000), hostile_text(max_size=2000))
        strategy = st.tuples(ids, workflows).map(lambda p: ((p[0][0], p[1][0]), (p[0][1], p[1][1])))
        _run_examples(self._clause("checkpoint ids"), strategy, case, stores, self.examples)

    def test_hostile_todo_ids(self, tenant_stores: TenantStores) -> None:
        """Todo session ids, source ids and namespaces: refused, or each its own state."""
        stores, _ = tenant_stores("todos")

        async def case(pair: tuple[tuple[str, str, str], tuple[str, str, str]], tally: Tally) -> None:
            assume(pair[0] != pair[1])
            marker = _marker()
            stored: list[tuple[Any, AgentSession, str, str]] = []
            for index, (namespace, session_id, source_id) in enumerate(pair):
                try:
                    store = stores.todo_store(namespace=namespace)
                except ValueError:
                    tally.refused += 1
                    continue
                session = AgentSession(session_id=session_id)
                title = f"{marker}-{index}"
                refused, _ = await _refused(
                    store.save_state(session, [TodoItem(id=1, title=title)], next_id=2, source_id=source_id)
                )
                if refused:
                    tally.refused += 1
                    continue
                tally.stored += 1
                stored.append((store, session, source_id, title))
            for store, session, source_id, title in stored:
                items, _next = await store.load_state(session, source_id=source_id)
                assert [i.title for i in items] == [title], f"{session.session_id!r} read {items!r}"
            for store, session, source_id, _title in stored:
                assert await store.delete_state(session, source_id=source_id)

        ident = st.tuples(hostile_text(), hostile_text(), hostile_text())
        _run_examples(
            self._clause("todo ids"),
            _twins(ident.map(lambda t: "\x1f".join(t))).map(_split3),
            case,
            stores,
            self.examples,
        )

    def test_operator_shapes_are_refused(self, tenant_stores: TenantStores) -> None:
        """Non-string ids shaped like query operators are a ``TypeError``/``ValueError``, never a lookup."""
        stores, options = tenant_stores("shapes")

        async def run() -> None:
            provider: Any = stores.history_provider(source_id="victim")
            await provider.save_messages("victim", [Message(role="user", contents=["secret"])])
            sessions: Any = stores.session_store(**options)
            await sessions.set("victim", AgentSession(session_id="victim"))
            files: Any = stores.file_store(**options)
            await files.write("victim.md", "secret")
            storage = stores.checkpoint_storage()
            await storage.save(make_checkpoint("victim", checkpoint_id="victim"))
            todos = stores.todo_store()

            def calls(shape: Any) -> list[Callable[[], Awaitable[Any]]]:
                return [
                    lambda: provider.get_messages(shape),
                    lambda: provider.delete_session(shape),
                    lambda: stores.history_provider(source_id=shape).get_messages("victim"),
                    lambda: stores.history_provider(source_id="victim", namespace=shape).get_messages("victim"),
                    lambda: sessions.get(shape),
                    lambda: sessions.delete(shape),
                    lambda: files.read(shape),
                    lambda: files.delete(shape),
                    lambda: storage.load(shape),
                    lambda: storage.delete(shape),
                    lambda: storage.list_checkpoint_ids(workflow_name=shape),
                    lambda: todos.load_state(AgentSession(session_id=shape), source_id="victim"),
                ]

            for shape in OPERATOR_SHAPES:
                for index, call in enumerate(calls(shape)):
                    try:
                        await call()
                    except (TypeError, ValueError):
                        continue
                    pytest.fail(f"call {index} took {shape!r} as an id")
            assert [m.text for m in await provider.get_messages("victim")] == ["secret"]
            assert await sessions.get("victim") is not None
            assert await files.read("victim.md") == "secret"
            assert (await storage.load("victim")).workflow_name == "victim"
            record_figures(
                self._clause("operator shapes"), cases=len(OPERATOR_SHAPES) * 12, refused=len(OPERATOR_SHAPES) * 12
            )

        asyncio.run(_with_close(stores, run()))

    def test_control_characters_in_paths_are_refused(self, tenant_stores: TenantStores) -> None:
        """A path holding NUL or another control character is a ``ValueError`` on every call, on every backend."""
        stores, options = tenant_stores("control")

        async def run() -> None:
            files: Any = stores.file_store(**options)
            bad_paths = ("a\x00b.md", "a\x00", "dir\x00/x.md", "a\nb.md", "a\rb", "a\tb", "\x1b[2Jx", "a\x7f", "\ud800")

            def calls(bad: str) -> list[Callable[[], Awaitable[Any]]]:
                return [
                    lambda: files.write(bad, "x"),
                    lambda: files.write(bad, "x", overwrite=False),
                    lambda: files.read(bad),
                    lambda: files.delete(bad),
                    lambda: files.file_exists(bad),
                    lambda: files.create_directory(bad),
                    lambda: files.list_children(bad),
                    lambda: files.search(bad, "x"),
                ]

            for bad in bad_paths:
                for call in calls(bad):
                    with pytest.raises(ValueError, match="Invalid path"):
                        await call()
            assert await files.list_children("") == []
            record_figures(self._clause("control characters"), cases=9 * 8, refused=9 * 8)

        asyncio.run(_with_close(stores, run()))

    # -- tenant isolation ------------------------------------------------------------------

    def test_tenants_never_cross(self, tenant_stores: TenantStores) -> None:
        """Two tenants with the same ids: no read, list, search, overwrite or delete crosses them.

        History, checkpoints and todos are separated by ``namespace`` on one backend; files and
        sessions by the tenant's own location (``tenant_stores``).
        """
        one, one_options = tenant_stores("tenant-one")
        two, two_options = tenant_stores("tenant-two")

        async def run() -> None:
            same = "shared-id"
            # history, by namespace on one backend
            h1: Any = one.history_provider(source_id=same, namespace="tenant-one")
            h2: Any = one.history_provider(source_id=same, namespace="tenant-two")
            await h1.save_messages(same, [Message(role="user", contents=["one"])])
            assert await h2.get_messages(same) == []
            assert [s async for s in h2.iter_sessions()] == []
            assert await h2.delete_session(same) is False
            await h2.save_messages(same, [Message(role="user", contents=["two"])])
            assert [m.text for m in await h1.get_messages(same)] == ["one"]
            assert [m.text for m in await h2.get_messages(same)] == ["two"]
            assert await h2.delete_session(same)
            assert [m.text for m in await h1.get_messages(same)] == ["one"]
            # files, by each tenant's location
            f1: Any = one.file_store(**one_options)
            f2: Any = two.file_store(**two_options)
            await f1.write("notes/shared.md", "one secret")
            assert await f2.read("notes/shared.md") is None
            assert not await f2.file_exists("notes/shared.md")
            assert await f2.list_children("") == []
            assert await f2.search("", "secret", recursive=True) == []
            assert await f2.delete("notes/shared.md") is False
            await f2.write("notes/shared.md", "two", overwrite=False)
            assert await f1.read("notes/shared.md") == "one secret"
            assert await f2.delete("notes/shared.md")
            assert await f1.read("notes/shared.md") == "one secret"
            # sessions, by each tenant's location
            s1: Any = one.session_store(**one_options)
            s2: Any = two.session_store(**two_options)
            first = AgentSession(session_id=same)
            first.state["tenant"] = "one"
            await s1.set(same, first)
            assert await s2.get(same) is None
            await s2.delete(same)
            assert (await s1.get(same)).state["tenant"] == "one"
            second = AgentSession(session_id=same)
            second.state["tenant"] = "two"
            await s2.set(same, second)
            assert (await s1.get(same)).state["tenant"] == "one"
            # checkpoints, by namespace
            c1 = one.checkpoint_storage(namespace="tenant-one")
            c2 = one.checkpoint_storage(namespace="tenant-two")
            await c1.save(make_checkpoint(same, checkpoint_id=same, state={"tenant": "one"}))
            with pytest.raises(WorkflowCheckpointException):
                await c2.load(same)
            assert await c2.list_checkpoint_ids(workflow_name=same) == []
            assert await c2.get_latest(workflow_name=same) is None
            assert await c2.delete(same) is False
            await c2.save(make_checkpoint(same, checkpoint_id=same, state={"tenant": "two"}))
            assert (await c1.load(same)).state == {"tenant": "one"}
            assert await c2.delete(same)
            assert (await c1.load(same)).state == {"tenant": "one"}
            # todos, by namespace
            t1 = one.todo_store(namespace="tenant-one")
            t2 = one.todo_store(namespace="tenant-two")
            session = AgentSession(session_id=same)
            await t1.save_state(session, [TodoItem(id=1, title="one")], next_id=2, source_id=same)
            assert await t2.load_state(session, source_id=same) == ([], 1)
            assert await t2.delete_state(session, source_id=same) is False
            await t2.save_state(session, [TodoItem(id=1, title="two")], next_id=2, source_id=same)
            items, _ = await t1.load_state(session, source_id=same)
            assert [i.title for i in items] == ["one"]
            record_figures(self._clause("tenant isolation"), cases=1, stored=16)

        async def both() -> None:
            try:
                await run()
            finally:
                await one.aclose()
                await two.aclose()

        asyncio.run(both())


def _split3(pair: tuple[str, str]) -> tuple[tuple[str, str, str], tuple[str, str, str]]:
    """Split two unit-separator-joined triples back (twins are made on the joined text)."""

    def split(joined: str) -> tuple[str, str, str]:
        parts = joined.split("\x1f")
        while len(parts) < 3:
            parts.append("")
        return parts[0], parts[1], "\x1f".join(parts[2:])

    return split(pair[0]), split(pair[1])


async def _with_close(stores: Stores, work: Awaitable[None]) -> None:
    try:
        await work
    finally:
        await stores.aclose()
