"""What a store holds, per tenant and namespace: :func:`collect_stats` and its result dataclasses.

Counts come from the drivers' listings, page by page, each bounded by ``max_keys``; message
counts and bytes from reading a sample of the sessions listed (an exact count would read every
log). Activity times come from what the store records: checkpoint timestamps (from their index
keys) and the last changes retention sweeps observed (:mod:`agent_stores.core.retention`).
Histories, files, snapshots and todos carry no time of their own.
"""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from .compaction import is_compaction_record
from .drivers import LogDriver, ObjectDriver
from .keys import TENANTS, KeySpace
from .listing import Segment, iter_pages
from .prefixed import within
from .retain import is_staging_log

if TYPE_CHECKING:
    from .stores import Stores

__all__ = ["NamespaceStats", "StoreStats", "TenantStats", "collect_stats"]

_PAGE = 500
_EPOCH = datetime(1, 1, 1, tzinfo=UTC)
_ORDER_MAX = 10**18 - 1  # the checkpoint index's inverted timestamp (see core/checkpoints.py)


@dataclass(slots=True)
class NamespaceStats:
    """One namespace of one tenant (or of the unscoped stores).

    ``sessions`` counts histories (one per session and source id). ``messages`` and ``bytes``
    (stored record bytes) are exact unless ``sampled``: then they are estimated from
    ``sample_size`` sessions read at random. ``complete`` is false when a listing stopped at
    ``max_keys``: the counts are then lower bounds.
    """

    namespace: str | None
    namespace_segment: str
    sessions: int = 0
    messages: int = 0
    bytes: int = 0
    todos: int = 0
    checkpoints: int = 0
    oldest_activity: datetime | None = None
    newest_activity: datetime | None = None
    sampled: bool = False
    sample_size: int = 0
    complete: bool = True

    def _saw(self, moment: datetime) -> None:
        self.oldest_activity = moment if self.oldest_activity is None else min(self.oldest_activity, moment)
        self.newest_activity = moment if self.newest_activity is None else max(self.newest_activity, moment)


@dataclass(slots=True)
class TenantStats:
    """One tenant (``tenant_segment`` ``None``: the unscoped stores) and its namespaces.

    ``files`` and ``snapshots`` (stored session snapshots) belong to the tenant as a whole; the
    file store and the session store take no namespace.
    """

    tenant: str | None
    tenant_segment: str | None
    files: int = 0
    snapshots: int = 0
    complete: bool = True
    namespaces: list[NamespaceStats] = field(default_factory=lambda: list[NamespaceStats]())

    @property
    def sessions(self) -> int:
        """Histories over every namespace."""
        return sum(n.sessions for n in self.namespaces)

    @property
    def messages(self) -> int:
        """Messages over every namespace (estimated where a namespace is ``sampled``)."""
        return sum(n.messages for n in self.namespaces)

    @property
    def sampled(self) -> bool:
        """Whether any namespace's message count or bytes are estimates."""
        return any(n.sampled for n in self.namespaces)


@dataclass(slots=True)
class StoreStats:
    """One page of tenants: the unscoped stores first (on the first page), then tenants in key order.

    ``next_after`` is the tenant segment to pass as ``after`` for the next page (``None``: last page).
    """

    tenants: list[TenantStats]
    next_after: str | None
    sample: int
    max_keys: int

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready document: every field, times as ISO 8601 strings."""

        def convert(value: Any) -> Any:
            if isinstance(value, datetime):
                return value.isoformat()
            if isinstance(value, dict):
                return {k: convert(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType]
            if isinstance(value, list):
                return [convert(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
            return value

        tenants: list[dict[str, Any]] = []
        for tenant in self.tenants:
            document: dict[str, Any] = convert(asdict(tenant))
            document |= {"sessions": tenant.sessions, "messages": tenant.messages, "sampled": tenant.sampled}
            tenants.append(document)
        return {"tenants": tenants, "next_after": self.next_after, "sample": self.sample, "max_keys": self.max_keys}


async def collect_stats(
    stores: Stores,
    *,
    tenant: str | None = None,
    after: str | None = None,
    limit: int = 100,
    sample: int = 50,
    max_keys: int = 100_000,
    seed: int = 0,
) -> StoreStats:
    """Count what ``stores`` holds, per tenant and namespace, one page of tenants at a time.

    Args:
        stores: Open stores whose backend hands out its drivers.
        tenant: Only this tenant (``after`` and ``limit`` are then ignored).
        after: Start after this tenant segment (``next_after`` of the previous page); the
            unscoped stores are counted on the first page only.
        limit: Tenants per page.
        sample: Sessions read per namespace for message counts and bytes; a namespace with
            more sessions is estimated from a random sample of this many (``sampled``).
        max_keys: Entries listed at most per namespace and kind; past it counts are lower
            bounds (``complete`` is false).
        seed: Seed of the sample (the same store gives the same estimate).

    Raises:
        TypeError: The backend does not hand out its drivers.
        ValueError: ``limit``, ``sample`` or ``max_keys`` is not positive, or ``tenant`` is empty.
    """
    for name, value in (("limit", limit), ("sample", sample), ("max_keys", max_keys)):
        if isinstance(value, bool) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    objects, logs = stores.object_driver(), stores.log_driver()
    counter = _Counter(stores, objects, logs, sample=sample, max_keys=max_keys, rng=random.Random(seed))
    if tenant is not None:
        root = KeySpace(tenant=tenant).root
        segment = root[len(TENANTS) + 1 : -1]
        return StoreStats([await counter.tenant(Segment(segment, tenant))], None, sample, max_keys)
    found: list[TenantStats] = []
    if after is None:
        found.append(await counter.tenant(None))
    page = await stores.list_tenants(after=after, limit=limit)
    for entry in page:
        found.append(await counter.tenant(entry))
    next_after = page[-1].segment if len(page) == limit else None
    return StoreStats(found, next_after, sample, max_keys)


class _Counter:
    def __init__(
        self, stores: Stores, objects: ObjectDriver, logs: LogDriver, *, sample: int, max_keys: int, rng: random.Random
    ) -> None:
        self.stores = stores
        self.objects = objects
        self.logs = logs
        self.sample = sample
        self.max_keys = max_keys
        self.rng = rng

    async def tenant(self, entry: Segment | None) -> TenantStats:
        segment = None if entry is None else entry.segment
        root = "" if segment is None else f"{TENANTS}/{segment}/"
        stats = TenantStats(None if entry is None else entry.name, segment)
        files, files_complete = await self._count(root + "files/", lambda k: not k.endswith("/"))
        snapshots, snapshots_complete = await self._count(root + "sessions/", lambda k: k.endswith(".json"))
        stats.files, stats.snapshots = files, snapshots
        stats.complete = files_complete and snapshots_complete
        names: dict[str, Segment] = {}
        for kind in ("history", "todos", "checkpoints"):
            async for found in iter_pages(
                lambda a, n, kind=kind: self.stores.list_namespaces(kind, tenant_segment=segment, after=a, limit=n)
            ):
                names.setdefault(found.segment, found)
        for entry in sorted(names.values(), key=lambda e: (e.name is None, e.name or e.segment)):
            stats.namespaces.append(await self._namespace(root, entry))
        return stats

    async def _namespace(self, root: str, entry: Segment) -> NamespaceStats:
        stats = NamespaceStats(entry.name, entry.segment)
        logs = within(self.logs, root)  # the object-store log keeps a tenant's history in its own folder
        keys, stats.complete = await log_keys(logs, f"{entry.segment}/", self.max_keys)
        keys = [k for k in keys if not is_staging_log(k)]  # a retention's staging log is no session
        stats.sessions = len(keys)
        chosen = keys if len(keys) <= self.sample else self.rng.sample(keys, self.sample)
        stats.sampled = len(chosen) < len(keys)
        stats.sample_size = len(chosen)
        messages = size = 0
        for key in chosen:
            payloads = await logs.read(key)
            records = [p for p in payloads if not is_compaction_record(p)]
            messages += len(records)
            size += sum(len(p) for p in payloads)
            seen = await _observed(self.objects, root, "history/" + key)
            if seen is not None:
                stats._saw(seen)  # pyright: ignore[reportPrivateUsage]
        scale = len(keys) / len(chosen) if chosen else 0
        stats.messages, stats.bytes = round(messages * scale), round(size * scale)
        stats.todos, todos_complete = await self._count(f"{root}todos/{entry.segment}/", lambda k: k.endswith(".json"))
        checkpoints = f"{root}checkpoints/{entry.segment}/"
        stats.checkpoints, records_complete = await self._count(checkpoints + "records/", lambda k: k.endswith(".json"))
        index, index_complete = await self._keys(checkpoints + "workflows/")
        for key in index:
            moment = _checkpoint_time(key)
            if moment is not None:
                stats._saw(moment)  # pyright: ignore[reportPrivateUsage]
        stats.complete = stats.complete and todos_complete and records_complete and index_complete
        return stats

    async def _count(self, prefix: str, keep: Callable[[str], bool]) -> tuple[int, bool]:
        keys, complete = await self._keys(prefix)
        return sum(1 for k in keys if keep(k)), complete

    async def _keys(self, prefix: str) -> tuple[list[str], bool]:
        """Every key under ``prefix`` up to ``max_keys``, and whether that was all of them."""
        return await list_keys(self.objects.list, prefix, self.max_keys)


async def log_keys(logs: LogDriver, prefix: str, max_keys: int, *, page: int = _PAGE) -> tuple[list[str], bool]:
    """Every log key under ``prefix``, up to ``max_keys``, and whether that was all."""
    keys: list[str] = []
    after: str | None = None
    while True:
        want = min(page, max_keys - len(keys))
        found = await logs.list_logs(prefix, after=after, limit=want)
        keys.extend(log.key for log in found)
        if len(found) < want:
            return keys, True
        if len(keys) >= max_keys:
            return keys, not await logs.list_logs(prefix, after=keys[-1], limit=1)
        after = keys[-1]


async def list_keys(
    lister: Callable[..., Awaitable[Any]], prefix: str, max_keys: int, *, page: int = _PAGE
) -> tuple[list[str], bool]:
    """Every object key under ``prefix`` (no delimiter), up to ``max_keys``, and whether that was all."""
    keys: list[str] = []
    after: str | None = None
    while True:
        want = min(page, max_keys - len(keys))
        listing = await lister(prefix, delimiter=None, after=after, limit=want)
        keys.extend(listing.keys)
        if len(listing.keys) < want:
            return keys, True
        if len(keys) >= max_keys:
            more = await lister(prefix, delimiter=None, after=keys[-1], limit=1)
            return keys, not more.keys
        after = listing.keys[-1]


def _checkpoint_time(index_key: str) -> datetime | None:
    """The timestamp an index entry's key holds (``<inverted microseconds>.<id>``), or ``None``."""
    order = index_key.rsplit("/", 1)[-1].partition(".")[0]
    if not order.isdigit():
        return None
    try:
        return _EPOCH + timedelta(microseconds=_ORDER_MAX - int(order))
    except OverflowError:
        return None


async def _observed(objects: ObjectDriver, root: str, relative: str) -> datetime | None:
    """The last change a retention sweep observed of one item, or ``None`` (no sweep saw it)."""
    from .retention import read_mark  # retention builds on this module's listing helpers

    mark = await read_mark(objects, root, relative)
    return None if mark is None else datetime.fromtimestamp(mark.since, UTC)
