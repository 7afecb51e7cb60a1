"""``agent-stores repair``: rewrite a session's object-store history from what is readable, saying what is lost."""

from __future__ import annotations

import shlex
from dataclasses import dataclass
from typing import Any, Literal

from agent_stores.core import LogHistoryProvider, LogRecord, StoreConflictError, decode_message, redact_url
from agent_stores.core.objectlog import Gap, ObjectLogDriver, Salvage

from ._errors import EXIT_CONFLICT, CliError
from ._open import open_url
from ._scope import Scope, no_session

__all__ = ["RepairConflict", "RepairReport", "repair", "repair_command"]

Status = Literal["whole", "repaired", "would-repair"]


class RepairConflict(CliError):
    """The session changed between reading it and rewriting it; nothing was written (exit 3)."""

    exit_code = EXIT_CONFLICT


def repair_command(url: str, session_id: str, scope: Scope) -> str:
    """The ``agent-stores repair`` command line that shows what a repair of this session keeps."""
    return f"agent-stores repair {shlex.quote(redact_url(url))} {shlex.quote(session_id)}{scope.flags()} --dry-run"


def _runs(positions: list[int]) -> list[tuple[int, int]]:
    """Ascending ``positions`` as runs ``(first, end)``, ``end`` exclusive."""
    runs: list[tuple[int, int]] = []
    for position in positions:
        if runs and runs[-1][1] == position:
            runs[-1] = (runs[-1][0], position + 1)
        else:
            runs.append((position, position + 1))
    return runs


def describe_runs(runs: list[tuple[int, int]]) -> str:
    """``records 0 to 2 and record 7 (4 records)``, or ``none``."""
    if not runs:
        return "none"
    spans = [f"record {a}" if b - a == 1 else f"records {a} to {b - 1}" for a, b in runs]
    count = sum(end - first for first, end in runs)
    return f"{' and '.join(spans)} ({count} record{'s' * (count != 1)})"


def _message(payload: bytes) -> dict[str, Any]:
    try:
        return decode_message(payload).to_dict()
    except ValueError:
        return {"undecodable": payload.decode("utf-8", "replace")}


@dataclass
class RepairReport:
    """What a repair found in a session's history, what it keeps, and what is lost."""

    url: str
    session_id: str
    scope: Scope
    key: str
    status: Status
    length: int
    gaps: list[Gap]
    lost: list[tuple[int, int]]
    dropped: list[tuple[int, int]]
    kept: list[tuple[int, int]]
    keep_all: bool
    dry_run: bool
    dropped_records: list[bytes]

    @property
    def kept_count(self) -> int:
        """Records the session holds after the repair."""
        return sum(end - first for first, end in self.kept)

    def to_json(self) -> dict[str, Any]:
        """The report as one JSON document; dropped messages in full, so nothing readable is lost unseen."""
        return {
            "url": self.url,
            "session_id": self.session_id,
            "tenant": self.scope.tenant,
            "source_id": self.scope.source_id,
            "namespace": self.scope.namespace,
            "key": self.key,
            "status": self.status,
            "records": self.length,
            "gaps": [g._asdict() for g in self.gaps],
            "lost": [{"first": a, "end": b} for a, b in self.lost],
            "dropped": [{"first": a, "end": b} for a, b in self.dropped],
            "kept": [{"first": a, "end": b} for a, b in self.kept],
            "keep_all": self.keep_all,
            "dry_run": self.dry_run,
            "dropped_messages": [_message(p) for p in self.dropped_records],
        }


def _plan(salvage: Salvage, *, keep_all: bool) -> tuple[list[int], list[int]]:
    """The positions kept and the readable positions dropped."""
    readable = [i for i, record in enumerate(salvage.records) if record is not None]
    start = 0 if keep_all else salvage.after_gap
    return [i for i in readable if i >= start], [i for i in readable if i < start]


async def repair(url: str, session_id: str, scope: Scope, *, keep_all: bool, dry_run: bool) -> RepairReport:
    """Rewrite the history of ``session_id`` from what is readable (unless ``dry_run``) and report it.

    Keeps the records after the newest gap (the whole end of the conversation, every tool call
    with the result stored after it), or every readable record in order with ``keep_all``.
    The rewrite is one conditional write: a session saved to meanwhile is left as it is.

    Raises:
        CliError: The URL's history is not an object-store log, or it holds no such session.
        RepairConflict: The session changed while it was repaired; nothing was written.
    """
    async with open_url(url, must_exist=True) as stores:
        provider = scope.history(stores)
        driver = getattr(provider, "driver", None)
        if not isinstance(provider, LogHistoryProvider) or not isinstance(driver, ObjectLogDriver):
            raise CliError(
                f"the history of {redact_url(url)} is not an object-store log (S3, fsspec): it has no segments "
                "to repair"
            )
        key = provider.keys.history(scope.source_id, session_id)
        salvage = await driver.salvage(key)
        if salvage is None:
            raise no_session(url, session_id, scope)
        kept, dropped = _plan(salvage, keep_all=keep_all)
        status: Status = "whole" if not salvage.gaps else "would-repair" if dry_run else "repaired"
        if status == "repaired":
            records = [r for r in (salvage.records[i] for i in kept) if r is not None]
            await _rewrite(driver, key, records, salvage)
        return RepairReport(
            url=redact_url(url),
            session_id=session_id,
            scope=scope,
            key=key,
            status=status,
            length=salvage.length,
            gaps=salvage.gaps,
            lost=salvage.lost,
            dropped=_runs(dropped),
            kept=_runs(kept),
            keep_all=keep_all,
            dry_run=dry_run,
            dropped_records=[r.payload for r in (salvage.records[i] for i in dropped) if r is not None],
        )


async def _rewrite(driver: ObjectLogDriver, key: str, records: list[LogRecord], salvage: Salvage) -> None:
    """Replace the log with ``records`` while it is as salvaged, then read it back."""
    try:
        await driver.rewrite(key, records, expected_version=salvage.version, session_id=salvage.session_id)
    except StoreConflictError as err:
        raise RepairConflict(
            f"history log {key!r} changed while it was repaired (a save or a delete); nothing was written: "
            "run the repair again"
        ) from err
    stored = await driver.read(key)
    if stored != [r.payload for r in records]:
        raise CliError(f"history log {key!r} does not read back as repaired; it changed meanwhile")
