"""Borrow-or-own written once: option routing, ``from_url``, who closes what, URL redaction."""

from __future__ import annotations

from typing import Any, ClassVar

import pytest

from agent_stores.core import (
    ConnectedBackend,
    ConnectedStore,
    Connector,
    PrefixedObjectDriver,
    Stores,
    open_stores,
    redact_url,
    route_options,
)
from agent_stores.core.history import LogHistoryProvider
from agent_stores.core.memory import MemoryBackend, MemoryLogDriver, MemoryObjectDriver
from agent_stores.testing import ObjectDriverCapabilities, ObjectDriverConformance


class _Handle:
    """A handle that records whether it was closed and whether it owns its client."""

    def __init__(self, client: object, *, owned: bool, **options: Any) -> None:
        self.client, self.owned, self.options, self.closed = client, owned, options, False

    async def aclose(self) -> None:
        self.closed = True


class _Connector(Connector[_Handle]):
    handle_type = _Handle
    options = frozenset({"timeout"})
    name = "test"

    def open(self, url: str, **options: Any) -> _Handle:
        return _Handle(url, owned=True, **options)

    def borrow(self, client: Any, **options: Any) -> _Handle:
        if not isinstance(client, str):
            raise TypeError("not a client")
        return _Handle(client, owned=False, **options)


class _History(ConnectedStore[_Handle], LogHistoryProvider):
    connector: ClassVar[Connector[Any]] = _Connector()

    def __init__(self, client: str | _Handle, *, timeout: float | None = None, **kwargs: Any) -> None:
        self._connect(client, timeout=timeout)
        super().__init__(MemoryLogDriver(), **kwargs)


class _OpenEnded(_Connector):
    open_ended = True


def test_options_route_by_name_to_the_store_the_framework_base_or_the_handle() -> None:
    store, handle = route_options(
        _History, _History.connector, {"timeout": 2, "max_messages": 5, "store_outputs": False}
    )
    assert handle == {"timeout": 2}
    # store_outputs is the framework HistoryProvider's own keyword, found by following **kwargs.
    assert store == {"max_messages": 5, "store_outputs": False}


def test_an_option_nobody_takes_is_a_value_error_naming_both_sides() -> None:
    with pytest.raises(ValueError, match=r"unknown options \['max_mesages'\].*max_messages.*timeout"):
        route_options(_History, _History.connector, {"max_mesages": 5})


def test_an_open_ended_connector_takes_what_no_store_takes() -> None:
    store, handle = route_options(_History, _OpenEnded(), {"socket_keepalive": True, "ttl": 3})
    assert handle == {"socket_keepalive": True} and store == {"ttl": 3}


@pytest.mark.asyncio
async def test_from_url_owns_its_handle_and_closes_it() -> None:
    history = _History.from_url("test://x", timeout=1, max_messages=3)
    assert history.handle.owned and history.handle.options == {"timeout": 1} and history.max_messages == 3
    await history.aclose()
    assert history.handle.closed


@pytest.mark.asyncio
async def test_a_handle_made_around_a_borrowed_client_is_closed_but_a_shared_handle_is_not() -> None:
    made = _History("client")
    assert not made.handle.owned
    await made.aclose()
    assert made.handle.closed  # the store made this handle: it releases the handle's own resources

    shared = _Handle("client", owned=False)
    user = _History(shared)
    await user.aclose()
    assert not shared.closed  # a handle passed in is shared: left open


def test_options_with_a_shared_handle_are_refused() -> None:
    with pytest.raises(ValueError, match="belong to the _Handle"):
        _History(_Handle("c", owned=False), timeout=3)


def test_an_owned_store_collected_unclosed_warns() -> None:
    history = _History.from_url("test://x")
    with pytest.warns(ResourceWarning, match="was not closed"):
        history.__del__()
    history._closed = True  # pyright: ignore[reportPrivateUsage]


class _Backend(ConnectedBackend[_Handle]):
    connector: ClassVar[Connector[Any]] = _Connector()
    history_type = _History
    file_store_type = _History
    session_store_type = _History

    def object_driver(self) -> MemoryObjectDriver:
        return MemoryObjectDriver()

    def log_driver(self) -> MemoryLogDriver:
        return MemoryLogDriver()


@pytest.mark.asyncio
async def test_a_declared_backend_shares_one_handle_and_refuses_unknown_options() -> None:
    with pytest.raises(ValueError, match=r"unknown test backend options \['pool'\]"):
        _Backend("test://x", pool=3)
    backend = _Backend("test://u:secret@x", timeout=4)
    history = backend.history_provider(source_id="h", max_messages=2)
    assert history.handle is backend.handle and history.source_id == "h"
    with pytest.raises(ValueError, match="unknown history provider options"):
        backend.history_provider(source_id="h", maxmessages=2)
    assert "secret" not in repr(backend)
    await history.aclose()
    assert not backend.handle.closed  # the backend's handle is shared by its stores
    await backend.aclose()
    assert backend.handle.closed


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("redis://user:pw1@host:6379/0", "pw1"),
        ("mongodb:/user:pw2@host/db", "pw2"),  # malformed: still redacted
        ("fsspec+sftp://user:p@w3@host/dir", "p@w3"),  # an unescaped @ in the password
        ("mongodb://h/db?tlsCertificateKeyFilePassword=pw4&authSource=admin", "pw4"),
        ("mongodb://h/db?authMechanismProperties=AWS_SESSION_TOKEN:tok5", "tok5"),
        ("fsspec+s3://bucket/p?key=AKIA6&secret=sec6&endpoint_url=http://h", "sec6"),
        ("s3://b/p?aws_secret_access_key=sec7", "sec7"),
    ],
)
def test_redact_url_hides_every_credential(url: str, secret: str) -> None:
    shown = redact_url(url)
    assert secret not in shown and "***" in shown


def test_redact_url_keeps_where_the_store_is() -> None:
    assert (
        redact_url("redis://h:6379/0?key_prefix=app:&socket_timeout=5")
        == "redis://h:6379/0?key_prefix=app:&socket_timeout=5"
    )
    assert redact_url("sqlite:///agent.db") == "sqlite:///agent.db"


def test_errors_and_reprs_of_open_stores_never_show_a_password() -> None:
    with pytest.raises(ValueError) as caught:
        open_stores("mongodb:/user:hunter2@host/db")
    assert "hunter2" not in str(caught.value)
    assert "hunter2" not in repr(Stores("redis://u:hunter2@h/0", MemoryBackend()))


@pytest.mark.asyncio
async def test_memory_backend_hands_out_its_drivers_through_stores() -> None:
    async with open_stores("memory://") as stores:
        objects = stores.object_driver()
        await objects.put("a", b"1")
        assert (await objects.get("a")) is not None
        assert stores.log_driver() is stores.log_driver()


class TestPrefixedObjectDriver(ObjectDriverConformance):
    """The prefix view passes the whole object-driver suite, and never leaves its prefix."""

    capabilities = ObjectDriverCapabilities(
        atomic_create_across_instances=True, atomic_if_version_across_instances=True
    )

    @pytest.fixture
    def object_driver_factory(self) -> Any:
        shared = MemoryObjectDriver()

        async def make() -> PrefixedObjectDriver:
            return PrefixedObjectDriver(shared, "tenant/a/")

        return make


@pytest.mark.asyncio
async def test_prefixed_driver_keeps_to_its_prefix() -> None:
    under = MemoryObjectDriver()
    await under.put("tenant/b/x", b"other")
    view = PrefixedObjectDriver(under, "tenant/a/")
    await view.put("x", b"mine")
    assert (await under.get("tenant/a/x")) is not None
    assert (await view.list("")).keys == ["x"]
    with pytest.raises(ValueError, match="ends with '/'"):
        PrefixedObjectDriver(under, "tenant")
