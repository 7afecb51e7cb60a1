"""What every conformance class shares: capability gating, the divergence registry, store lifecycle."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, ClassVar, TypeVar

import pytest
import pytest_asyncio

__all__ = ["ConformanceBase", "requires", "unique_id"]

F = TypeVar("F", bound=Callable[..., Any])

_REQUIRES_ATTR = "_agent_stores_requires"


def requires(*capabilities: str, absent: tuple[str, ...] = ()) -> Callable[[F], F]:
    """Run the decorated clause only when every named capability is declared (and every ``absent`` one is not)."""

    def mark(clause: F) -> F:
        setattr(clause, _REQUIRES_ATTR, (capabilities, absent))
        return clause

    return mark


def unique_id(label: str = "conformance") -> str:
    """Return a fresh lowercase id, so clauses never touch data they did not create."""
    return f"{label}-{uuid.uuid4().hex[:12]}"


async def maybe_await(value: Any) -> Any:
    """Await ``value`` when it is awaitable; factories may be sync or async."""
    if inspect.isawaitable(value):
        return await value
    return value


@pytest.mark.asyncio
class ConformanceBase:
    """Base of the three conformance classes.

    Subclasses set ``capabilities`` (a frozen dataclass) and may set ``divergences``:
    ``{"test_clause_name": "why this store differs"}``. A listed clause runs as a strict
    xfail: it must fail, and starts failing the run the day the store is fixed.
    """

    capabilities: ClassVar[Any]
    divergences: ClassVar[dict[str, str]] = {}

    #: Name of the factory fixture the subclass provides (set by each conformance class).
    factory_fixture: ClassVar[str]

    @pytest.fixture(autouse=True)
    def _agent_stores_clause_rules(self, request: pytest.FixtureRequest) -> None:
        name = request.function.__name__
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
            if close is not None:
                await maybe_await(close())
