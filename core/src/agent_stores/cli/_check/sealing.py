"""The ``sealing`` suite of ``check``: the encryption clause set against a sealed URL or a sealed-stores factory.

A URL that opens sealed stores (``keyring=``, ``kms_key_id=``, ``AGENT_STORES_KEYRING`` or
``AGENT_STORES_KMS_KEY_ID``) is checked with the key provider it names; a ``module:attr``
whose one parameter is ``provider`` and which returns sealed stores is checked with fresh
keyrings. Every clause works in tenants (and namespaces) of its own; a URL check forgets them afterwards.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from agent_stores.core import Stores, open_stores
from agent_stores.core.lifecycle import take_query_option
from agent_stores.core.sealing import Encryption, KeyProvider, Keyring, SealedStores
from agent_stores.core.sealmark import SEALING_SETTINGS, take_sealing_options
from agent_stores.testing import SealingCapabilities

from .plan import ClauseScope, SuitePlan
from .report import CheckReport, ClauseResult

__all__ = ["ROTATION_CLAUSE", "SUITE", "TenantRecorder", "plan_sealed_factory", "plan_sealed_url", "takes_provider"]

#: The suite's name in ``--suite`` and the report.
SUITE = "sealing"

#: The clause that needs a second key-encryption key: run for a keyring only (``Keyring.rotated()``).
ROTATION_CLAUSE = "test_rotation_keeps_old_records_readable"


class TenantRecorder:
    """Sealed stores that note the tenants and namespaces a clause opens, so the check can forget them afterwards.

    Tenants go to ``tenants``; namespaces outside tenants to ``namespaces``.

    Every other attribute is the wrapped stores'.
    """

    def __init__(self, stores: Stores, tenants: set[str], namespaces: set[str] | None = None) -> None:
        self.stores = stores
        self.tenants = tenants
        self.namespaces: set[str] = set() if namespaces is None else namespaces

    def tenant(self, tenant: str) -> Any:
        """The wrapped stores' view of ``tenant``, noted in :attr:`tenants` first."""
        self.tenants.add(tenant)
        return self.stores.tenant(tenant)

    def _note(self, options: dict[str, Any]) -> None:
        namespace = options.get("namespace")
        if isinstance(namespace, str) and options.get("tenant") is None:
            self.namespaces.add(namespace)

    def history_provider(self, *args: Any, **options: Any) -> Any:
        """The wrapped stores' history provider, its namespace noted first."""
        self._note(options)
        return self.stores.history_provider(*args, **options)

    def todo_store(self, **options: Any) -> Any:
        """The wrapped stores' todo store, its namespace noted first."""
        self._note(options)
        return self.stores.todo_store(**options)

    def checkpoint_storage(self, **options: Any) -> Any:
        """The wrapped stores' checkpoint storage, its namespace noted first."""
        self._note(options)
        return self.stores.checkpoint_storage(**options)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stores, name)


def _unsealed_url(url: str) -> tuple[str, dict[str, Any]]:
    """``url`` without its sealing options, and the :class:`Encryption` settings they give besides the key."""
    url, _ = take_query_option(url, "keyring")
    url, named = take_sealing_options(url, {})
    settings: dict[str, Any] = {"adopt_plaintext": bool(named["adopt_plaintext"])}
    settings.update((name, named[name]) for name in SEALING_SETTINGS if named[name] is not None)
    return url, settings


def plan_sealed_url(
    probe: Stores, url: str, tenants: set[str], report: CheckReport, namespaces: set[str] | None = None
) -> tuple[SuitePlan, set[tuple[str, str]]]:
    """Plan the sealing suite over ``url`` (opened as ``probe``, sealed); return it and the clauses it leaves out.

    The clauses seal with the URL's own key provider; a provider without its keys is a fresh
    keyring. Every tenant a clause opens is added to ``tenants``, every namespace outside
    tenants to ``namespaces``.
    """
    assert isinstance(probe, SealedStores)
    provider = probe.encryption.provider
    base, settings = _unsealed_url(url)

    def factory(given: KeyProvider | bool) -> Any:
        if given is False:
            return TenantRecorder(open_stores(base, encryption=False), tenants, namespaces)
        assert not isinstance(given, bool)
        sealed = open_stores(base, encryption=Encryption(given, **settings))
        return TenantRecorder(sealed, tenants, namespaces)

    fixtures: dict[str, Any] = {"key_provider": provider}
    skip: set[tuple[str, str]] = set()
    if isinstance(provider, Keyring):
        fixtures["rotate"] = Keyring.rotated
    else:
        skip.add((SUITE, ROTATION_CLAUSE))
        report.results.append(
            _not_run(
                f"a second key-encryption key of {type(provider).__name__} would be made in your key service; "
                "the check makes none (run SealingConformance with a rotate fixture from pytest)"
            )
        )
    report.notes.append(
        f"sealing: clauses seal with the URL's {type(provider).__name__} ({provider.key_id}) in tenants and "
        "namespaces of their own, forgotten afterwards"
    )
    return _suite(lambda scope: factory, fixtures), skip


def takes_provider(factory: Callable[..., Any]) -> bool:
    """Whether a ``module:attr`` factory is a sealed-stores factory: its only required parameter is ``provider``."""
    try:
        parameters = list(inspect.signature(factory).parameters.values())
    except (TypeError, ValueError):
        return False
    required = [p for p in parameters if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return [p.name for p in required] == ["provider"]


def plan_sealed_factory(factory: Callable[..., Any]) -> SuitePlan:
    """Plan the sealing suite for a factory ``factory(provider)`` returning sealed stores (``False``: without a key)."""

    def opener(scope: ClauseScope) -> Callable[..., Any]:
        del scope
        return factory

    return _suite(opener, {})


def _suite(opener: Callable[[ClauseScope], Callable[..., Any]], fixtures: dict[str, Any]) -> SuitePlan:
    return SuitePlan(SUITE, opener, SealingCapabilities(), fixtures=fixtures)


def _not_run(reason: str) -> ClauseResult:
    return ClauseResult(SUITE, ROTATION_CLAUSE, "not-run", explanation=reason)
