"""What every conformance class shares: capability gating, the divergence registry, store lifecycle, time limits."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import inspect
import linecache
import random
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from types import CodeType, FrameType
from typing import Any, ClassVar, NoReturn, TypeVar

import pytest
import pytest_asyncio

__all__ = [
    "ClauseOverrunError",
    "ClauseTimeLimitError",
    "ConformanceBase",
    "collect_pages",
    "incompressible",
    "requires",
    "unique_id",
]

F = TypeVar("F", bound=Callable[..., Any])

_REQUIRES_ATTR = "_agent_stores_requires"
_LIMITED_ATTR = "_agent_stores_time_limited"
_CLOCK_ATTR = "_agent_stores_clause_clock"


def requires(*capabilities: str, absent: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Run the decorated clause only when every named capability is declared (and every ``absent`` one is not)."""

    def mark(clause: F) -> F:
        setattr(clause, _REQUIRES_ATTR, (capabilities, absent))
        return clause

    return mark


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


async def maybe_await(value: Any) -> Any:
    """Await ``value`` when it is awaitable; factories may be sync or async."""
    if inspect.isawaitable(value):
        return await value
    return value


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


# -- time limits ------------------------------------------------------------------------------


class ClauseTimeLimitError(BaseException):
    """An example of a property clause ran past the clause's time limit.

    A ``BaseException``, so that hypothesis stops at once instead of shrinking (every later
    example would fail the same way); other clauses fail through ``pytest.fail``.
    """


class ClauseOverrunError(BaseException):
    """Raised inside a clause that kept running its own code past its time limit (a loop that never awaits).

    A ``BaseException``, like ``CancelledError``, so that ``except Exception`` in a store does not swallow it.
    """

    detail: ClassVar[str] = ""

    def __str__(self) -> str:
        return self.detail


# A clause that ignores the cancellation at its limit (a store spinning without awaiting, or one
# swallowing ``CancelledError``) gets this much longer before the exception is raised in its thread.
_OVERRUN_GRACE_S = 2.0
_CHAIN_FRAMES = 12

# Frames of the time-limit machinery itself, left out of descriptions.
_WRAPPER_CODES: set[CodeType] = set()


def _frame_line(frame: FrameType) -> str:
    code = frame.f_code
    source = linecache.getline(code.co_filename, frame.f_lineno).strip()
    where = f"{code.co_filename.rsplit('/', 1)[-1]}:{frame.f_lineno} in {code.co_name}"
    return f"{where}: {source}" if source else where


def _await_chain(awaitable: object) -> list[str]:
    """Describe where a coroutine is suspended: each frame of its ``await`` chain, outermost first."""
    lines: list[str] = []
    current: object = awaitable
    for _ in range(64):
        frame = (
            getattr(current, "cr_frame", None)
            or getattr(current, "gi_frame", None)
            or getattr(current, "ag_frame", None)
        )
        if not isinstance(frame, FrameType):
            break
        if frame.f_code not in _WRAPPER_CODES:
            lines.append(_frame_line(frame))
        current = (
            getattr(current, "cr_await", None)
            or getattr(current, "gi_yieldfrom", None)
            or getattr(current, "ag_await", None)
        )
        if current is None:
            break
    return _clip(lines)


def _stack(frame: FrameType | None) -> list[str]:
    """Describe a running thread's stack from the clause down to the running line."""
    frames: list[FrameType] = []
    while frame is not None and frame.f_code not in _WRAPPER_CODES:
        frames.append(frame)
        frame = frame.f_back
    return _clip([_frame_line(f) for f in reversed(frames)])


def _clip(lines: list[str]) -> list[str]:
    if len(lines) <= _CHAIN_FRAMES:
        return lines
    return [*lines[:2], f"... {len(lines) - _CHAIN_FRAMES} frames ...", *lines[-(_CHAIN_FRAMES - 2) :]]


def _describe_tasks(main: asyncio.Task[Any]) -> str:
    """Describe what the clause's task, and every other task of its event loop, is waiting for."""
    parts = ["\n  ".join(["the clause:", *_await_chain(main.get_coro())])]
    others: dict[tuple[str, ...], int] = {}
    for task in asyncio.all_tasks(main.get_loop()):
        if task is not main and not task.done():
            chain = tuple(_await_chain(task.get_coro()))
            others[chain] = others.get(chain, 0) + 1
    for chain, count in others.items():
        parts.append("\n  ".join([f"{count} other task{'s' if count > 1 else ''} of the clause:", *chain]))
    return "\n".join(parts)


def _raise_in_thread(thread_id: int, error: type[BaseException]) -> bool:
    """Raise ``error`` in another thread at its next bytecode (CPython); return whether it was scheduled."""
    api: Any = getattr(ctypes, "pythonapi", None)
    setter = getattr(api, "PyThreadState_SetAsyncExc", None)
    if setter is None:  # pragma: no cover - not CPython
        return False
    return bool(setter(ctypes.c_ulong(thread_id), ctypes.py_object(error)) == 1)


class _ClauseClock:
    """The time limit of one clause (across every example of a property clause)."""

    def __init__(self, owner: str, clause: str, limit: float) -> None:
        self.owner = owner
        self.clause = clause
        self.limit = limit
        self.deadline = time.monotonic() + limit

    def _message(self, waiting: str) -> str:
        return (
            f"{self.clause} did not finish within its time limit of {self.limit:g} s "
            f"({self.owner}.time_limit; raise it on the class for a slow store). It was waiting for:\n{waiting}"
        )

    def _fail(self, waiting: str, *, example: bool) -> NoReturn:
        if example:
            raise ClauseTimeLimitError(self._message(waiting))
        pytest.fail(self._message(waiting), pytrace=False)

    async def run(self, clause: Coroutine[Any, Any, Any], *, example: bool) -> Any:
        """Await ``clause`` until the deadline; past it, fail naming the clause and what it awaited."""
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            clause.close()
            self._fail("(the limit was used up by earlier examples of this clause)", example=example)
        task = asyncio.current_task()
        assert task is not None, "a clause runs in a task"
        loop = asyncio.get_running_loop()
        waiting: list[str] = []

        def expire() -> None:
            waiting.append(_describe_tasks(task))
            task.cancel(msg=f"agent-stores time limit of {self.clause}")

        handle = loop.call_later(remaining, expire)
        # A clause spinning in its own code never lets the loop run ``expire``: the watchdog
        # thread raises in it shortly after the limit instead.
        watchdog = _Watchdog(threading.get_ident(), loop, remaining + _OVERRUN_GRACE_S)
        overrun = ""
        try:
            return await clause
        except ClauseOverrunError as err:
            overrun = str(err)
        except BaseException as err:
            if not waiting:
                raise
            if task.uncancel() > 0 and isinstance(err, asyncio.CancelledError):
                raise  # cancelled from elsewhere too: not ours to report
            if not isinstance(err, asyncio.CancelledError):  # the store turned the cancellation into an error
                waiting[0] += f"\n(when cancelled, the clause raised {type(err).__name__}: {err})"
        finally:
            watchdog.disarm()
            handle.cancel()
        # Outside the except blocks, so the report is not chained to the cancellation.
        self._fail(overrun or waiting[0], example=example)


_WRAPPER_CODES.add(_ClauseClock.run.__code__)


class _Watchdog:
    """A thread that raises :class:`ClauseOverrunError` in a clause's thread if the clause outlives ``delay``."""

    def __init__(self, thread_id: int, loop: asyncio.AbstractEventLoop, delay: float) -> None:
        self._thread_id = thread_id
        self._loop = loop
        self._lock = threading.Lock()
        self._armed = True
        self._timer = threading.Timer(delay, self._fire)
        self._timer.daemon = True
        self._timer.start()

    def disarm(self) -> None:
        with self._lock:
            self._armed = False
        self._timer.cancel()

    def _fire(self) -> None:
        with self._lock:
            if not self._armed:
                return
            self._armed = False
            frame = sys._current_frames().get(self._thread_id)  # pyright: ignore[reportPrivateUsage]
            detail = "\n  ".join(
                ["its own code, without ever awaiting (so it could not be cancelled):", *_stack(frame)]
            )
            error = type("ClauseOverrunError", (ClauseOverrunError,), {"detail": detail})
            if _raise_in_thread(self._thread_id, error):
                # A loop idle in select() (a clause that swallowed its cancellation) only notices when woken.
                with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                    self._loop.call_soon_threadsafe(lambda: None)


def _code_of(function: Callable[..., Any]) -> CodeType:
    code: CodeType = getattr(function, "__code__")  # noqa: B009 - functools.wraps hides it from the type
    return code


def _with_time_limit(
    clause: Callable[..., Coroutine[Any, Any, Any]], *, example: bool = False
) -> Callable[..., Coroutine[Any, Any, Any]]:
    """Wrap a clause (or, with ``example``, one example of a property clause) to run under ``time_limit``."""

    @functools.wraps(clause)
    async def limited(self: ConformanceBase, *args: Any, **kwargs: Any) -> Any:
        clock = self.__dict__.get(_CLOCK_ATTR)
        if clock is None:
            owner = type(self)
            clock = _ClauseClock(owner.__name__, clause.__name__, float(owner.time_limit))
            self.__dict__[_CLOCK_ATTR] = clock
        return await clock.run(clause(self, *args, **kwargs), example=example)

    setattr(limited, _LIMITED_ATTR, True)
    _WRAPPER_CODES.add(_code_of(limited))
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
            hypothesis.inner_test = _with_time_limit(inner, example=True)  # pyright: ignore[reportOptionalMemberAccess]


@pytest.mark.asyncio
class ConformanceBase:
    """Base of the conformance classes.

    Subclasses set ``capabilities`` (a frozen dataclass) and may set ``divergences``:
    ``{"test_clause_name": "why this store differs"}``. A listed clause runs as a strict
    xfail: it must fail, and starts failing the run the day the store is fixed.

    Every clause runs under ``time_limit`` seconds (60 by default; set it on your subclass for a
    slow store), whatever the pytest configuration: a clause still running then fails, naming
    itself and what it was waiting for, instead of hanging the run. Every loop of the suite over
    a store's answers is bounded too.
    """

    capabilities: ClassVar[Any]
    divergences: ClassVar[dict[str, str]] = {}
    time_limit: ClassVar[float] = 60.0

    #: Name of the factory fixture the subclass provides (set by each conformance class).
    factory_fixture: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith(f"{__package__}."):
            _limit_clauses(cls)

    @pytest.fixture(autouse=True)
    def _agent_stores_clause_rules(self, request: pytest.FixtureRequest) -> None:
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
        needed, absent = getattr(request.function, _REQUIRES_ATTR, ((), ()))
        for capability in (*needed, *absent):
            if not hasattr(self.capabilities, capability):
                pytest.fail(f"{type(self.capabilities).__name__} has no capability {capability!r}", pytrace=False)
        missing = [c for c in needed if not getattr(self.capabilities, c)]
        if missing:
            pytest.skip(f"capability not declared: {', '.join(missing)}")
        present = [c for c in absent if getattr(self.capabilities, c)]
        if present:
            pytest.skip(f"clause is for stores without: {', '.join(present)}")
        if name in self.divergences:
            request.applymarker(pytest.mark.xfail(strict=True, reason=f"declared divergence: {self.divergences[name]}"))

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
