"""What every conformance class shares: capability gating, the divergence registry, store lifecycle, time limits."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import inspect
import linecache
import random
import re
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator, Mapping, Sequence
from types import CodeType, FrameType
from typing import Any, ClassVar, NoReturn, TypeVar, cast

import pytest
import pytest_asyncio

from agent_stores.core import Stores, open_stores
from agent_stores.core.lifecycle import OwnedResource

from .clock import FakeClock

__all__ = [
    "HARD_STOP_GRACE_S",
    "ClauseTimeLimitError",
    "ConformanceBase",
    "brief",
    "collect_pages",
    "incompressible",
    "misbehaviour",
    "race_start",
    "raises",
    "relies_on",
    "requires",
    "unique_id",
]

F = TypeVar("F", bound=Callable[..., Any])

_REQUIRES_ATTR = "_agent_stores_requires"
_LIMITED_ATTR = "_agent_stores_time_limited"
_RELIES_ATTR = "_agent_stores_relies_on"
_CLOCK_ATTR = "_agent_stores_clause_clock"


def requires(*capabilities: str, absent: tuple[str, ...] = (), fake_clock: bool = False) -> Callable[[F], F]:
    """Run the decorated clause only when every named capability is declared (and every ``absent`` one is not).

    With ``fake_clock``, also only on a class whose factory builds its stores on the clause's
    ``clock`` fixture (``fake_clock = True`` on the class).
    """

    def mark(clause: F) -> F:
        setattr(clause, _REQUIRES_ATTR, (capabilities, absent, fake_clock))
        return clause

    return mark


@contextlib.contextmanager
def _first_failure_suffices(clause: Callable[..., Any]) -> Generator[None]:
    """Run a hypothesis clause without shrinking: a declared divergence needs one failing example, not the smallest.

    Shrinking a failure costs hundreds of examples, each a round trip to the store: on a live
    server, minutes spent on every run to re-find a divergence that is already written down.
    Hypothesis reads a test's settings from the function when it runs; they are put back after
    the clause (the function is shared by every store's class). A hypothesis without that
    attribute leaves the clause as it is.
    """
    function: Any = getattr(clause, "__func__", clause)
    current = getattr(function, "_hypothesis_internal_use_settings", None)
    if not getattr(function, "is_hypothesis_test", False) or current is None:
        yield
        return
    from hypothesis import Phase, settings

    function._hypothesis_internal_use_settings = settings(
        current, phases=[p for p in current.phases if p is not Phase.shrink], report_multiple_bugs=False
    )
    try:
        yield
    finally:
        function._hypothesis_internal_use_settings = current


def relies_on(*behaviours: str) -> Callable[[F], F]:
    """Name what the decorated clause relies on besides the behaviour it checks.

    Each entry is a sentence naming a behaviour another clause checks on its own, with that
    clause's name. When one broken behaviour fails several clauses, the dependent ones then say
    that their failure may be a consequence of it, instead of only blaming their own subject.
    """

    def mark(clause: F) -> F:
        setattr(clause, _RELIES_ATTR, behaviours)
        return clause

    return mark


@contextlib.contextmanager
def raises(expected: type[BaseException], what: str) -> Generator[None]:
    """Expect the block to raise ``expected``; otherwise fail saying that ``what`` did not.

    Like ``pytest.raises``, with the sentence a failure needs: ``what`` names the call that
    should have been refused ("an append at a stale version"). Another exception propagates.
    """
    try:
        yield
    except expected:
        return
    pytest.fail(f"{what} did not raise {expected.__name__}")


def brief(value: object, prefix: str = "", *, width: int = 48) -> str:
    """``repr(value)`` for a failure message: keys short enough to read.

    Strings (also inside lists, tuples and named tuples such as a ``Listing``) that start with the
    clause's ``prefix`` show it as ``<prefix>``, and a string longer than ``width`` characters
    shows its two ends and its length.
    """
    if isinstance(value, str):
        text = value
        if prefix and text.startswith(prefix):
            text = text[len(prefix) :]
            head = "<prefix>"
        else:
            head = ""
        if len(text) > width:
            return f"{head}{text[: width // 2]!r}…{text[-width // 4 :]!r} ({len(value)} chars)"
        return f"{head}{text!r}" if head else repr(text)
    if isinstance(value, list | tuple):
        items = cast(Sequence[object], value)
        fields: object = getattr(items, "_fields", None)
        if isinstance(fields, tuple):  # a named tuple: Listing, LogInfo, LogTail
            names = cast(tuple[str, ...], fields)
            shown = ", ".join(f"{n}={brief(v, prefix, width=width)}" for n, v in zip(names, items, strict=True))
            return f"{type(items).__name__}({shown})"
        shown = ", ".join(brief(v, prefix, width=width) for v in items)
        if isinstance(items, list):
            return f"[{shown}]"
        return f"({shown},)" if len(items) == 1 else f"({shown})"
    return repr(value)


def unique_id(label: str = "conformance") -> str:
    """Return a fresh lowercase id, so clauses never touch data they did not create."""
    return f"{label}-{uuid.uuid4().hex[:12]}"


#: The characters :func:`incompressible` draws from: safe in keys, paths and URLs everywhere.
_NAME_ALPHABET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"


def incompressible(length: int, seed: str = "") -> str:
    """Return ``length`` ASCII characters no dictionary compression shrinks much (seeded, so reproducible).

    Long-name clauses use these instead of ``"x" * n``: a database that compresses long values
    before indexing them (PostgreSQL's TOAST, InnoDB's compressed rows) stores a repeated
    character in a few bytes, and would pass with names it cannot index at their real size.
    """
    return "".join(random.Random(f"agent-stores:{seed}:{length}").choices(_NAME_ALPHABET, k=length))


S = TypeVar("S", bound=OwnedResource)


def store_at(url: str, backend_options: Mapping[str, Any] | None, build: Callable[[Stores], S]) -> S:
    """Return ``build(stores)`` on its own ``open_stores(url, **backend_options)``, which it closes when closed.

    Each call has its own connection, as a separate process would.
    """
    stores = open_stores(url, **(backend_options or {}))
    store = build(stores)
    store._adopt(stores, owned=True)  # pyright: ignore[reportPrivateUsage]
    return store


async def maybe_await(value: Any) -> Any:
    """Await ``value`` when it is awaitable; factories may be sync or async."""
    if inspect.isawaitable(value):
        return await value
    return value


async def race_start(barrier: asyncio.Barrier, warm_up: Awaitable[object]) -> None:
    """Await ``warm_up``, then ``barrier``: the start line of a race's racer.

    A warm-up that raises breaks the barrier, so the other racers stop waiting with
    ``BrokenBarrierError`` and the race reports the warm-up's error instead of running out its
    time limit with racers waiting for one that will never arrive.
    """
    try:
        await warm_up
    except BaseException:
        await barrier.abort()
        raise
    await barrier.wait()


def _clipped(value: object) -> str:
    text = str(value) if isinstance(value, BaseException) else repr(value)
    return text if len(text) <= 200 else f"{text[:197]}..."


async def misbehaviour(read: Awaitable[object], error: type[BaseException], name: str) -> str | None:
    """Await ``read``, which must raise ``error`` naming ``name``; return ``None`` if it did, else what it did instead.

    For clauses that try many shapes and report every one that went wrong at once.
    """
    try:
        result = await read
    except error as err:
        return None if name in str(err) else f"raised {error.__name__} not naming {name!r}: {_clipped(err)}"
    except Exception as err:
        return f"raised {type(err).__name__}: {_clipped(err)}"
    return f"returned {_clipped(result)}"


T = TypeVar("T")


async def collect_pages(
    what: str,
    fetch: Callable[[str | None], Awaitable[Sequence[T]]],
    *,
    name: Callable[[T], str],
    page_size: int,
    most: int,
    stop_on_short_page: bool = True,
) -> list[T]:
    """Walk a paged listing to its end, at most ``most`` pages; fail instead of looping forever.

    ``fetch(after)`` returns one page; the next page starts after ``name`` of the page's last
    entry. The walk ends at a page shorter than ``page_size`` (or at an empty page when
    ``stop_on_short_page`` is false). It fails the clause as soon as a page is longer than
    ``page_size``, repeats an entry already returned, or the walk needs more than ``most`` pages.
    """
    collected: list[T] = []
    seen: set[str] = set()
    after: str | None = None
    for _ in range(most):
        page = list(await fetch(after))
        if len(page) > page_size:
            pytest.fail(f"{what}: a page of limit={page_size} held {len(page)} entries", pytrace=False)
        for entry in page:
            if name(entry) in seen:
                pytest.fail(
                    f"{what}: the page after {after!r} returned {name(entry)!r} again; `after` must be "
                    f"exclusive, and each entry listed exactly once",
                    pytrace=False,
                )
            seen.add(name(entry))
        collected.extend(page)
        if not page or (stop_on_short_page and len(page) < page_size):
            return collected
        after = name(page[-1])
    pytest.fail(
        f"{what}: still returning full pages after {most} pages, more than the entries that exist "
        f"(listed so far: {[name(e) for e in collected][:20]!r})",
        pytrace=False,
    )


# -- what a failing clause says ------------------------------------------------------------------
#
# An assertion says what it saw; the clause's docstring says what the store must do and what a
# failure means. A failing clause carries both, and what else the clause relies on (``relies_on``),
# whatever failed in it: an assertion, a ``pytest.raises`` that did not raise, the store's own error.

_NOTE_ATTR = "_agent_stores_explained"


def _paragraphs(doc: str) -> list[str]:
    return [" ".join(line.strip() for line in block.splitlines()) for block in inspect.cleandoc(doc).split("\n\n")]


def clause_explanation(clause: Callable[..., Any], suite: type | None = None) -> str:
    """What a failure of ``clause`` means: its contract, its docstring's "Failure means", what it relies on."""
    doc = inspect.getdoc(clause) or ""
    paragraphs = [p for p in _paragraphs(doc) if p] if doc else []
    lines = [f"{clause.__name__}: {paragraphs[0]}" if paragraphs else clause.__name__]
    for paragraph in paragraphs[1:]:
        found = re.search(r"\b(?:Failure means|Failing means|Failure:)", paragraph)
        if found:
            lines.append(paragraph[found.start() :])
    relied = getattr(clause, _RELIES_ATTR, ())
    if relied:
        lines.append(
            "This clause also relies on the following; when the clause named there fails too, fix that "
            "first, as this failure may be its consequence:"
        )
        lines += [f"  - {behaviour}" for behaviour in relied]
    driver_suite: object = getattr(suite, "driver_suite", None)
    if driver_suite:
        lines.append(
            f"For a store built on the core's adapter over a driver of yours: run {driver_suite} on the driver "
            "first; a failing clause there is the likelier cause of this one."
        )
    return "\n".join(lines)


def _explain(err: BaseException, clause: Callable[..., Any], suite: type) -> None:
    """Attach ``clause``'s explanation to ``err`` once (a failing property example is seen again when shrunk)."""
    if getattr(err, _NOTE_ATTR, False):
        return
    text = clause_explanation(clause, suite)
    if isinstance(err, pytest.fail.Exception) and not err.pytrace:
        err.msg = f"{err.msg}\n\n{text}"  # shown as it is, without the notes of a traceback
        err.args = (err.msg, *err.args[1:])
    else:
        err.add_note(f"\n{text}")
    with contextlib.suppress(AttributeError):  # an exception type with __slots__ is explained again, harmlessly
        setattr(err, _NOTE_ATTR, True)


# -- time limits ------------------------------------------------------------------------------
#
# A clause that awaits past its limit is cancelled by ``asyncio.timeout`` and fails naming what it
# was waiting for. A clause spinning in its own code never gives the event loop a chance to
# cancel it: pytest-timeout (the plugin marks each clause with ``time_limit`` plus a grace, see
# ``plugin.py``) interrupts it, and the clause's failure then shows where it was running.


class ClauseTimeLimitError(BaseException):
    """An example of a property clause ran past the clause's time limit.

    A ``BaseException``, so that hypothesis stops at once instead of shrinking (every later
    example would fail the same way); other clauses fail through ``pytest.fail``.
    """


#: Seconds pytest-timeout gives a clause past its ``time_limit`` before it interrupts it.
HARD_STOP_GRACE_S = 2.0
_CHAIN_FRAMES = 12


def _frame_line(code: CodeType, lineno: int) -> str:
    source = linecache.getline(code.co_filename, lineno).strip()
    where = f"{code.co_filename.rsplit('/', 1)[-1]}:{lineno} in {code.co_name}"
    return f"{where}: {source}" if source else where


def _clip(lines: list[str]) -> list[str]:
    if len(lines) <= _CHAIN_FRAMES:
        return lines
    return [*lines[:2], f"... {len(lines) - _CHAIN_FRAMES} frames ...", *lines[-(_CHAIN_FRAMES - 2) :]]


def _await_chain(awaitable: object) -> list[str]:
    """Describe where a coroutine is suspended: each frame of its ``await`` chain, outermost first."""
    lines: list[str] = []
    current: object = awaitable
    while current is not None and len(lines) < 64:
        frame = getattr(current, "cr_frame", None) or getattr(current, "gi_frame", None)
        if not isinstance(frame, FrameType):
            break
        lines.append(_frame_line(frame.f_code, frame.f_lineno))
        current = getattr(current, "cr_await", None) or getattr(current, "gi_yieldfrom", None)
    return _clip(lines)


def _describe_waits(clause: Coroutine[Any, Any, Any], main: asyncio.Task[Any]) -> str:
    """Describe what the clause, and every other task of its event loop, is waiting for."""
    parts = ["\n  ".join(["the clause:", *_await_chain(clause)])]
    others: dict[tuple[str, ...], int] = {}
    for task in asyncio.all_tasks(main.get_loop()):
        if task is not main and not task.done():
            chain = tuple(_await_chain(task.get_coro()))
            others[chain] = others.get(chain, 0) + 1
    for chain, count in others.items():
        parts.append("\n  ".join([f"{count} other task{'s' if count > 1 else ''} of the clause:", *chain]))
    return "\n".join(parts)


def _describe_interruption(error: BaseException) -> str:
    """Describe where a clause that never awaited was running when pytest-timeout interrupted it."""
    lines: list[str] = []
    tb = error.__traceback__.tb_next if error.__traceback__ else None  # without ``_ClauseClock.run``
    while tb is not None:
        if not tb.tb_frame.f_locals.get("__tracebackhide__"):  # pytest's convention: the timeout's own frames
            lines.append(_frame_line(tb.tb_frame.f_code, tb.tb_lineno))
        tb = tb.tb_next
    return "\n  ".join(
        [
            "its own code, without ever awaiting (so it could not be cancelled):",
            *_clip(lines),
            f"(stopped by pytest-timeout: {error})",
        ]
    )


class _ClauseClock:
    """The time limit of one clause (across every example of a property clause)."""

    def __init__(self, owner: str, clause: str, limit: float) -> None:
        self.owner = owner
        self.clause = clause
        self.limit = limit
        self.deadline = time.monotonic() + limit

    def _fail(self, waiting: str, *, example: bool) -> NoReturn:
        message = (
            f"{self.clause} did not finish within its time limit of {self.limit:g} s "
            f"({self.owner}.time_limit; raise it on the class for a slow store). It was waiting for:\n{waiting}"
        )
        if example:
            raise ClauseTimeLimitError(message)
        pytest.fail(message, pytrace=False)

    async def run(self, clause: Coroutine[Any, Any, Any], *, example: bool) -> Any:
        """Await ``clause`` until the deadline; past it, fail naming the clause and what it awaited."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            clause.close()
            self._fail("(the limit was used up by earlier examples of this clause)", example=example)
        task = asyncio.current_task()
        assert task is not None, "a clause runs in a task"
        loop = asyncio.get_running_loop()
        when = loop.time() + remaining
        waiting: list[str] = []
        # Due with the timeout's own callback, so it runs before the cancellation unwinds the clause.
        describe = loop.call_at(when, lambda: waiting.append(_describe_waits(clause, task)))
        timeout = asyncio.timeout_at(when)
        note = ""
        try:
            async with timeout:
                result = await clause
        except BaseException as err:
            if not timeout.expired():
                if waiting or time.monotonic() < self.deadline or not isinstance(err, pytest.fail.Exception):
                    raise
                waiting.append(_describe_interruption(err))  # spinning past the limit: pytest-timeout stopped it
            elif isinstance(err, asyncio.CancelledError):
                raise  # cancelled from elsewhere too: not ours to report
            elif not isinstance(err, TimeoutError):  # the store turned the cancellation into an error
                note = f"\n(when cancelled, the clause raised {type(err).__name__}: {err})"
        else:
            if not timeout.expired():
                return result
            note = "\n(the clause swallowed the cancellation and finished late)"
        finally:
            describe.cancel()
        # Outside the except blocks, so the report is not chained to the cancellation.
        self._fail((waiting[0] if waiting else "(not recorded)") + note, example=example)


def _with_time_limit(
    clause: Callable[..., Coroutine[Any, Any, Any]], *, example: bool = False, outer: Callable[..., Any] | None = None
) -> Callable[..., Coroutine[Any, Any, Any]]:
    """Wrap a clause (or, with ``example``, one example of a property clause) to run under ``time_limit``.

    A failure carries the clause's explanation (:func:`clause_explanation`), read from ``outer``
    (the property clause as decorated) when given.
    """

    @functools.wraps(clause)
    async def limited(self: ConformanceBase, *args: Any, **kwargs: Any) -> Any:
        clock = self.__dict__.get(_CLOCK_ATTR)
        if clock is None:
            owner = type(self)
            clock = _ClauseClock(owner.__name__, clause.__name__, float(owner.time_limit))
            self.__dict__[_CLOCK_ATTR] = clock
        try:
            return await clock.run(clause(self, *args, **kwargs), example=example)
        except (Exception, pytest.fail.Exception) as err:
            if not isinstance(err, pytest.skip.Exception | pytest.xfail.Exception):
                _explain(err, outer or clause, type(self))
            raise

    setattr(limited, _LIMITED_ATTR, True)
    return limited


def _limit_clauses(cls: type) -> None:
    """Put every clause a suite class defines under the time limit (property clauses example by example)."""
    for name, value in list(vars(cls).items()):
        if not name.startswith("test_") or getattr(value, _LIMITED_ATTR, False):
            continue
        if inspect.iscoroutinefunction(value):
            setattr(cls, name, _with_time_limit(value))
            continue
        hypothesis = getattr(value, "hypothesis", None)
        inner = getattr(hypothesis, "inner_test", None)
        if inner is not None and inspect.iscoroutinefunction(inner) and not getattr(inner, _LIMITED_ATTR, False):
            hypothesis.inner_test = _with_time_limit(inner, example=True, outer=value)  # pyright: ignore[reportOptionalMemberAccess]


@pytest.mark.asyncio
class ConformanceBase:
    """Base of the conformance classes.

    Subclasses set ``capabilities`` (a frozen dataclass) and may set ``divergences``:
    ``{"test_clause_name": "why this store differs"}``. A listed clause runs as a strict
    xfail: it must fail, and starts failing the run the day the store is fixed.

    Every clause runs under ``time_limit`` seconds (60 by default; set it on your subclass for a
    slow store), with no pytest configuration: a clause still awaiting then is cancelled and
    fails, naming itself and what it was waiting for, instead of hanging the run. A clause
    spinning in its own code (so it cannot be cancelled) is interrupted by pytest-timeout
    ``HARD_STOP_GRACE_S`` later, unless you set a timeout of your own (``--timeout``, the
    ``timeout`` ini option or a ``timeout`` marker). Every loop of the suite over a store's
    answers is bounded too.

    Expiry is checked on a fake clock, never by waiting: a factory that passes the clause's
    ``clock`` fixture (a :class:`FakeClock`) as its stores' ``clock=`` sets ``fake_clock = True``,
    and the ttl clauses move that clock. Without it they skip (a store whose server expires
    data on its own clock, such as Redis, proves its expiry in its own tests).
    """

    capabilities: ClassVar[Any]
    divergences: ClassVar[dict[str, str]] = {}
    time_limit: ClassVar[float] = 60.0
    #: True when the factory fixture builds its stores on the clause's ``clock`` fixture (their
    #: ``clock=``): the ttl clauses then move that clock instead of waiting, and run only then.
    fake_clock: ClassVar[bool] = False

    #: Name of the factory fixture the subclass provides (set by each conformance class).
    factory_fixture: ClassVar[str]
    #: The driver suite whose clauses the core's adapter for this kind relies on (``LogDriverConformance``
    #: for history): a failing clause names it, as a broken driver fails many store clauses at once.
    driver_suite: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith(f"{__package__}."):
            _limit_clauses(cls)

    @pytest.fixture(autouse=True)
    def _agent_stores_clause_rules(self, request: pytest.FixtureRequest) -> Generator[None]:
        name = request.function.__name__
        limit = self.time_limit
        if isinstance(limit, bool) or not isinstance(limit, int | float) or not limit > 0:  # pyright: ignore[reportUnnecessaryIsInstance]
            pytest.fail(f"time_limit must be a positive number of seconds, got {limit!r}", pytrace=False)
        unknown = sorted(set(self.divergences) - {n for n in dir(type(self)) if n.startswith("test_")})
        if unknown:
            pytest.fail(f"divergences name clauses that do not exist: {unknown}", pytrace=False)
        for clause, reason in self.divergences.items():
            if not isinstance(reason, str) or not reason.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
                pytest.fail(f"divergence {clause!r} needs a written reason", pytrace=False)
        needed, absent, on_fake_clock = getattr(request.function, _REQUIRES_ATTR, ((), (), False))
        for capability in (*needed, *absent):
            if not hasattr(self.capabilities, capability):
                pytest.fail(f"{type(self.capabilities).__name__} has no capability {capability!r}", pytrace=False)
        missing = [c for c in needed if not getattr(self.capabilities, c)]
        if missing:
            pytest.skip(f"capability not declared: {', '.join(missing)}")
        present = [c for c in absent if getattr(self.capabilities, c)]
        if present:
            pytest.skip(f"clause is for stores without: {', '.join(present)}")
        if on_fake_clock and not self.fake_clock:
            pytest.skip(
                "clause runs on the suite's fake clock: build the factory's stores with the `clock` fixture "
                "(their clock=) and set fake_clock = True on the class"
            )
        if name not in self.divergences:
            yield
            return
        request.applymarker(pytest.mark.xfail(strict=True, reason=f"declared divergence: {self.divergences[name]}"))
        with _first_failure_suffices(request.function):
            yield

    @pytest.fixture
    def clock(self) -> FakeClock:
        """The clause's fake clock (starting now), for the factory to pass as its stores' ``clock=``."""
        return FakeClock()

    @pytest_asyncio.fixture
    async def open_store(self, request: pytest.FixtureRequest) -> AsyncIterator[Callable[..., Awaitable[Any]]]:
        """Open store instances through the subclass's factory; close every one at the end of the clause."""
        factory = request.getfixturevalue(self.factory_fixture)
        opened: list[Any] = []

        async def open_one(**options: Any) -> Any:
            store = await maybe_await(factory(**options))
            opened.append(store)
            return store

        yield open_one
        for store in reversed(opened):
            close = getattr(store, "aclose", None)
            if close is None:
                continue
            try:
                async with asyncio.timeout(self.time_limit):
                    await maybe_await(close())
            except TimeoutError:
                pytest.fail(
                    f"{type(store).__name__}.aclose() did not finish within {self.time_limit:g} s", pytrace=False
                )
