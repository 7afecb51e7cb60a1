"""Outage clauses: a store whose server becomes unreachable fails clearly, half-writes nothing, and recovers.

:class:`OutageProxy` is a TCP proxy a test places in front of any server and cuts at will; open
the store at the proxy's address (:meth:`OutageProxy.url` rewrites a server URL) with short
timeouts. :class:`OutageConformance` then checks, for each store kind the class provides a
factory for:

- while the server is cut, an operation raises :class:`~agent_stores.core.StoreUnavailableError`
  within ``unavailable_within`` seconds (never a raw client error, never a hang);
- nothing is half-written: once restored, the store holds the state before the failed call or
  its full effect, never part of it (also when the request reached the server and only the
  answer was lost);
- the **same** store object works again once the server is back;
- errors about the call itself (a value past a backend limit, an overlong id) are never
  reported as unavailability.

Provide an ``outage`` fixture (the proxy, or any object with ``cut(mode)`` and ``restore()``,
which may be coroutines: the hook form, for a store that is not reached over TCP) and a factory
per store kind opening the store through it::

    import pytest
    from agent_stores.testing.outage import OutageCapabilities, OutageConformance, OutageProxy

    class TestMyOutages(OutageConformance):
        capabilities = OutageCapabilities(history=True, files=True, sessions=True)

        @pytest.fixture
        def outage(self, server_url):
            with OutageProxy.for_url(server_url) as proxy:
                yield proxy

        @pytest.fixture
        def history_factory(self, outage, server_url):
            url = outage.url(server_url)
            return lambda **options: MyHistoryProvider.from_url(url, timeout=0.5, **options)

``file_store_factory`` and ``session_store_factory`` work the same way. The proxy runs its own
event loop in a thread, so it works under any event loop scope and with blocking clients.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import random
import socket
import struct
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol, Self, TypeVar, runtime_checkable
from urllib.parse import urlsplit, urlunsplit

import pytest
import pytest_asyncio
from agent_framework import AgentSession, Message

from agent_stores.core.errors import CorruptRecordError, StoreUnavailableError
from agent_stores.core.redaction import redact_url

from ._base import ConformanceBase, incompressible, maybe_await, requires, unique_id

__all__ = ["Outage", "OutageCapabilities", "OutageConformance", "OutageMode", "OutageProxy"]

#: How an outage cuts the server off:
#:
#: ``refuse``
#:     Open connections are reset and new ones refused (a server down, a port closed).
#: ``stall``
#:     Connections open and stay open, but nothing is delivered either way (a network partition,
#:     a hung server): only the client's timeout ends an operation.
#: ``after_next_request``
#:     The next bytes a client sends reach the server, then every connection is reset and new
#:     ones refused: the request may be applied while its answer is lost.
OutageMode = Literal["refuse", "stall", "after_next_request"]


@runtime_checkable
class Outage(Protocol):
    """Cuts a store off from its server and restores it (each method may return an awaitable)."""

    def cut(self, mode: OutageMode = "refuse") -> Any:
        """Make the server unreachable in the way ``mode`` says, until :meth:`restore`."""
        ...

    def restore(self) -> Any:
        """Make the server reachable again; connections that lived through the cut are closed."""
        ...


# -- the proxy ----------------------------------------------------------------------------------------


class _Link:
    """One client connection and its upstream connection."""

    def __init__(self, client: asyncio.StreamWriter) -> None:
        self.client = client
        self.upstream: asyncio.StreamWriter | None = None
        self.stalled = False


def _reset(connection: socket.socket) -> None:
    """Close a socket with a reset."""
    with contextlib.suppress(OSError):
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    connection.close()


def _abort(writer: asyncio.StreamWriter | None) -> None:
    """Close a connection with a reset, discarding what is unsent."""
    if writer is None:
        return
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()


class OutageProxy:
    """A TCP proxy in front of one server, listening on loopback, that a test cuts and restores.

    Use it as a context manager (or call :meth:`start` and :meth:`close`)::

        with OutageProxy("127.0.0.1", 6379) as proxy:
            store = open_my_store(proxy.url("redis://127.0.0.1:6379/0"))
            proxy.cut()        # every connection reset, new ones refused
            ...
            proxy.restore()    # reachable again, on the same port

    Every method is synchronous and thread-safe; the proxy serves from its own event loop in a
    daemon thread.
    """

    def __init__(self, target_host: str, target_port: int, *, host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self.host = host
        self.port = 0
        self._mode: OutageMode | Literal["open"] = "open"
        self._links: set[_Link] = set()
        self._listener: socket.socket | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def for_url(cls, url: str, *, default_port: int | None = None) -> OutageProxy:
        """A proxy in front of the host and port ``url`` names (``default_port`` when it names none)."""
        parts = urlsplit(url)
        port = parts.port or default_port
        if parts.hostname is None or port is None:
            raise ValueError(f"the URL names no host and port to proxy: {redact_url(url)!r}")
        return cls(parts.hostname, port)

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> Self:
        """Start listening on a free loopback port (kept across cuts); return the proxy."""
        if self._thread is not None:
            return self
        loop = asyncio.new_event_loop()
        self._loop = loop
        self._thread = threading.Thread(target=loop.run_forever, name="agent-stores-outage-proxy", daemon=True)
        self._thread.start()
        self._call(self._listen())
        return self

    def close(self) -> None:
        """Stop listening and reset every connection."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        self._call(self._shutdown())
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
        self._loop = self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- what a test uses -------------------------------------------------------------------------

    @property
    def address(self) -> tuple[str, int]:
        """The ``(host, port)`` clients connect to."""
        return self.host, self.port

    def url(self, url: str) -> str:
        """Return ``url`` with its host and port replaced by the proxy's (user, path and query kept)."""
        parts = urlsplit(url)
        userinfo = parts.netloc.rpartition("@")[0]
        netloc = f"{userinfo}@{self.host}:{self.port}" if userinfo else f"{self.host}:{self.port}"
        return urlunsplit(parts._replace(netloc=netloc))

    @property
    def mode(self) -> str:
        """``open``, or the mode of the current cut."""
        return self._mode

    def cut(self, mode: OutageMode = "refuse") -> None:
        """Cut the server off (see :data:`OutageMode`) until :meth:`restore`."""
        if mode not in ("refuse", "stall", "after_next_request"):
            raise ValueError(f"unknown outage mode {mode!r}; known: refuse, stall, after_next_request")
        self._call(self._cut(mode))

    def restore(self) -> None:
        """Make the server reachable again on the same port; connections open during the cut are reset."""
        self._call(self._restore())

    # -- the event loop's side --------------------------------------------------------------------

    def _call(self, work: Coroutine[Any, Any, None]) -> None:
        if self._loop is None:
            work.close()
            raise RuntimeError("the outage proxy is not started")
        asyncio.run_coroutine_threadsafe(work, self._loop).result(timeout=30)

    async def _listen(self) -> None:
        # Accepted by a thread of its own: a listener closed at a cut then leaves no connection
        # half-accepted, every one is either reset here or handed to the event loop.
        listener = socket.create_server((self.host, self.port), backlog=128)
        self.port = listener.getsockname()[1]
        self._listener = listener
        loop = asyncio.get_running_loop()
        threading.Thread(
            target=self._accept, args=(listener, loop), name="agent-stores-outage-accept", daemon=True
        ).start()

    def _accept(self, listener: socket.socket, loop: asyncio.AbstractEventLoop) -> None:
        """In the accepting thread: hand every connection to the event loop until the listener closes."""
        while True:
            try:
                connection, _ = listener.accept()
            except OSError:  # the listener was closed by a cut or by close()
                return
            try:
                loop.call_soon_threadsafe(self._adopt, connection)
            except RuntimeError:  # the loop is closed
                connection.close()
                return

    def _adopt(self, connection: socket.socket) -> None:
        task = asyncio.ensure_future(self._open(connection))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _open(self, connection: socket.socket) -> None:
        if self._mode == "refuse":
            _reset(connection)
            return
        reader, writer = await asyncio.open_connection(sock=connection)
        await self._serve(reader, writer)

    def _stop_listening(self) -> None:
        listener, self._listener = self._listener, None
        if listener is None:
            return
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)  # wakes the accepting thread
        listener.close()

    async def _shutdown(self) -> None:
        self._stop_listening()
        self._reset_all()
        current = asyncio.current_task()
        pending = [task for task in asyncio.all_tasks() if task is not current]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)

    def _reset_all(self) -> None:
        for link in list(self._links):
            _abort(link.client)
            _abort(link.upstream)
        self._links.clear()

    async def _cut(self, mode: OutageMode) -> None:
        self._mode = mode
        if mode == "refuse":
            await self._refuse()
        elif mode == "stall":
            for link in self._links:
                link.stalled = True

    async def _refuse(self) -> None:
        self._mode = "refuse"
        self._stop_listening()
        self._reset_all()

    async def _restore(self) -> None:
        for link in [link for link in self._links if link.stalled]:
            _abort(link.client)
            _abort(link.upstream)
            self._links.discard(link)
        self._mode = "open"
        if self._listener is None:
            await self._listen()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        link = _Link(writer)
        if self._mode == "refuse":
            _abort(writer)
            return
        self._links.add(link)
        if self._mode == "stall":
            link.stalled = True
            with contextlib.suppress(OSError):
                while await reader.read(65536):
                    pass
            return
        try:
            upstream_reader, upstream = await asyncio.open_connection(*self.target)
        except OSError:
            self._links.discard(link)
            _abort(writer)
            return
        link.upstream = upstream
        upstream.transport.set_write_buffer_limits(0)
        await asyncio.gather(
            self._pump(reader, upstream, link, to_server=True),
            self._pump(upstream_reader, writer, link, to_server=False),
        )

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, link: _Link, *, to_server: bool
    ) -> None:
        try:
            while data := await source.read(65536):
                if link.stalled:
                    continue  # delivered nowhere: the other side waits until its timeout
                sink.write(data)
                if to_server and self._mode == "after_next_request":
                    # The request reaches the server; its answer never reaches the client.
                    self._links.discard(link)
                    _abort(link.client)
                    await self._refuse()
                    sink.close()
                    with contextlib.suppress(OSError):
                        await sink.wait_closed()
                    return
                await sink.drain()
        except OSError:
            pass
        finally:
            if link in self._links and not link.stalled:
                self._links.discard(link)
                _abort(link.client)
                _abort(link.upstream)


# -- the clauses --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OutageCapabilities:
    """Which store kinds the class provides a factory for, and which outages its ``outage`` can make.

    Attributes:
        history: The class provides ``history_factory`` (as for ``HistoryProviderConformance``).
        files: The class provides ``file_store_factory`` (as for ``FileStoreConformance``).
        sessions: The class provides ``session_store_factory`` (as for ``SessionStoreConformance``).
        stall: ``outage.cut("stall")`` works (the proxy's does; a hook may not).
        lost_answers: ``outage.cut("after_next_request")`` works (the proxy's does; a hook may not).
    """

    history: bool = False
    files: bool = False
    sessions: bool = False
    stall: bool = True
    lost_answers: bool = True


@dataclass(frozen=True)
class _CutBy:
    """Marks that a clause cut ``outage``: its teardown restores it."""

    outage: Outage


T = TypeVar("T")

#: A value past the limits databases put on one record (MongoDB: 16 MiB a document).
_OVERSIZED = 17 * 1024 * 1024


@functools.cache
def _oversized(seed: str) -> str:
    """``_OVERSIZED`` incompressible ASCII characters (base64 of seeded random bytes, fast to make)."""
    return base64.b64encode(random.Random(seed).randbytes(_OVERSIZED * 3 // 4)).decode()


class OutageConformance(ConformanceBase):
    """Clauses for a store whose server becomes unreachable; see the module's documentation.

    ``unavailable_within`` is how long (seconds) an operation may take to fail while the server
    is cut: set it from the timeouts and retries the factories open the stores with.
    """

    capabilities: ClassVar[OutageCapabilities] = OutageCapabilities()
    unavailable_within: ClassVar[float] = 15.0
    #: Options the refusal clauses add to ``history_factory`` and ``file_store_factory`` calls:
    #: they write 17 MiB with the server up, which the short timeouts of the outage clauses may
    #: not leave time for on a busy machine (a timeout *is* unavailability), e.g.
    #: ``{"read_timeout": 30}``.
    refusal_options: ClassVar[dict[str, Any]] = {}
    factory_fixture: ClassVar[str] = "outage"

    # -- helpers ----------------------------------------------------------------------------------

    @pytest.fixture
    def opened_in_clause(self) -> list[Any]:
        """The stores a clause opened and the outages it cut, for the clause's teardown."""
        return []

    @pytest_asyncio.fixture(autouse=True)
    async def _agent_stores_outage_cleanup(self, outage: Outage, opened_in_clause: list[Any]) -> AsyncIterator[None]:
        # Requesting ``outage`` here (not only inside the clauses) lets a parametrized fixture
        # behind it parametrize every clause.
        yield
        for item in reversed(opened_in_clause):
            with contextlib.suppress(Exception):
                async with asyncio.timeout(self.unavailable_within):
                    if isinstance(item, _CutBy):
                        await maybe_await(item.outage.restore())
                    elif (close := getattr(item, "aclose", None)) is not None:
                        await maybe_await(close())

    async def _open(self, request: pytest.FixtureRequest, opened: list[Any], fixture: str, **options: Any) -> Any:
        factory = request.getfixturevalue(fixture)
        store = await maybe_await(factory(**options))
        opened.append(store)
        return store

    async def _cut(self, outage: Outage, mode: OutageMode, opened: list[Any]) -> None:
        opened.append(_CutBy(outage))  # restored at teardown even if the clause fails first
        await maybe_await(outage.cut(mode))

    async def _restore(self, outage: Outage) -> None:
        await maybe_await(outage.restore())

    async def _unavailable(self, what: str, operation: Awaitable[Any], mode: str) -> None:
        """``operation`` must raise ``StoreUnavailableError`` within ``unavailable_within``."""
        started = time.monotonic()
        try:
            async with asyncio.timeout(self.unavailable_within):
                await operation
        except StoreUnavailableError:
            return
        except TimeoutError:
            pytest.fail(
                f"{what} with the server cut ({mode}) was still waiting after {self.unavailable_within:g} s "
                f"(unavailable_within); a store must give up within its timeout and raise StoreUnavailableError",
                pytrace=False,
            )
        except Exception as err:
            pytest.fail(
                f"{what} with the server cut ({mode}) raised {type(err).__name__}: {err}; a store that cannot "
                f"reach its server raises StoreUnavailableError (chaining the client's error)",
                pytrace=False,
            )
        pytest.fail(
            f"{what} with the server cut ({mode}) succeeded after {time.monotonic() - started:.1f} s; "
            f"the outage did not reach the store (is it opened at the outage's address?)",
            pytrace=False,
        )

    async def _before_cut(self, what: str, operation: Callable[[], Awaitable[T]]) -> T:
        """Run a clause's set-up ``operation`` (server up): a busy machine's slow connect is retried."""
        return await self._after_restore(what, operation, when="before the cut")

    async def _after_restore(
        self, what: str, operation: Callable[[], Awaitable[T]], *, when: str = "after the server came back"
    ) -> T:
        """Run ``operation`` on the same store once restored: it must succeed within ``unavailable_within``.

        ``StoreUnavailableError`` is retried until then (a server may take a moment to drop the
        connections broken by the cut); any other error fails at once.
        """
        deadline = time.monotonic() + self.unavailable_within
        while True:
            try:
                async with asyncio.timeout(max(deadline - time.monotonic(), 0.1)):
                    return await operation()
            except StoreUnavailableError as err:
                if time.monotonic() < deadline:
                    await asyncio.sleep(0.1)
                    continue
                failure = f"still raised StoreUnavailableError ({err}) after {self.unavailable_within:g} s"
            except TimeoutError:
                failure = f"did not finish within {self.unavailable_within:g} s"
            except CorruptRecordError as err:
                pytest.fail(
                    f"{what} {when} found a damaged record ({err}): a write cut off by "
                    f"the outage left part of itself behind, where it must be applied whole or not at all",
                    pytrace=False,
                )
            except Exception as err:
                failure = f"raised {type(err).__name__}: {err}"
            pytest.fail(
                f"{what} on the same store object {when} {failure}; a store reconnects "
                f"by itself once its server is reachable again",
                pytrace=False,
            )

    async def _not_unavailable(self, what: str, call: Callable[[], Awaitable[Any]]) -> None:
        """With the server up, ``call`` is stored or refused as bad input; never called unavailability."""
        try:
            await call()
        except ValueError:
            return
        except StoreUnavailableError as err:
            pytest.fail(
                f"{what} raised StoreUnavailableError ({err}) with the server up; an error about the call "
                f"itself (a value or key past a limit) is a ValueError, and retrying it can never succeed",
                pytrace=False,
            )
        except Exception as err:
            pytest.fail(
                f"{what} raised {type(err).__name__}: {err}; a value or key past the store's limits is "
                f"refused with ValueError (or stored)",
                pytrace=False,
            )

    # -- history ----------------------------------------------------------------------------------

    async def _history_round(self, request: pytest.FixtureRequest, opened: list[Any], mode: OutageMode) -> None:
        outage: Outage = request.getfixturevalue("outage")
        provider = await self._open(request, opened, "history_factory", source_id="outage")
        session_id = unique_id("outage")
        first = [Message(role="user", contents=["before"]), Message(role="assistant", contents=["answered"])]
        cut = [Message(role="user", contents=["during"]), Message(role="assistant", contents=["lost?"])]
        after = [Message(role="user", contents=["after"]), Message(role="assistant", contents=["back"])]
        await self._before_cut("save_messages", lambda: provider.save_messages(session_id, first))
        await self._cut(outage, mode, opened)
        await self._unavailable("save_messages", provider.save_messages(session_id, cut), mode)
        if mode == "refuse":  # (a stalled read would only wait out the timeout again)
            await self._unavailable("get_messages", provider.get_messages(session_id), mode)
        await self._restore(outage)
        texts = [m.text for m in await self._after_restore("get_messages", lambda: provider.get_messages(session_id))]
        if texts not in (["before", "answered"], ["before", "answered", "during", "lost?"]):
            pytest.fail(
                f"after a save failed with the server cut ({mode}), the session holds {texts}: "
                f"a save is stored whole or not at all",
                pytrace=False,
            )
        await self._after_restore("save_messages", lambda: provider.save_messages(session_id, after))
        final = [m.text for m in await provider.get_messages(session_id)]
        if final != [*texts, "after", "back"]:
            pytest.fail(f"a save after the outage left {final}, expected {[*texts, 'after', 'back']}", pytrace=False)

    @requires("history")
    async def test_history_refused_is_unavailable_and_the_same_provider_recovers(
        self, request: pytest.FixtureRequest, opened_in_clause: list[Any]
    ) -> None:
        """Connections reset and refused: the save and the load are unavailable; the provider recovers."""
        await self._history_round(request, opened_in_clause, "refuse")

    @requires("history", "stall")
    async def test_history_stalled_is_unavailable_within_the_timeout(
        self, request: pytest.FixtureRequest, opened_in_clause: list[Any]
    ) -> None:
        """Nothing answers: the save gives up within the timeout; nothing half-saved; the provider recovers."""
        await self._history_round(request, opened_in_clause, "stall")

    @requires("history", "lost_answers")
    async def test_history_lost_answer_leaves_the_save_whole_or_absent(
        self, request: pytest.FixtureRequest, opened_in_clause: list[Any]
    ) -> None:
        """The save reaches the server but its answer is lost: stored whole or not at all."""
        await self._history_round(request, opened_in_clause, "after_next_request")

    @requires("history")
    async def test_history_opened_during_an_outage_works_once_restored(
        self, request: pytest.FixtureRequest, opened_in_clause: list[Any]
    ) -> None:
        """A provider opened while the server is down fails clearly, then works once it is back."""
        outage: Outage = request.getfixturevalue("outage")
        await self._cut(outage, "refuse", opened_in_clause)
        provider = await self._open(request, opened_in_clause, "history_factory", source_id="outage")
        session_id = unique_id("outage")
        await self._unavailable("get_messages", provider.get_messages(session_id), "refuse")
        await self._restore(outage)
        turn = [Message(role="user", contents=["first"])]
        await self._after_restore("save_messages", lambda: provider.save_messages(session_id, turn))
        assert [m.text for m in await provider.get_messages(session_id)] == ["first"]

    @requires("history")
    async def test_history_refusals_are_not_unavailability(
        self, request: pytest.FixtureRequest, opened_in_clause: list[Any]
    ) -> None:
        """A message or session id past what the store holds is bad input (``ValueError``) or stored."""
        options = {**self.refusal_options, "source_id": "outage"}
        provider = await self._open(request, opened_in_clause, "history_factory", **options)
        huge = [Message(role="user", contents=[_oversized("history")])]
        small = [Message(role="user", contents=["hi"])]
        await self._not_unavailable("a 17 MiB message", lambda: provider.save_messages(unique_id("outage"), huge))
        await self._not_unavailable(
            "a 5,000-character session id", lambda: provider.save_messages(incompressible(5000), small)
        )

    # -- files ------------------------------------------------------------------------------------

    async def _files_round(self, request: pytest.FixtureRequest, opened: list[Any], mode: OutageMode) -> None:
        outage: Outage = request.getfixturevalue("outage")
        store = await self._open(request, opened, "file_store_factory")
        path = f"{unique_id('outage')}/notes.md"
        # Large enough to span several network packets, so a cut can land inside the body.
        before, during, after = (incompressible(200_000, f"outage-{label}") for label in ("before", "during", "after"))
        await self._before_cut("write", lambda: store.write(path, before))
        await self._cut(outage, mode, opened)
        await self._unavailable("write", store.write(path, during), mode)
        if mode == "refuse":  # (a stalled read would only wait out the timeout again)
            await self._unavailable("read", store.read(path), mode)
        await self._restore(outage)
        content = await self._after_restore("read", lambda: store.read(path))
        if content not in (before, during):
            shown = None if content is None else f"{len(content)} characters matching neither"
            pytest.fail(
                f"after a write failed with the server cut ({mode}), the file holds {shown}: a write "
                f"replaces the content whole or not at all",
                pytrace=False,
            )
        await self._after_restore("write", lambda: store.write(path, after))
        if await store.read(path) != after:
            pytest.fail("a write after the outage did not store its content", pytrace=False)

    @requires("files")
    async def test_files_refused_is_unavailable_and_the_same_store_recovers(
        self, request: pytest.FixtureRequest, opened_in_clause: list[Any]
    ) -> None:
        """Connections reset and refused: the write and the read are unavailable; the store recovers."""
        await self._files_round(request, opened_in_clause, "refuse")

    @requires("files", "stall")
    async def test_files_stalled_is_unavailable_within_the_timeout(
        self, request: pytest.FixtureRequest, opened_in_clause: list[Any]
    ) -> None:
        """Nothing answers: the write gives up within the timeout; the old content or the new, whole."""
        await self._files_round(request, opened_in_clause, "stall")

    @requires("files", "lost_answers")
    async def test_files_lost_answer_leaves_the_write_whole_or_absent(
        self, request: pytest.FixtureRequest, opened_in_clause: list[Any]
    ) -> None:
        """The write reaches the server but its answer is lost: the old content or the new, whole."""
        await self._files_round(request, opened_in_clause, "after_next_request")

    @requires("files")
    async def test_files_refusals_are_not_unavailability(
        self, request: pytest.FixtureRequest, opened_in_clause: list[Any]
    ) -> None:
        """A file or path past what the store holds is bad input (``ValueError``) or stored."""
        store = await self._open(request, opened_in_clause, "file_store_factory", **self.refusal_options)
        folder = unique_id("outage")
        big = _oversized("files")
        long_path = f"{folder}/" + "/".join(incompressible(200, f"segment-{i}") for i in range(25))
        await self._not_unavailable("a 17 MiB file", lambda: store.write(f"{folder}/big.txt", big))
        await self._not_unavailable("a 5,000-character path", lambda: store.write(long_path, "x"))

    # -- sessions ---------------------------------------------------------------------------------

    async def _sessions_round(self, request: pytest.FixtureRequest, opened: list[Any], mode: OutageMode) -> None:
        outage: Outage = request.getfixturevalue("outage")
        store = await self._open(request, opened, "session_store_factory")
        session_id = unique_id("outage")

        def snapshot(label: str) -> AgentSession:
            session = AgentSession(session_id=session_id)
            session.state["label"] = label
            session.state["pad"] = incompressible(100_000, f"outage-{label}")
            return session

        await self._before_cut("set", lambda: store.set(session_id, snapshot("before")))
        await self._cut(outage, mode, opened)
        await self._unavailable("set", store.set(session_id, snapshot("during")), mode)
        if mode == "refuse":  # (a stalled read would only wait out the timeout again)
            await self._unavailable("get", store.get(session_id), mode)
        await self._restore(outage)
        restored = await self._after_restore("get", lambda: store.get(session_id))
        label = None if restored is None else restored.state.get("label")
        whole = restored is not None and restored.state.get("pad") == incompressible(100_000, f"outage-{label}")
        if label not in ("before", "during") or not whole:
            pytest.fail(
                f"after a set failed with the server cut ({mode}), the session reads back as "
                f"{label!r} (whole: {whole}): a snapshot is replaced whole or not at all",
                pytrace=False,
            )
        await self._after_restore("set", lambda: store.set(session_id, snapshot("after")))
        final = await store.get(session_id)
        if final is None or final.state.get("label") != "after":
            pytest.fail("a set after the outage was not stored", pytrace=False)

    @requires("sessions")
    async def test_sessions_refused_is_unavailable_and_the_same_store_recovers(
        self, request: pytest.FixtureRequest, opened_in_clause: list[Any]
    ) -> None:
        """Connections reset and refused: set and get are unavailable; the store recovers."""
        await self._sessions_round(request, opened_in_clause, "refuse")

    @requires("sessions", "stall")
    async def test_sessions_stalled_is_unavailable_within_the_timeout(
        self, request: pytest.FixtureRequest, opened_in_clause: list[Any]
    ) -> None:
        """Nothing answers: the set gives up within the timeout; the old snapshot or the new, whole."""
        await self._sessions_round(request, opened_in_clause, "stall")

    @requires("sessions", "lost_answers")
    async def test_sessions_lost_answer_leaves_the_snapshot_whole_or_absent(
        self, request: pytest.FixtureRequest, opened_in_clause: list[Any]
    ) -> None:
        """The set reaches the server but its answer is lost: the old snapshot or the new, whole."""
        await self._sessions_round(request, opened_in_clause, "after_next_request")
