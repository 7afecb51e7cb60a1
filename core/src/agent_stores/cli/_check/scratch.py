"""The scratch area a URL check writes in, the wrappers that keep it there, and its removal afterwards."""

from __future__ import annotations

import shutil
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from agent_stores.core import (
    LogDriver,
    LogHistoryProvider,
    LogRecord,
    LogVersion,
    ObjectDriver,
    PrefixedLogDriver,
    PrefixedObjectDriver,
    Stores,
    open_stores,
    redact_url,
)
from agent_stores.core.sealing import SealedStores, forget

from .footprint import Footprint
from .plan import close_store

__all__ = ["PATH_SCHEMES", "ScratchArea", "ScratchLogDriver", "scratch_url", "sweep_logs", "sweep_objects"]

#: Backends whose location is a path: the scratch area is a sub-folder of the URL's path.
PATH_SCHEMES = ("file", "s3", "fsspec")


def scratch_url(url: str, scratch: str) -> str:
    """``url`` with ``scratch`` appended to its path (``file:///srv/a`` -> ``file:///srv/a/<scratch>``)."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/") + "/" + scratch
    if parts.scheme.startswith("s3") and not parts.path.strip("/"):
        path = "/" + scratch
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, parts.fragment))


@dataclass
class ScratchArea:
    """Where a check of ``url`` writes: a fresh name used as history namespace and key prefix, or as a sub-folder.

    For a backend whose location is a path (:data:`PATH_SCHEMES`) the check opens the
    sub-folder ``name`` of the URL's path and the stores keep their own prefixes inside it;
    otherwise it opens the URL itself, history under ``namespace=name`` and every other kind
    under the key prefix ``name/<kind>/``.

    Attributes:
        url: The URL the user named.
        name: ``agent-stores-check-<random>``.
        written_history: Log keys the history providers appended to.
        written_logs: Log keys the log driver suite appended to.
        tenants: Tenants the sealing suite's clauses opened: forgotten by :meth:`remove`.
        namespaces: Namespaces outside tenants the sealing suite's clauses opened: forgotten too.
        footprint: The local file or folder the URL names, as it was before the check
            (see :class:`Footprint`): what :meth:`remove` gives back.
    """

    url: str
    name: str = field(default_factory=lambda: f"agent-stores-check-{uuid.uuid4().hex[:12]}")
    written_history: set[str] = field(default_factory=set[str])
    written_logs: set[str] = field(default_factory=set[str])
    tenants: set[str] = field(default_factory=set[str])
    namespaces: set[str] = field(default_factory=set[str])
    footprint: Footprint | None = None

    @property
    def by_path(self) -> bool:
        """Whether the area is a sub-folder of the URL's path."""
        return self.url.split("://", 1)[0].split("+", 1)[0] in PATH_SCHEMES

    @property
    def target_url(self) -> str:
        """The URL the check opens."""
        return scratch_url(self.url, self.name) if self.by_path else self.url

    def describe(self) -> str:
        """The report's note saying where the check writes (credentials redacted)."""
        if self.by_path:
            return f"scratch area: {redact_url(self.target_url)}"
        return f"scratch area: namespace and key prefix {self.name!r} in {redact_url(self.url)}"

    def options(self, kind: str) -> dict[str, Any]:
        """The options that keep a store of ``kind`` (``files``, ``sessions``, ``checkpoints``...) inside the area."""
        return {} if self.by_path else {"prefix": f"{self.name}/{kind}/"}

    def _prefix(self, kind: str) -> str:
        return f"{kind}/" if self.by_path else f"{self.name}/{kind}/"

    def history_provider(self, stores: Stores, **options: Any) -> Any:
        """A history provider in the area whose log keys are noted as they are written."""
        provider = stores.history_provider(namespace=self.name, **options)
        if isinstance(provider, LogHistoryProvider):
            provider.driver = ScratchLogDriver(provider.driver, "", self.written_history, owned=True)
        return provider

    def log_driver(self, stores: Stores) -> ScratchLogDriver:
        """The backend's log driver under the area's ``logs/`` prefix."""
        return ScratchLogDriver(stores.log_driver(), self._prefix("logs"), self.written_logs)

    def object_driver(self, stores: Stores) -> PrefixedObjectDriver:
        """The backend's object driver under the area's ``objects/`` prefix."""
        return PrefixedObjectDriver(stores.object_driver(), self._prefix("objects"))

    async def remove(self, *, offers_drivers: bool) -> str:
        """Remove everything the check wrote (expired logs included); return what was removed, for the report."""
        removed = 0
        async with open_stores(self.target_url) as stores:
            for tenant in sorted(self.tenants):  # the sealing suite's: keys destroyed, then the data
                removed += await forget(stores, tenant)
            # the sealing suite's namespaces, and on a sealed store the area's own (its history's data keys)
            namespaces = self.namespaces | ({self.name} if isinstance(stores, SealedStores) else set[str]())
            for namespace in sorted(namespaces):
                removed += await forget(stores, namespace=namespace)
            provider = stores.history_provider(namespace=self.name)
            if isinstance(provider, LogHistoryProvider):
                removed += await sweep_logs(provider.driver, provider.keys.namespace_segment + "/")
            for store in (stores.file_store(**self.options("files")), stores.session_store(**self.options("sessions"))):
                driver = getattr(store, "driver", None)
                prefix = getattr(store, "prefix", None)
                if isinstance(driver, ObjectDriver) and isinstance(prefix, str):
                    removed += await sweep_objects(driver, prefix)
                await close_store(store)
            if isinstance(provider, LogHistoryProvider):
                removed += await _delete_logs(provider.driver, self.written_history)
            if offers_drivers:
                # Under a sealed store's sealing layer, so a scratch folder's marker and data keys go too.
                sealed = isinstance(stores, SealedStores)
                logs = stores.raw_logs if sealed else stores.log_driver()
                objects = stores.raw_objects if sealed else stores.object_driver()
                removed += await _delete_logs(logs, self.written_logs)
                removed += await sweep_logs(logs, "" if self.by_path else f"{self.name}/")
                removed += await sweep_objects(objects, "" if self.by_path else f"{self.name}/")
            await close_store(provider)
        parts = urlsplit(self.target_url)
        if parts.scheme == "file" and Path(unquote(parts.path)).name == self.name:
            shutil.rmtree(unquote(parts.path), ignore_errors=True)
        given = self.footprint.give_back() if self.footprint is not None else ""
        return f"removed {removed} records the check wrote" + (f"; {given}" if given else "")


class ScratchLogDriver(PrefixedLogDriver):
    """A log driver seen from under ``prefix`` of another, noting in ``written`` every key appended to.

    Expired logs are not listed, so the cleanup deletes what ``written`` holds by key.
    :meth:`aclose` closes the driver underneath only when ``owned``; any other attribute is the
    underlying driver's.
    """

    def __init__(self, driver: LogDriver, prefix: str, written: set[str], *, owned: bool = False) -> None:
        super().__init__(driver, prefix)
        self.written = written
        self.owned = owned

    def __getattr__(self, name: str) -> Any:
        return getattr(self.driver, name)

    async def append(
        self,
        key: str,
        records: Sequence[LogRecord],
        *,
        expected_version: LogVersion,
        session_id: str,
        ttl: float | None = None,
    ) -> LogVersion:
        self.written.add(self.prefix + key)
        return await super().append(key, records, expected_version=expected_version, session_id=session_id, ttl=ttl)

    async def aclose(self) -> None:
        if self.owned:
            await self.driver.aclose()


async def sweep_objects(driver: ObjectDriver, prefix: str) -> int:
    """Delete every object whose key starts with ``prefix``; return how many."""
    removed = 0
    while True:
        listing = await driver.list(prefix, delimiter=None, limit=500)
        if not listing.keys:
            return removed
        deleted = 0
        for key in listing.keys:
            deleted += bool(await driver.delete(key))
        removed += deleted
        if not deleted:
            return removed


async def sweep_logs(driver: LogDriver, prefix: str) -> int:
    """Delete every log whose key starts with ``prefix``; return how many."""
    removed = 0
    while True:
        logs = await driver.list_logs(prefix, limit=500)
        if not logs:
            return removed
        deleted = 0
        for log in logs:
            deleted += bool(await driver.delete(log.key))
        removed += deleted
        if not deleted:
            return removed


async def _delete_logs(driver: LogDriver, keys: set[str]) -> int:
    """Delete the logs at ``keys`` (expired ones included); keys a clause tried and the driver refused are skipped."""
    removed = 0
    for key in sorted(keys):
        try:
            removed += bool(await driver.delete(key))
        except ValueError:
            continue
    return removed
