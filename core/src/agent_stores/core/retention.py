"""The retention sweeper: rules by idle time, age and keep-last-N over every kind, and the marks it keeps.

No record a store writes carries a time (messages, snapshots, files and todo lists hold none;
the drivers give versions, not modification times). A sweep therefore keeps a *mark* per item
it sees — the item's version and when a sweep first saw it at that version — as one small
object ``<root>retention/<item>`` beside the item (``<item>`` is ``history/<log key>`` for a
history, the object key for the others). An item is idle for as long as its version has not
changed since its mark; its age counts from the first sweep that saw it. Checkpoints carry
their own timestamp, which is used for both instead.

A sweep is :func:`plan_sweep` (list, mark, decide) then :func:`apply_sweep` (delete); a dry
run is the plan alone. Each delete is conditional on the version the plan saw: objects through
``delete(if_version=)``, histories through the log driver's ``delete_if_version`` where it has
one (:class:`~agent_stores.core.drivers.ConditionalLogDelete`), else by reading the version
again right before an unconditional delete.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from .bounded import run_bounded
from .checkpoints import index_entry_parts, remove_checkpoint
from .drivers import LogDriver, LogVersion, ObjectDriver, conditional_delete, deletes_conditionally
from .errors import StoreConflictError
from .keys import TENANTS, KeySpace
from .listing import Segment, iter_pages
from .prefixed import within
from .retain import is_staging_log
from .stats import list_keys, log_keys

if TYPE_CHECKING:
    from .stores import Stores

__all__ = [
    "KINDS",
    "MARKS",
    "Mark",
    "RetentionRule",
    "SweepItem",
    "SweepPlan",
    "SweepReport",
    "apply_sweep",
    "mark_key",
    "parse_duration",
    "plan_sweep",
    "read_mark",
    "sweep",
]

#: The folder under a tenant's root (or the store's) holding the sweeps' marks.
MARKS = "retention/"
#: Every kind a sweep can remove.
KINDS = ("history", "sessions", "files", "todos", "checkpoints")

_NO_LIMIT = 10**12
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_EPOCH = datetime(1, 1, 1, tzinfo=UTC)
_ORDER_MAX = 10**18 - 1  # the checkpoint index's inverted timestamp (see core/checkpoints.py)

Progress = Callable[[str, int, int], None]


def parse_duration(text: str) -> float:
    """Seconds in ``"30d"``, ``"12h"``, ``"90m"``, ``"45s"``, ``"2w"`` (or a bare number of seconds).

    Raises:
        ValueError: ``text`` is not such a duration, or it is not positive.
    """
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*", text)
    if match is None:
        raise ValueError(f"not a duration (like 30d, 12h, 90m, 45s, 2w): {text!r}")
    seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    if seconds <= 0:
        raise ValueError(f"a duration must be positive, got {text!r}")
    return seconds


@dataclass(frozen=True, slots=True)
class RetentionRule:
    """What goes: items idle for ``idle`` and/or older than ``age`` (seconds), except the ``keep_last`` newest.

    With both ``idle`` and ``age``, an item goes when both hold. ``keep_last`` keeps the N
    most recently active items of each group (a history namespace and source id, a todo
    namespace, a checkpoint workflow, a tenant's sessions or files) whatever their idle time;
    alone, it removes everything but those N.

    Raises:
        ValueError: No rule is given, or a value is not positive.
    """

    idle: float | None = None
    age: float | None = None
    keep_last: int | None = None

    def __post_init__(self) -> None:
        if self.idle is None and self.age is None and self.keep_last is None:
            raise ValueError("a retention rule needs idle, age or keep_last")
        for name in ("idle", "age"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not value > 0):
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        if self.keep_last is not None and (isinstance(self.keep_last, bool) or self.keep_last < 1):
            raise ValueError(f"keep_last must be a positive integer, got {self.keep_last!r}")

    def matches(self, idle: float | None, age: float | None) -> bool:
        """Whether an item idle for ``idle`` and aged ``age`` (``None``: first seen now) is due."""
        if self.idle is None and self.age is None:
            return True
        if self.idle is not None and (idle is None or idle < self.idle):
            return False
        return self.age is None or (age is not None and age >= self.age)

    def to_json(self) -> dict[str, Any]:
        """The rule as JSON."""
        return {"idle": self.idle, "age": self.age, "keep_last": self.keep_last}


@dataclass(frozen=True, slots=True)
class Mark:
    """What sweeps observed of one item: its version, since when (epoch seconds), and when first seen."""

    version: str
    since: float
    first: float

    def encode(self) -> bytes:
        """The stored form (JSON)."""
        return json.dumps({"version": self.version, "since": self.since, "first": self.first}).encode()

    @classmethod
    def decode(cls, data: bytes) -> Mark | None:
        """The mark ``data`` holds, or ``None`` when it is not one (a damaged mark is treated as absent)."""
        try:
            raw = json.loads(data)
            return cls(str(raw["version"]), float(raw["since"]), float(raw["first"]))
        except (ValueError, KeyError, TypeError):
            return None


def mark_key(root: str, item: str) -> str:
    """The key of the mark of ``item`` (a key relative to ``root``, the store's or a tenant's)."""
    return root + MARKS + item


async def read_mark(objects: ObjectDriver, root: str, item: str) -> Mark | None:
    """The mark of ``item`` under ``root``, or ``None`` (no sweep saw it)."""
    stored = await objects.get(mark_key(root, item))
    return None if stored is None else Mark.decode(stored.data)


@dataclass(slots=True)
class SweepItem:
    """One item a sweep decided to remove, and what became of it.

    ``key`` is relative to the tenant's root (a history's log key, else the object key; a
    checkpoint's record key). ``idle`` and ``age`` are seconds. ``action``: ``delete`` (planned;
    what a dry run reports), ``deleted``, ``changed`` (written since the plan saw it: kept),
    ``gone`` (removed by someone else meanwhile, another sweep for instance), ``error``.
    ``conditional`` says whether the delete was conditional on the version in one request.
    """

    kind: str
    tenant: str | None
    tenant_segment: str | None
    group: str
    key: str
    version: str
    idle: float
    age: float
    action: str = "delete"
    conditional: bool = True
    detail: str = ""
    _log_version: LogVersion = None
    _extra: str | None = None

    def to_json(self) -> dict[str, Any]:
        """The item as JSON."""
        return {
            "kind": self.kind,
            "tenant": self.tenant,
            "tenant_segment": self.tenant_segment,
            "group": self.group,
            "key": self.key,
            "idle_seconds": round(self.idle, 3),
            "age_seconds": round(self.age, 3),
            "action": self.action,
            "conditional": self.conditional,
            "detail": self.detail,
        }


@dataclass(slots=True)
class SweepPlan:
    """What a sweep saw and decided: the items to remove (``items``), and counts of what it looked at.

    ``seen`` counts items per kind; ``first_seen`` how many had no mark at their version (their
    idle clock starts at this sweep; a dry run writes no mark, so a real sweep starts it).
    ``orphan_marks`` are the keys and versions of marks whose item no longer exists (deleted by
    other means); applying the plan removes them too.
    """

    rules: dict[str, RetentionRule]
    now: float
    dry_run: bool
    items: list[SweepItem] = field(default_factory=lambda: list[SweepItem]())
    seen: dict[str, int] = field(default_factory=lambda: dict[str, int]())
    first_seen: int = 0
    orphan_marks: list[tuple[str, str]] = field(default_factory=lambda: list[tuple[str, str]]())


@dataclass(slots=True)
class SweepReport:
    """A plan and its outcome (for a dry run, the plan: every item ``delete``)."""

    plan: SweepPlan

    @property
    def items(self) -> list[SweepItem]:
        """Every item the sweep decided to remove, with what became of it."""
        return self.plan.items

    def count(self, action: str) -> int:
        """How many items ended with ``action``."""
        return sum(1 for item in self.plan.items if item.action == action)

    @property
    def ok(self) -> bool:
        """No item failed."""
        return self.count("error") == 0

    def to_json(self) -> dict[str, Any]:
        """The report as JSON."""
        plan = self.plan
        actions = ("delete", "deleted", "changed", "gone", "error")
        return {
            "dry_run": plan.dry_run,
            "now": datetime.fromtimestamp(plan.now, UTC).isoformat(),
            "rules": {kind: rule.to_json() for kind, rule in plan.rules.items()},
            "seen": plan.seen,
            "first_seen": plan.first_seen,
            "orphan_marks": len(plan.orphan_marks),
            "counts": {a: self.count(a) for a in actions if self.count(a)},
            "items": [item.to_json() for item in plan.items],
        }


@dataclass(slots=True)
class _Seen:
    """An item as listed: where it is, its version and activity, before the rule decides."""

    kind: str
    tenant: Segment | None
    group: str
    key: str
    version: str
    log_version: LogVersion
    since: float | None  # None: first seen now
    first: float | None
    extra: str | None = None


def _rules(rule: RetentionRule | Mapping[str, RetentionRule], kinds: Sequence[str] | None) -> dict[str, RetentionRule]:
    if isinstance(rule, RetentionRule):
        chosen = list(kinds) if kinds is not None else list(KINDS)
        rules = dict.fromkeys(chosen, rule)
    else:
        rules = dict(rule)
    unknown = sorted(set(rules) - set(KINDS))
    if unknown or not rules:
        raise ValueError(f"kinds are {', '.join(KINDS)}; got {', '.join(unknown) or 'none'}")
    return rules


async def plan_sweep(
    stores: Stores,
    rule: RetentionRule | Mapping[str, RetentionRule],
    *,
    kinds: Sequence[str] | None = None,
    tenants: Sequence[str] | None = None,
    unscoped: bool | None = None,
    dry_run: bool = False,
    concurrency: int = 16,
    clock: Callable[[], float] = time.time,
    progress: Progress | None = None,
) -> SweepPlan:
    """List every item of the chosen kinds, record what is new in the marks, and decide what goes.

    Args:
        stores: Open stores whose backend hands out its drivers.
        rule: One rule for ``kinds`` (default every kind), or a rule per kind.
        kinds: The kinds ``rule`` applies to (with a single rule).
        tenants: Only these tenants (default: every tenant the store holds).
        unscoped: Sweep the stores outside every tenant too (default: when ``tenants`` is not given).
        dry_run: Write no mark (a dry run changes nothing).
        concurrency: Requests in flight at once.
        clock: Epoch seconds now.
        progress: Called with ``(phase, done, total)``.

    Raises:
        TypeError: The backend does not hand out its drivers.
        ValueError: A kind is unknown or ``concurrency`` is below 1.
    """
    rules = _rules(rule, kinds)
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    now = clock()
    plan = SweepPlan(rules, now, dry_run)
    objects, logs = stores.object_driver(), stores.log_driver()
    scopes: list[Segment | None] = [None] if (unscoped if unscoped is not None else tenants is None) else []
    if tenants is not None:
        for name in tenants:
            root = KeySpace(tenant=name).root
            scopes.append(Segment(root[len(TENANTS) + 1 : -1], name))
    else:
        scopes.extend([entry async for entry in stores.iter_tenants()])
    seen: list[_Seen] = []
    for scope in scopes:
        for kind in rules:
            seen.extend(await _list(stores, objects, logs, scope, kind))
            if progress is not None:
                progress("listing", len(seen), 0)
    done = 0

    async def observe(item: _Seen) -> None:
        nonlocal done
        await _observe(objects, logs, item, now, write=not dry_run)
        done += 1
        if progress is not None:
            progress("looking", done, len(seen))

    await run_bounded(seen, observe, concurrency)
    for item in seen:
        plan.seen[item.kind] = plan.seen.get(item.kind, 0) + 1
        plan.first_seen += item.since is None
    plan.items = _decide(seen, rules, now)
    plan.orphan_marks = await _orphans(objects, scopes, rules, seen, concurrency)
    return plan


async def _orphans(
    objects: ObjectDriver,
    scopes: Sequence[Segment | None],
    rules: Mapping[str, RetentionRule],
    seen: Sequence[_Seen],
    concurrency: int,
) -> list[tuple[str, str]]:
    """The marks (key, version) of the swept kinds whose item the listing did not find."""
    known = {mark_key(_root(item), _mark_item(item)) for item in seen}
    keys: list[str] = []
    for scope in scopes:
        root = "" if scope is None else f"{TENANTS}/{scope.segment}/"
        for kind in rules:
            if kind != "checkpoints":
                found, _ = await list_keys(objects.list, mark_key(root, f"{kind}/"), _NO_LIMIT)
                keys.extend(k for k in found if k not in known)
    orphans: list[tuple[str, str]] = []

    async def version(key: str) -> None:
        current = await objects.head(key)
        if current is not None:
            orphans.append((key, current))

    await run_bounded(keys, version, concurrency)
    return sorted(orphans)


async def _list(
    stores: Stores, objects: ObjectDriver, logs: LogDriver, scope: Segment | None, kind: str
) -> list[_Seen]:
    root = "" if scope is None else f"{TENANTS}/{scope.segment}/"
    found: list[_Seen] = []
    if kind == "history":
        view = within(logs, root)
        segment = None if scope is None else scope.segment
        async for namespace in iter_pages(
            lambda a, n: stores.list_namespaces("history", tenant_segment=segment, after=a, limit=n)
        ):
            keys, _ = await log_keys(view, f"{namespace.segment}/", _NO_LIMIT)
            for key in keys:
                if not is_staging_log(key):  # a retention's staging log goes with its run, not by age
                    found.append(_Seen(kind, scope, key.rpartition("/")[0], key, "", None, None, None))
        return found
    if kind == "checkpoints":
        keys, _ = await list_keys(objects.list, root + "checkpoints/", _NO_LIMIT)
        for key in keys:
            relative = key[len(root) :]
            parts = relative.split("/")  # checkpoints/<ns>/workflows/<workflow>/<order>.<id>
            if len(parts) != 5 or parts[2] != "workflows":
                continue
            order, id_segment = index_entry_parts(relative)
            if not order.isdigit() or not id_segment:
                continue
            try:
                moment = (_EPOCH + timedelta(microseconds=_ORDER_MAX - int(order))).timestamp()
            except OverflowError:
                continue
            record = f"checkpoints/{parts[1]}/records/{id_segment}.json"
            found.append(_Seen(kind, scope, "/".join(parts[1:4]), record, "", None, moment, moment, relative))
        return found
    keys, _ = await list_keys(objects.list, f"{root}{kind}/", _NO_LIMIT)
    for key in keys:
        relative = key[len(root) :]
        if kind == "files" and relative.endswith("/"):
            continue  # an empty directory's marker
        if kind in ("sessions", "todos") and not relative.endswith(".json"):
            continue  # a quarantined corrupt snapshot is left for inspection
        group = kind if kind != "todos" else relative.split("/")[1]
        found.append(_Seen(kind, scope, group, relative, "", None, None, None))
    return found


def _root(item: _Seen) -> str:
    return "" if item.tenant is None else f"{TENANTS}/{item.tenant.segment}/"


def _mark_item(item: _Seen) -> str:
    return "history/" + item.key if item.kind == "history" else item.key


async def _observe(objects: ObjectDriver, logs: LogDriver, item: _Seen, now: float, *, write: bool) -> None:
    """Read the item's version, and its mark; start its clock (a new mark) when its version is new."""
    root = _root(item)
    if item.kind == "history":
        item.log_version = (await within(logs, root).tail(item.key, 0)).version
        item.version = "" if item.log_version is None else json.dumps(item.log_version)
    else:
        item.version = await objects.head(root + item.key) or ""
    if item.kind != "checkpoints":  # a checkpoint's activity is its timestamp
        await _compare(objects, item, now, write=write)


async def _compare(objects: ObjectDriver, item: _Seen, now: float, *, write: bool) -> None:
    root = _root(item)
    mark = await read_mark(objects, root, _mark_item(item))
    if mark is not None and mark.version == item.version:
        item.since, item.first = mark.since, mark.first
        return
    if write and item.version:
        first = mark.first if mark is not None else now
        await objects.put(mark_key(root, _mark_item(item)), Mark(item.version, now, first).encode())


def _decide(seen: list[_Seen], rules: Mapping[str, RetentionRule], now: float) -> list[SweepItem]:
    groups: dict[tuple[str, str | None, str], list[_Seen]] = {}
    for item in seen:
        if not item.version:
            continue  # gone between listing and looking
        groups.setdefault((item.kind, None if item.tenant is None else item.tenant.segment, item.group), []).append(
            item
        )
    chosen: list[SweepItem] = []
    for (kind, _, _), members in sorted(groups.items(), key=lambda g: (g[0][0], g[0][1] or "", g[0][2])):
        rule = rules[kind]
        members.sort(key=lambda i: (-(now if i.since is None else i.since), i.key))
        kept = rule.keep_last or 0
        for item in members[kept:]:
            idle = None if item.since is None else now - item.since
            age = None if item.first is None else now - item.first
            if not rule.matches(idle, age):
                continue
            chosen.append(
                SweepItem(
                    kind,
                    None if item.tenant is None else item.tenant.name,
                    None if item.tenant is None else item.tenant.segment,
                    item.group,
                    item.key,
                    item.version,
                    idle or 0.0,
                    age or 0.0,
                    _log_version=item.log_version,
                    _extra=item.extra,
                )
            )
    return chosen


async def apply_sweep(
    stores: Stores, plan: SweepPlan, *, concurrency: int = 16, progress: Progress | None = None
) -> SweepReport:
    """Delete what ``plan`` decided, each item only if it is still at the version the plan saw.

    An item written since is kept (``changed``); one already removed is ``gone``. Safe to run
    from several hosts at once: each item is removed once, by whichever host gets there first.
    A failure of one item is reported (``error``) and the others go on.
    """
    objects, logs = stores.object_driver(), stores.log_driver()
    done = 0

    async def remove(item: SweepItem) -> None:
        nonlocal done
        try:
            await _remove(objects, logs, item)
        except Exception as err:  # one item's failure is reported; the others go on
            item.action, item.detail = "error", f"{type(err).__name__}: {err}"
        done += 1
        if progress is not None:
            progress("deleting", done, len(plan.items))

    async def forget_mark(orphan: tuple[str, str]) -> None:
        with contextlib.suppress(StoreConflictError):  # written again meanwhile: its item is back
            await objects.delete(orphan[0], if_version=orphan[1])

    if not plan.dry_run:
        await run_bounded(list(plan.items), remove, concurrency)
        await run_bounded(plan.orphan_marks, forget_mark, concurrency)
    return SweepReport(plan)


async def _remove(objects: ObjectDriver, logs: LogDriver, item: SweepItem) -> None:
    root = "" if item.tenant_segment is None else f"{TENANTS}/{item.tenant_segment}/"
    mark = mark_key(root, "history/" + item.key if item.kind == "history" else item.key)
    if item.kind == "history":
        await _remove_log(logs, root, item)
    else:
        entry = None if item._extra is None else root + item._extra  # pyright: ignore[reportPrivateUsage]
        if entry is not None:  # a checkpoint: its index entry goes first, as the storage's own delete does
            removed = await remove_checkpoint(objects, root + item.key, item.version, entry)
        else:
            try:
                await objects.delete(root + item.key, if_version=item.version)
                removed = True
            except StoreConflictError:
                removed = False
        if not removed:
            item.action = "changed" if await objects.head(root + item.key) is not None else "gone"
            return
        item.action = "deleted"
    if item.action == "deleted" and item.kind != "checkpoints":
        await objects.delete(mark)


async def _remove_log(logs: LogDriver, root: str, item: SweepItem) -> None:
    version = item._log_version  # pyright: ignore[reportPrivateUsage]
    view = within(logs, root)
    if deletes_conditionally(view):
        try:
            await conditional_delete(view).delete_if_version(item.key, version)
        except StoreConflictError:
            item.action = "gone" if (await view.tail(item.key, 0)).version is None else "changed"
            return
        item.action = "deleted"
        return
    item.conditional = False
    tail = await view.tail(item.key, 0)
    if tail.version != version:
        item.action = "gone" if tail.version is None else "changed"
        return
    existed = await view.delete(item.key)
    item.action = "deleted" if existed else "gone"


async def sweep(
    stores: Stores,
    rule: RetentionRule | Mapping[str, RetentionRule],
    *,
    kinds: Sequence[str] | None = None,
    tenants: Sequence[str] | None = None,
    unscoped: bool | None = None,
    dry_run: bool = False,
    concurrency: int = 16,
    clock: Callable[[], float] = time.time,
    progress: Progress | None = None,
) -> SweepReport:
    """Plan a sweep and apply it (a dry run plans only and writes nothing); see :func:`plan_sweep`."""
    plan = await plan_sweep(
        stores,
        rule,
        kinds=kinds,
        tenants=tenants,
        unscoped=unscoped,
        dry_run=dry_run,
        concurrency=concurrency,
        clock=clock,
        progress=progress,
    )
    return await apply_sweep(stores, plan, concurrency=concurrency, progress=progress)
