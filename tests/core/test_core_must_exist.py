"""``must_exist``: a backend opens a store without creating it only when its connector declares it; ``location()``."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from agent_stores.core import MUST_EXIST, ConnectedBackend, ConnectedStore, Connector, StoreNotFoundError, open_stores
from agent_stores.core.history import LogHistoryProvider
from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver


class _Handle:
    def __init__(self, url: str, **options: Any) -> None:
        self.url, self.options = url, options

    async def aclose(self) -> None:
        return None


class _Connector(Connector[_Handle]):
    """A third party's connector that knows nothing of ``must_exist``."""

    handle_type = _Handle
    options = frozenset({"timeout"})
    name = "plain"

    def open(self, url: str, **options: Any) -> _Handle:
        return _Handle(url, **options)

    def borrow(self, client: Any, **options: Any) -> _Handle:
        return _Handle(str(client), **options)


class _OpenEnded(_Connector):
    """One that passes every unknown option to its client: ``must_exist`` must still not reach the client."""

    open_ended = True


class _Declaring(_Connector):
    """One that declares it: the option reaches ``open``."""

    options = frozenset({"timeout", MUST_EXIST})


def _backend(declared: Connector[Any]) -> type[ConnectedBackend[_Handle]]:
    class Backend(ConnectedBackend[_Handle]):
        connector: ClassVar[Connector[Any]] = declared
        history_type = LogHistoryProvider
        file_store_type = LogHistoryProvider
        session_store_type = LogHistoryProvider
        object_driver_type = MemoryObjectDriver
        log_driver_type = MemoryLogDriver

    return Backend


@pytest.mark.parametrize("connector", [_Connector(), _OpenEnded()], ids=["plain", "open-ended"])
def test_a_backend_whose_connector_does_not_declare_must_exist_refuses_it(connector: Connector[Any]) -> None:
    backend = _backend(connector)
    with pytest.raises(ValueError, match="cannot open a store without creating it"):
        backend("plain://x", must_exist=True)
    assert backend("plain://x", must_exist=False).handle.options == {}  # asking for nothing is no error


def test_a_declaring_connector_gets_the_option() -> None:
    assert _backend(_Declaring())("plain://x", must_exist=True).handle.options == {MUST_EXIST: True}


@pytest.mark.parametrize("connector", [_Connector(), _OpenEnded()], ids=["plain", "open-ended"])
def test_a_store_whose_connector_does_not_declare_must_exist_refuses_it(connector: Connector[Any]) -> None:
    declared = connector

    class Store(ConnectedStore[_Handle], LogHistoryProvider):
        connector: ClassVar[Connector[Any]] = declared

        def __init__(self, client: Any, **kwargs: Any) -> None:
            self._connect(client)
            super().__init__(MemoryLogDriver(), **kwargs)

    with pytest.raises(ValueError, match="cannot open a store without creating it"):
        Store.from_url("plain://x", must_exist=True)


def test_a_memory_store_never_exists_before_it_is_opened() -> None:
    with pytest.raises(StoreNotFoundError, match="memory://"):
        open_stores("memory://", must_exist=True)


def test_the_default_location_is_the_url_spelled_one_way() -> None:
    backend = _backend(_Connector())
    assert backend("Plain://user:pw@HOST:1/db/?b=2&a=1").location() == backend("plain://host:1/db?a=1&b=2").location()
    assert "pw" not in backend("plain://user:pw@host/db").location()
    assert backend("plain://host/db").location() != backend("plain://host/other").location()
    assert backend("plain://host/db?a=1").location() != backend("plain://host/db?a=2").location()
