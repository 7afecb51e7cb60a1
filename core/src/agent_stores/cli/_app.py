"""The ``agent-stores`` command line (typer, with rich output)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table

from ._command import Command, Group
from ._errors import EXIT_FAILED, CliError
from ._output import fail, guarded, out, phased_progress, plural, print_json, print_table, progress_bar
from ._scope import Scope

__all__ = ["app", "main"]

app = typer.Typer(
    name="agent-stores",
    cls=Group,
    help="Check, look inside, migrate, repair and demo durable stores for Microsoft Agent Framework agents.\n\n"
    "Exit codes: 0 ok, 1 a check or verification failed, 2 bad input, an unreachable or missing store, "
    "3 a migration or repair refused by a conflict, 4 stored data that cannot be read.",
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    add_completion=False,
)


def version_text() -> str:
    """The installed distributions: the command's, the core's, and each backend's with its URL schemes."""
    from importlib.metadata import PackageNotFoundError, entry_points, version

    from agent_stores.core.stores import ENTRY_POINT_GROUP

    lines: list[str] = []
    with contextlib.suppress(PackageNotFoundError):  # installed as agent-stores-core[cli]: no umbrella
        lines.append(f"agent-stores {version('agent-stores')}")
    schemes: dict[tuple[str, str], list[str]] = {}
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        dist = entry.dist
        key = (dist.name, dist.version) if dist is not None else ("(unknown distribution)", "")
        schemes.setdefault(key, []).append(entry.name)
    core = ("agent-stores-core", version("agent-stores-core"))
    schemes.setdefault(core, [])
    for (name, number), names in sorted(schemes.items()):
        lines.append(f"  {name} {number}" + (f" ({', '.join(sorted(names))})" if names else ""))
    return "\n".join(lines)


def _print_version(value: bool) -> None:
    if value:
        out.print(escape(version_text()))
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Show the installed versions and backends."
        ),
    ] = False,
) -> None:
    """Check, look inside, migrate, repair and demo durable stores for Microsoft Agent Framework agents."""
    del version


JsonOption = Annotated[
    bool, typer.Option("--json", help="Print one JSON document on stdout (for scripts and CI), also on failure.")
]
VerboseOption = Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks and full failure details.")]


# -- check ----------------------------------------------------------------------------------------


@app.command(
    cls=Command,
    epilog="[bold]Examples[/]\n\n"
    "  agent-stores check sqlite:///agent.db\n\n"
    "  agent-stores check redis://localhost:6379/0 --suite history --suite sessions\n\n"
    "  agent-stores check file:///srv/agent --json > conformance.json\n\n"
    "  agent-stores check my_package.stores:open_history --capability windowed_load\n\n"
    "  agent-stores check my_package.stores:open_files -k search",
)
def check(
    target: Annotated[
        str,
        typer.Argument(metavar="TARGET", help="A store URL (scheme://...) or module:attr, a factory of your store."),
    ],
    suite: Annotated[
        list[str] | None,
        typer.Option(
            "--suite",
            "-s",
            help="With a URL: run only this suite (history, files, sessions, checkpoints, todos, "
            "log_driver, object_driver; sealing on a sealed URL); repeat for more.",
        ),
    ] = None,
    capability: Annotated[
        list[str] | None,
        typer.Option(
            "--capability",
            "-c",
            help="Declare a capability: [SUITE.]NAME[=VALUE] (bare name = true, VALUE is JSON); repeatable. "
            "Overrides what the backend or the factory declares.",
        ),
    ] = None,
    clause: Annotated[
        str | None, typer.Option("--clause", "-k", help="Run only clauses matching this pytest -k expression.")
    ] = None,
    allow_purge: Annotated[
        bool,
        typer.Option(
            "--allow-purge",
            help="With a URL: also run the purge_expired clauses "
            "(they remove already-expired data of the whole store).",
        ),
    ] = False,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Run the conformance suites against a live store URL or a factory of your own store.

    A [bold]URL[/] runs every suite its backend offers, with the capabilities the backend
    declares, in a scratch namespace / prefix of its own; what the check wrote is removed at
    the end, and nothing else is touched. A [bold]module:attr[/] is a callable returning a
    history provider, file store, session store, checkpoint storage, todo store, log driver
    or object driver (sync or async, over the same data on every call); its suite is chosen
    by what it returns, its capabilities come from a `capabilities` attribute on it and
    `--capability` flags. A sealed URL (keyring=, kms_key_id=) also runs the encryption
    clause set (suite sealing), as does a callable taking `provider` and returning sealed stores.

    Exit 0 when every clause passes, 1 when any fails, 2 on bad input or an unreachable store.
    """
    from ._check import print_report, run_check

    with progress_bar(transient=True) as progress:
        task = progress.add_task("conformance", total=None)

        def advance(done: int, total: int, clause: str) -> None:
            progress.update(task, completed=done, total=total or None, description=clause[:48] or "conformance")

        report = guarded(
            verbose,
            lambda: run_check(
                target,
                capability_flags=capability or [],
                suites=suite or [],
                clause_filter=clause,
                allow_purge=allow_purge,
                progress=advance,
            ),
            as_json=as_json,
        )
    if as_json:
        print_json(report.to_json())
    else:
        print_report(report, out, verbose=verbose)
    if not report.ok:
        raise typer.Exit(EXIT_FAILED)


def main() -> None:
    """Entry point of the ``agent-stores`` script."""
    import warnings

    from agent_framework._feature_stage import ExperimentalWarning

    # The framework marks its storage protocols experimental on import; the command's output is about the stores.
    warnings.filterwarnings("ignore", category=ExperimentalWarning)
    app()


# -- look inside a store ----------------------------------------------------------------------------

SourceOption = Annotated[str, typer.Option("--source-id", help="The history provider's source id.")]
NamespaceOption = Annotated[str, typer.Option("--namespace", help="The history namespace.")]
TenantOption = Annotated[
    str | None, typer.Option("--tenant", help="Read this tenant's stores (what stores.tenant(...) sees).")
]
LimitOption = Annotated[int, typer.Option("--limit", min=1, help="Entries per page.")]


def _run(verbose: bool, coroutine_factory: Callable[[], Any], *, as_json: bool = False) -> Any:
    import asyncio

    return guarded(verbose, lambda: asyncio.run(coroutine_factory()), as_json=as_json)


@app.command(
    cls=Command,
    epilog="[bold]Examples[/]\n\n  agent-stores sessions sqlite:///agent.db\n\n"
    "  agent-stores sessions redis://localhost:6379/0 --tenant acme --json\n\n"
    "  agent-stores sessions file:///srv/agent --snapshots",
)
def sessions(
    url: Annotated[str, typer.Argument(metavar="URL", help="A store URL.")],
    tenant: TenantOption = None,
    source_id: SourceOption = "history",
    namespace: NamespaceOption = "",
    after: Annotated[str | None, typer.Option("--after", help="Start after this session id (paging).")] = None,
    limit: LimitOption = 50,
    snapshots: Annotated[
        bool, typer.Option("--snapshots", help="List session snapshots instead of histories.")
    ] = False,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """List the sessions a store holds (one page), with message counts and whether a snapshot exists.

    The snapshot column reads the same tenant's session store as the history. A store that does
    not exist is an error (exit 2); one without sessions says so.
    """
    from ._inspect import list_sessions, list_snapshots

    scope = Scope(tenant, namespace, source_id)
    if snapshots:
        page = _run(verbose, lambda: list_snapshots(url, scope, after=after, limit=limit), as_json=as_json)
        rows = page["snapshots"]
    else:
        page = _run(verbose, lambda: list_sessions(url, scope, after=after, limit=limit), as_json=as_json)
        rows = page["sessions"]
    if as_json:
        print_json(page)
        return
    if not rows:
        what = "session snapshots" if snapshots else "sessions with history"
        out.print(
            f"no {what}{' after ' + escape(repr(after)) if after else ''} in {escape(page['url'])}"
            f"{escape(scope.describe(history=not snapshots))}"
        )
        return
    table = Table(show_edge=False, box=None)
    for column in rows[0].keys() if rows else ["session_id"]:
        table.add_column(str(column))
    for row in rows:
        table.add_row(*(escape(str(v)) for v in row.values()))
    print_table(table)
    if page["next_after"]:
        out.print(f"more: --after {escape(page['next_after'])}")


@app.command(
    cls=Command,
    epilog="[bold]Examples[/]\n\n  agent-stores history sqlite:///agent.db demo\n\n"
    "  agent-stores history sqlite:///agent.db demo --offset 50 --json\n\n"
    "  agent-stores history file:///srv/agent s1 --tenant acme",
)
def history(
    url: Annotated[str, typer.Argument(metavar="URL", help="A store URL.")],
    session: Annotated[str, typer.Argument(metavar="SESSION", help="The session id.")],
    tenant: TenantOption = None,
    source_id: SourceOption = "history",
    namespace: NamespaceOption = "",
    offset: Annotated[int, typer.Option("--offset", min=0, help="First message (paging).")] = 0,
    limit: LimitOption = 50,
    model_view: Annotated[
        bool,
        typer.Option("--model-view", help="Only what the model is sent: no excluded messages, summaries in place."),
    ] = False,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Show a session's stored messages, oldest first (one page; --json gives each message in full).

    Where a stored compaction decided something, excluded messages are marked [x] and the
    summaries it added [+]; --model-view leaves out what the model is not sent.
    A session with no stored history is an error (exit 2), as is a store that does not exist.
    """
    from ._inspect import read_history

    scope = Scope(tenant, namespace, source_id)
    page = _run(
        verbose,
        lambda: read_history(url, session, scope, offset=offset, limit=limit, full=as_json, model_view=model_view),
        as_json=as_json,
    )
    if as_json:
        print_json(page)
        return
    out.print(f"{plural(page['total'], 'message')} in session {escape(repr(session))}")
    for message in page["messages"]:
        text = message["text"][:100] or ", ".join(message["contents"])
        if "excluded" not in message:  # nothing compacted: the stored messages as saved
            out.print(f"  {message['index']:>4} {message['role']:<10} {escape(text)}")
            continue
        mark = "[+]" if message["stored"] is None else "[x]" if message["excluded"] else "   "
        out.print(f"  {message['index']:>4} {escape(mark)} {message['role']:<10} {escape(text)}")
    if page["next_offset"] is not None:
        out.print(f"more: --offset {page['next_offset']}")


@app.command(
    cls=Command,
    epilog="[bold]Examples[/]\n\n  agent-stores retain sqlite:///agent.db demo\n\n"
    "  agent-stores retain redis://localhost:6379/0 s1 --json",
)
def retain(
    url: Annotated[str, typer.Argument(metavar="URL", help="A store URL.")],
    session: Annotated[str, typer.Argument(metavar="SESSION", help="The session whose excluded messages go.")],
    tenant: TenantOption = None,
    source_id: SourceOption = "history",
    namespace: NamespaceOption = "",
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Drop the messages SESSION's stored compactions excluded, keeping what the model is sent.

    Opt-in retention (docs/compaction.md): the session's log becomes its compacted view. Crash-safe;
    run it again to finish a retention that stopped. A session without stored compactions is left as it is.
    """
    from ._retain import retain as retain_session

    scope = Scope(tenant, namespace, source_id)
    report = _run(verbose, lambda: retain_session(url, session, scope), as_json=as_json)
    if as_json:
        print_json(report)
        return
    out.print(
        f"retained {escape(repr(session))}: dropped {plural(report['dropped'], 'message')}, "
        f"{plural(report['stored'], 'record')} stored"
    )


@app.command(
    cls=Command,
    epilog="[bold]Examples[/]\n\n  agent-stores fork sqlite:///agent.db demo demo-b\n\n"
    "  agent-stores fork redis://localhost:6379/0 s1 s1-retry --upto 4 --json",
)
def fork(
    url: Annotated[str, typer.Argument(metavar="URL", help="A store URL.")],
    src: Annotated[str, typer.Argument(metavar="SRC", help="The session to copy.")],
    dst: Annotated[str, typer.Argument(metavar="DST", help="The new session's id (must hold nothing yet).")],
    upto: Annotated[
        int | None, typer.Option("--upto", min=0, help="Copy only the first N messages of the history.")
    ] = None,
    tenant: TenantOption = None,
    source_id: SourceOption = "history",
    namespace: NamespaceOption = "",
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Start session DST as a copy of SRC: its history (the first N messages with --upto), snapshot, todos and files.

    Files: those of SRC's own folders (the harness's file memory, session-scoped file access).
    SRC is not changed; from here on the two sessions continue independently. A DST that
    already holds history, a snapshot, todos or files is refused (exit 3) and nothing is copied.
    """
    from ._fork import fork as fork_store

    scope = Scope(tenant, namespace, source_id)
    report = _run(verbose, lambda: fork_store(url, src, dst, scope, upto=upto), as_json=as_json)
    if as_json:
        print_json(report)
        return
    out.print(
        f"forked {escape(repr(src))} into {escape(repr(dst))}: {plural(report['messages'], 'message')}"
        f"{', ' + plural(report['compactions'], 'compaction') if report['compactions'] else ''}"
        f", {'a snapshot' if report['snapshot'] else 'no snapshot'}, {plural(report['todos'], 'todo list')}"
        f"{', ' + plural(report['files'], 'file') if report['files'] else ''}"
    )


@app.command(
    cls=Command,
    epilog="[bold]Examples[/]\n\n  agent-stores repair s3://bucket/agents demo --dry-run\n\n"
    "  agent-stores repair file:///srv/agent demo --tenant acme --keep-all --json",
)
def repair(
    url: Annotated[
        str, typer.Argument(metavar="URL", help="A store URL whose history is an object-store log (S3, fsspec).")
    ],
    session: Annotated[str, typer.Argument(metavar="SESSION", help="The session id.")],
    tenant: TenantOption = None,
    source_id: SourceOption = "history",
    namespace: NamespaceOption = "",
    keep_all: Annotated[
        bool,
        typer.Option("--keep-all", help="Keep every readable message, with holes where the gaps are."),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Report what a repair keeps and loses; write nothing.")
    ] = False,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Rewrite a session's history whose segments were removed behind it, from what is still readable.

    Keeps the messages after the newest gap (the whole end of the conversation), or with
    [bold]--keep-all[/] every readable message in order, and reports exactly what is lost
    (--json lists the dropped readable messages in full). The rewrite is one conditional
    write: a session saved to meanwhile is left as it is (exit 3).

    Exit 0 when the session is whole (repaired, or nothing to repair), 4 when --dry-run found
    a gap, 2 on bad input, an unknown session or a store without segments, 3 on a conflict.
    """
    from ._repair import repair as run_repair

    scope = Scope(tenant, namespace, source_id)
    report = _run(verbose, lambda: run_repair(url, session, scope, keep_all=keep_all, dry_run=dry_run), as_json=as_json)
    if as_json:
        print_json(report.to_json())
    else:
        _print_repair(report)
    if report.status == "would-repair":
        from ._errors import EXIT_CORRUPT

        raise typer.Exit(EXIT_CORRUPT)


def _print_repair(report: Any) -> None:
    from ._repair import describe_runs

    out.print(f"[bold]agent-stores repair[/] {escape(report.url)} session {escape(report.session_id)!r}")
    out.print(f"  history log {escape(repr(report.key))}: {plural(report.length, 'record')}")
    if report.status == "whole":
        out.print("[bold green]whole[/]: no segment is missing; nothing to repair")
        return
    out.print(f"  missing: {escape(', '.join(map(str, report.gaps)))}")
    out.print(f"  lost: {describe_runs(report.lost)}" + (": nothing holds them any more" if report.lost else ""))
    hint = ": readable, before the newest gap (--keep-all keeps them, --json shows them)" if report.dropped else ""
    out.print(f"  dropped: {describe_runs(report.dropped)}{hint}")
    out.print(f"  kept: {describe_runs(report.kept)}")
    if report.status == "would-repair":
        out.print("[bold]dry run[/]: nothing was written")
    else:
        holds = plural(report.kept_count, "message")
        out.print(f"[bold green]repaired[/]: the session holds {holds} and takes new ones")


@app.command(
    cls=Command,
    epilog="[bold]Examples[/]\n\n  agent-stores files sqlite:///agent.db\n\n"
    "  agent-stores files file:///srv/agent memories --recursive --json\n\n"
    "  agent-stores files redis://localhost:6379/0 --tenant acme",
)
def files(
    url: Annotated[str, typer.Argument(metavar="URL", help="A store URL.")],
    directory: Annotated[str, typer.Argument(metavar="DIR", help="The directory to list (a file lists itself).")] = "",
    tenant: TenantOption = None,
    recursive: Annotated[bool, typer.Option("--recursive", "-r", help="List sub-directories too.")] = False,
    after: Annotated[str | None, typer.Option("--after", help="Start after this path (paging).")] = None,
    limit: LimitOption = 100,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """List the harness files of a store (one page, in path order).

    A folder the store does not hold is an error (exit 2), as is a store that does not exist.
    """
    from ._inspect import list_files

    scope = Scope(tenant)
    page = _run(
        verbose,
        lambda: list_files(url, directory, scope, recursive=recursive, after=after, limit=limit),
        as_json=as_json,
    )
    if as_json:
        print_json(page)
        return
    if not page["entries"] and not after:
        out.print(f"no files in {escape(page['directory'] or 'the file store')}")
    for entry in page["entries"]:
        size = f"{entry['characters']:>8}" if entry.get("characters") is not None else " " * 8
        out.print(f"{size}  {escape(entry['path'])}")
    if page["next_after"]:
        out.print(f"more: --after {escape(page['next_after'])}")


@app.command(cls=Command, epilog="[bold]Example[/]\n\n  agent-stores show sqlite:///agent.db demo --json")
def show(
    url: Annotated[str, typer.Argument(metavar="URL", help="A store URL.")],
    session: Annotated[str, typer.Argument(metavar="SESSION", help="The session id.")],
    tenant: TenantOption = None,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Show the stored snapshot of a session (the session store's copy).

    A session without a snapshot is an error (exit 2), as is a store that does not exist.
    """
    from ._inspect import read_snapshot

    page = _run(verbose, lambda: read_snapshot(url, session, Scope(tenant)), as_json=as_json)
    if as_json:
        print_json(page)
        return
    out.print_json(data=page["snapshot"], default=str)


# -- operations ------------------------------------------------------------------------------------


@app.command(
    cls=Command,
    epilog="[bold]Examples[/]\n\n  agent-stores stats sqlite:///agent.db\n\n"
    "  agent-stores stats redis://localhost:6379/0 --tenant acme --json\n\n"
    "  agent-stores stats s3://bucket/agents --limit 20 --sample 200",
)
def stats(
    url: Annotated[str, typer.Argument(metavar="URL", help="A store URL.")],
    tenant: Annotated[str | None, typer.Option("--tenant", help="Only this tenant.")] = None,
    after: Annotated[str | None, typer.Option("--after", help="Start after this tenant segment (paging).")] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Tenants per page.")] = 100,
    sample: Annotated[
        int, typer.Option("--sample", min=1, help="Sessions read per namespace for messages and bytes.")
    ] = 50,
    max_keys: Annotated[
        int, typer.Option("--max-keys", min=1, help="Entries listed at most per namespace and kind.")
    ] = 100_000,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Count what a store holds per tenant and namespace: sessions, messages, bytes, files, checkpoints, todos.

    One page of tenants (the unscoped stores first). Messages and bytes are read from up to
    --sample sessions per namespace; past that they are estimates, marked [bold]≈[/]
    ([bold]"sampled": true[/] in --json). A listing stopped at --max-keys gives lower bounds,
    marked [bold]≥[/] ([bold]"complete": false[/]). Read only: nothing is created.
    """
    from ._ops import print_stats, read_stats

    result = _run(
        verbose,
        lambda: read_stats(url, tenant=tenant, after=after, limit=limit, sample=sample, max_keys=max_keys),
        as_json=as_json,
    )
    if as_json:
        print_json({"ok": True, **result.to_json()})
        return
    print_stats(result)


@app.command(
    cls=Command,
    epilog="[bold]Examples[/]\n\n  agent-stores sweep sqlite:///agent.db --idle 30d --dry-run\n\n"
    "  agent-stores sweep redis://localhost:6379/0 --idle 30d --kind history,sessions --tenant acme\n\n"
    "  agent-stores sweep s3://bucket/agents --age 90d --keep-last 5 --kind checkpoints --json",
)
def sweep(
    url: Annotated[str, typer.Argument(metavar="URL", help="A store URL.")],
    idle: Annotated[str | None, typer.Option("--idle", help="Remove items unchanged this long (30d, 12h, 2w).")] = None,
    age: Annotated[str | None, typer.Option("--age", help="Remove items first seen this long ago (90d).")] = None,
    keep_last: Annotated[
        int | None, typer.Option("--keep-last", min=1, help="Always keep the N most recently active per group.")
    ] = None,
    kind: Annotated[
        list[str] | None,
        typer.Option("--kind", help="history, sessions, files, todos, checkpoints (comma-separated; default all)."),
    ] = None,
    tenant: Annotated[
        list[str] | None,
        typer.Option(
            "--tenant", help="Sweep only this tenant (repeatable; default the unscoped stores and every tenant)."
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report what would go; write nothing.")] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", min=1, help="Requests in flight at once.")] = 16,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Remove what a retention rule says is due: idle, old, or past the newest N, per kind and tenant.

    Items carry no time of their own: each sweep records the version it sees of every item
    (under [bold]retention/[/] beside it), and an item is idle since the sweep that first saw
    its current version. Checkpoints use their own timestamps. Every delete is conditional on
    the version the sweep saw, so nothing written meanwhile is removed; re-running is safe and
    finishes an interrupted sweep; several hosts may sweep at once. Exit 1 when an item failed.
    """
    import asyncio

    from ._ops import print_sweep, run_sweep

    with phased_progress("looking") as advance:
        report = guarded(
            verbose,
            lambda: asyncio.run(
                run_sweep(
                    url,
                    idle=idle,
                    age=age,
                    keep_last=keep_last,
                    kinds=kind,
                    tenants=tenant,
                    dry_run=dry_run,
                    concurrency=concurrency,
                    progress=advance,
                )
            ),
            as_json=as_json,
        )
    if as_json:
        print_json({"ok": report.ok, **report.to_json()})
    else:
        print_sweep(report, verbose=verbose)
    if not report.ok:
        raise typer.Exit(EXIT_FAILED)


# -- migrate ---------------------------------------------------------------------------------------


@app.command(
    cls=Command,
    epilog="[bold]Examples[/]\n\n"
    "  agent-stores migrate sqlite:///agent.db redis://localhost:6379/0\n\n"
    "  agent-stores migrate framework:///srv/agent-data sqlite:///agent.db   # FileHistoryProvider & co.\n\n"
    "  agent-stores migrate sqlite:///agent.db s3://bucket/agents --tenant acme   # one tenant only\n\n"
    "  agent-stores migrate sqlite:///old.db sqlite:///new.db --dry-run --json",
)
def migrate(
    source: Annotated[
        str,
        typer.Argument(
            metavar="SOURCE", help="A store URL, or framework://DIR (the framework's own file stores' folders)."
        ),
    ],
    target: Annotated[str, typer.Argument(metavar="TARGET", help="A store URL.")],
    source_id: Annotated[
        list[str] | None,
        typer.Option("--source-id", help="History source id to copy (repeatable; default every one the source holds)."),
    ] = None,
    namespace: Annotated[
        list[str] | None,
        typer.Option("--namespace", help="History namespace to copy (repeatable; default every one the source holds)."),
    ] = None,
    tenant: Annotated[
        list[str] | None,
        typer.Option(
            "--tenant", help="Copy only this tenant (repeatable; default the unscoped stores and every tenant)."
        ),
    ] = None,
    append: Annotated[
        bool,
        typer.Option(
            "--append",
            help="On a conflict, add the source's history after the target's own; "
            "keep the target's files and snapshots.",
        ),
    ] = False,
    replace: Annotated[
        bool, typer.Option("--replace", help="On a conflict, replace the target's history, file or snapshot.")
    ] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Plan and report; write nothing.")] = False,
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency",
            min=1,
            help="Items planned, copied and verified at once (default 64; 1 copies one item at a time).",
        ),
    ] = 64,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Copy every history, file, session snapshot, todo list and checkpoint from SOURCE to TARGET, then verify.

    Everything is copied by default: the unscoped stores and every tenant, every history
    namespace and source id the source holds. Re-running is safe: what the target already
    holds identically is skipped, and a history the target holds the beginning of gets the
    rest. When the target holds [bold]different[/] data for the same session, file or
    snapshot, nothing is written and the command exits 3, unless [bold]--append[/] or
    [bold]--replace[/]; two histories are never interleaved. After copying, the target is read
    back and every item's count and record digests are compared with the source's.

    [bold]framework://DIR[/] reads the framework's FileHistoryProvider folder DIR/history,
    FileSessionStore folder DIR/sessions and FileSystemAgentFileStore folder DIR/files
    (?history=...&sessions=...&files=... name others, relative to DIR).

    Exit 0 when everything is copied and verified, 1 when an item failed or did not verify,
    2 on bad input or an unreachable store, 3 when a conflict refused the migration.
    """
    import asyncio

    from ._errors import EXIT_CONFLICT
    from ._migrate import migrate as run_migration

    if append and replace:
        fail(CliError("--append and --replace exclude each other"), verbose=verbose, as_json=as_json)
    with phased_progress("listing") as advance:
        report = guarded(
            verbose,
            lambda: asyncio.run(
                run_migration(
                    source,
                    target,
                    source_ids=source_id,
                    namespaces=namespace,
                    tenants=tenant,
                    conflicts="append" if append else "replace" if replace else "refuse",
                    dry_run=dry_run,
                    progress=advance,
                    concurrency=concurrency,
                )
            ),
            as_json=as_json,
        )
    if as_json:
        print_json(report.to_json())
    else:
        _print_migration(report, verbose=verbose)
    if report.refused:
        raise typer.Exit(EXIT_CONFLICT)
    if not report.ok:
        raise typer.Exit(EXIT_FAILED)


def _print_migration(report: Any, *, verbose: bool) -> None:
    out.print(f"[bold]agent-stores migrate[/] {escape(report.source)} -> {escape(report.target)}")
    table = Table(show_edge=False, box=None, pad_edge=False)
    actions = ["copy", "extend", "append", "replace", "skip", "keep", "conflict", "error"]
    table.add_column("kind")
    for action in [*actions, "messages_copied"]:
        table.add_column(action.replace("_", " "), justify="right")
    for kind, row in report.summary().items():
        table.add_row(kind, *(str(row.get(a, "-")) for a in [*actions, "messages_copied"]))
    print_table(table)
    for item in report.items:
        where = "" if item.tenant is None else f" of tenant {escape(item.tenant)}"
        if item.action == "conflict":
            out.print(f"[yellow]conflict[/] {item.kind} [bold]{escape(item.name)}[/]{where}: {_conflict(item)}")
        elif item.action == "error" or item.verified is False:
            out.print(f"[red]failed[/] {item.kind} [bold]{escape(item.name)}[/]{where}: {escape(item.detail)}")
        elif verbose and item.action != "skip":
            out.print(f"  {item.action} {item.kind} {escape(item.name)}{where}")
    if report.refused:
        out.print(
            "[bold yellow]refused[/]: the target holds different data for the items above; nothing was written. "
            "Re-run with --append (add the source's history after the target's) or --replace."
        )
    elif report.dry_run:
        out.print("[bold]dry run[/]: nothing was written")
    elif report.ok:
        verified = sum(1 for i in report.items if i.verified)
        there = len(report.of("skip"))
        out.print(f"[bold green]ok[/]: {plural(verified, 'item')} copied and verified, {there} already there")
    else:
        out.print(f"[bold red]{plural(len(report.failures), 'item')} failed[/]")


def _conflict(item: Any) -> str:
    """What differs between the target's item and the source's, in the item's own unit."""
    if item.kind == "history":
        held = plural(item.target_count, "message")
        return f"the target holds a different history of {held} ({item.source_count} on the source)"
    if item.kind == "file":
        held = plural(item.target_count, "character")
        return f"the target holds a different file of {held} ({item.source_count} on the source)"
    return f"the target holds a different {'snapshot' if item.kind == 'snapshot' else 'object'}"


# -- upgrade ---------------------------------------------------------------------------------------


@app.command(
    cls=Command,
    epilog="[bold]Examples[/]\n\n"
    "  agent-stores upgrade sqlite:///agent.db --dry-run\n\n"
    "  agent-stores upgrade s3://bucket/agents?endpoint_url=http://127.0.0.1:8333 --json",
)
def upgrade(
    url: Annotated[str, typer.Argument(metavar="URL", help="A store URL.")],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Report what would move; write nothing.")] = False,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Move tenant data written by release 0.1 into the tenants' own roots (tenants/<tenant>/).

    Release 0.1 kept a tenant view's files in the folder tenants/<tenant>/ of the file store,
    its sessions under the id tenants/<tenant>/<id> and its history in the namespace
    tenants/<tenant>; today every kind of a tenant lies under tenants/<tenant>/ of the store,
    and tenant views read only there. Each item is copied, read back and compared, and only
    then removed from its old place: an interrupted upgrade loses nothing, and running it again
    finishes it. An item whose new place already holds different data is a conflict and stays.
    Checkpoint index entries written by 0.1 are rewritten so listings read no record.

    Exit 0 when everything moved (or nothing was left to move), 1 when an item failed or
    conflicted, 2 on bad input or an unreachable store.
    """
    import asyncio

    from ._upgrade import upgrade as run_upgrade

    report = guarded(verbose, lambda: asyncio.run(run_upgrade(url, dry_run=dry_run)), as_json=as_json)
    if as_json:
        print_json(report.to_json())
    else:
        out.print(f"[bold]agent-stores upgrade[/] {escape(report.url)}")
        for item in report.items:
            colour = {"move": "green", "done": "green", "conflict": "yellow"}.get(item.action, "red")
            detail = f": {escape(item.detail)}" if item.detail else ""
            out.print(f"  [{colour}]{item.action}[/] {item.kind} {escape(item.tenant)} {escape(item.name)}{detail}")
        moved = sum(1 for item in report.items if item.action in ("move", "done"))
        if not report.items:
            out.print("[bold green]ok[/]: nothing written by release 0.1 is left to move")
        elif report.dry_run:
            out.print(f"[bold]dry run[/]: {plural(moved, 'item')} would move; nothing was written")
        elif report.ok:
            out.print(f"[bold green]ok[/]: {plural(moved, 'item')} moved and verified")
    if not report.ok:
        raise typer.Exit(EXIT_FAILED)


# -- migrate-schema --------------------------------------------------------------------------------


@app.command(
    "migrate-schema",
    cls=Command,
    epilog="[bold]Examples[/]\n\n  agent-stores migrate-schema postgresql://admin@db.internal/agents\n\n"
    "  agent-stores migrate-schema postgresql://admin@db.internal/agents --json",
)
def migrate_schema(
    url: Annotated[str, typer.Argument(metavar="URL", help="A store URL.")],
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Apply the store's schema migrations now, ahead of deploying applications without DDL rights.

    Stores set up their schema on first use; run this once with a role that may change the
    schema, and the applications then find it current and change nothing. Each migration is
    applied once even while other processes start (PostgreSQL: under an advisory lock). A
    backend without a schema of its own (Redis, S3, files) has nothing to apply.

    Exit 0 when the schema is current, 2 on bad input, an unreachable store or refused rights.
    """
    import asyncio

    from ._schema import migrate_schema as run_migrate_schema

    report = guarded(verbose, lambda: asyncio.run(run_migrate_schema(url)), as_json=as_json)
    if as_json:
        print_json(report.to_json())
        return
    out.print(f"[bold]agent-stores migrate-schema[/] {escape(report.url)}")
    if not report.supported:
        out.print("[bold green]ok[/]: this backend keeps no schema of its own; nothing to apply")
    elif report.applied:
        applied = ", ".join(str(v) for v in report.applied)
        out.print(
            f"[bold green]ok[/]: applied {plural(len(report.applied), 'migration')} ({applied}); "
            f"schema version {report.version}"
        )
    else:
        out.print(f"[bold green]ok[/]: schema version {report.version} is current; nothing applied")


# -- encryption at rest -----------------------------------------------------------------------------

keyring_app = typer.Typer(
    cls=Group,
    help="Keyrings: the key-encryption keys that seal stores (see docs/encryption.md).",
    rich_markup_mode="rich",
    pretty_exceptions_enable=False,
    add_completion=False,
)
app.add_typer(keyring_app, name="keyring")


@keyring_app.command(
    "create",
    cls=Command,
    epilog="[bold]Examples[/]\n\n  agent-stores keyring create keyring.json\n\n"
    "  AGENT_STORES_KEYRING=keyring.json agent-stores demo",
)
def keyring_create(
    file: Annotated[str, typer.Argument(metavar="FILE", help="The keyring file to create (never overwritten).")],
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Create a keyring file (mode 0600) holding one new 256-bit key-encryption key.

    Open stores with it by setting [bold]AGENT_STORES_KEYRING[/] to the file (or to its
    contents, in a container), by the URL option [bold]?keyring=FILE[/], or from code with
    open_stores(url, encryption=Keyring.load(FILE)). Keep it out of version control and backups
    of the store: whoever holds it and a copy of the store reads everything.
    """
    from ._sealing import create_keyring

    made = guarded(verbose, lambda: create_keyring(file), as_json=as_json)
    if as_json:
        print_json(made)
        return
    out.print(
        f"created {escape(file)} (key {escape(made['key_id'])}); use it with {made['environment']}={escape(file)}"
    )


@keyring_app.command(
    "rotate",
    cls=Command,
    epilog="[bold]Examples[/]\n\n  agent-stores keyring rotate keyring.json\n\n"
    "  agent-stores rekey 'sqlite:///agent.db?keyring=keyring.json'",
)
def keyring_rotate(
    file: Annotated[str, typer.Argument(metavar="FILE", help="The keyring file (replaced atomically).")],
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Add a new key-encryption key to a keyring and make it current; the older keys stay, to unwrap.

    New data keys are wrapped with the new key at once. Run [bold]agent-stores rekey URL[/] to
    re-wrap the existing ones; after that the old key can be removed from the keyring.
    """
    from ._sealing import rotate_keyring

    rotated = guarded(verbose, lambda: rotate_keyring(file), as_json=as_json)
    if as_json:
        print_json(rotated)
        return
    out.print(f"{escape(file)}: new current key {escape(rotated['key_id'])} ({plural(len(rotated['keys']), 'key')})")


ScopeTenantOption = Annotated[str | None, typer.Option("--tenant", help="Only this tenant.")]
ScopeNamespaceOption = Annotated[
    str | None, typer.Option("--namespace", help="Only this namespace (outside tenants: history, todos, checkpoints).")
]


@app.command(
    cls=Command,
    epilog="[bold]Examples[/]\n\n  agent-stores rekey 'sqlite:///agent.db?keyring=keyring.json'\n\n"
    "  agent-stores rekey 'sqlite:///agent.db?keyring=keyring.json' --data-keys\n\n"
    "  agent-stores rekey 'sqlite:///agent.db?keyring=keyring.json' --data-keys --older-than 1764892800.5\n\n"
    "  AGENT_STORES_KEYRING=keyring.json agent-stores rekey s3://bucket/agents --json",
)
def rekey(
    url: Annotated[
        str, typer.Argument(metavar="URL", help="A sealed store's URL (the keyring in it or the environment).")
    ],
    data_keys: Annotated[
        bool, typer.Option("--data-keys", help="Give each scope a new current data key instead of re-wrapping.")
    ] = False,
    tenant: ScopeTenantOption = None,
    namespace: ScopeNamespaceOption = None,
    older_than: Annotated[
        float | None,
        typer.Option(
            "--older-than",
            metavar="UNIX-TIME",
            help="With --data-keys: skip scopes whose current data key was made since then "
            "(the older_than an interrupted run printed, to finish it without a second key).",
        ),
    ] = None,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Re-wrap every scope's data keys under the keyring's current key-encryption key, or (--data-keys) rotate them.

    Without --data-keys: touches one key object per scope (the root, each namespace, each
    tenant), never a record; safe while agents write, and running it again finishes an
    interrupted run. The keyring must still hold the old key.

    With --data-keys: adds a new current data key to each scope (or to --tenant or --namespace
    only). New writes use it at once here, and in running processes within their key refresh
    interval (60 s by default); records sealed before stay readable by their key id. Then run
    [bold]agent-stores reseal URL[/] to seal the objects again under the new keys.
    """
    from ._sealing import rekey_store, rotate_data_keys

    if not data_keys:
        if tenant is not None or namespace is not None or older_than is not None:
            misplaced = CliError("--tenant, --namespace and --older-than go with --data-keys")
            fail(misplaced, verbose=verbose, as_json=as_json)
        report = _run(verbose, lambda: rekey_store(url), as_json=as_json)
        if as_json:
            print_json(report)
            return
        scopes = plural(report["scopes"], "scope")
        out.print(f"[bold green]ok[/]: {plural(report['rewrapped'], 'data key')} re-wrapped in {scopes}")
        return
    report = _run(
        verbose,
        lambda: rotate_data_keys(url, tenant=tenant, namespace=namespace, older_than=older_than),
        as_json=as_json,
    )
    if as_json:
        print_json(report)
        return
    out.print(
        f"[bold green]ok[/]: a new data key in {plural(report['rotated'], 'scope')} of {report['scopes']} "
        f"(to finish an interrupted run: --older-than {report['older_than']!r})"
    )


@app.command(
    cls=Command,
    epilog="[bold]Examples[/]\n\n  agent-stores reseal 'sqlite:///agent.db?keyring=keyring.json&adopt_plaintext=true'\n\n"
    "  AGENT_STORES_KEYRING=keyring.json agent-stores reseal s3://bucket/agents --json",
)
def reseal(
    url: Annotated[str, typer.Argument(metavar="URL", help="A sealed store's URL (the key in it or the environment).")],
    tenant: ScopeTenantOption = None,
    namespace: ScopeNamespaceOption = None,
    log_ttl: Annotated[
        float | None,
        typer.Option(
            "--log-ttl",
            min=0.001,
            help="Seconds a rewritten history log lives from the rewrite, as on a save: your history "
            "providers' ttl (default: rewritten logs do not expire).",
        ),
    ] = None,
    concurrency: Annotated[
        int, typer.Option("--concurrency", min=1, help="History logs rewritten at once (default 4).")
    ] = 4,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Seal again the files, sessions, todo lists, checkpoints and history logs not under their current data key.

    Values still in plaintext (a store opened with adopt_plaintext=true), and values sealed
    with an older data key (after agent-stores rekey --data-keys). Each object is rewritten
    only if unchanged since read; each history log through the crash-safe rewrite retention
    uses, every record kept (saves meanwhile make it start again or wait for its swap). So it
    is safe while agents write, and running it again finishes an interrupted run. A rewritten
    log's expiry starts again with --log-ttl (log drivers report no remaining expiry to keep).
    """
    from ._sealing import reseal_store

    report = _run(
        verbose,
        lambda: reseal_store(url, tenant=tenant, namespace=namespace, log_ttl=log_ttl, concurrency=concurrency),
        as_json=as_json,
    )
    if as_json:
        print_json(report)
        return
    unreadable = report["unreadable"] + report["logs_unreadable"]
    failed = f"; {unreadable} do not open" if unreadable else ""
    if report["logs_busy"]:
        failed += f"; {plural(report['logs_busy'], 'history log')} busy with saves or a retention: run it again"
    out.print(
        f"[bold green]ok[/]: {plural(report['sealed'], 'object')} sealed, {report['resealed']} sealed again "
        f"under the current data key, of {report['scanned']} looked at; "
        f"{plural(report['logs_resealed'], 'history log')} sealed again, of {report['logs_scanned']}{failed}"
    )


@app.command(
    cls=Command,
    epilog="[bold]Examples[/]\n\n  agent-stores forget sqlite:///agent.db --tenant acme\n\n"
    "  agent-stores forget sqlite:///agent.db --namespace support-bot\n\n"
    "  agent-stores forget 'file:///srv/agent?keyring=/etc/agent/keyring.json' --tenant acme --json",
)
def forget(
    url: Annotated[str, typer.Argument(metavar="URL", help="A store URL.")],
    tenant: Annotated[str | None, typer.Option("--tenant", help="The tenant to erase.")] = None,
    namespace: Annotated[
        str | None, typer.Option("--namespace", help="The namespace to erase, outside tenants (a store without them).")
    ] = None,
    as_json: JsonOption = False,
    verbose: VerboseOption = False,
) -> None:
    """Erase a tenant or a namespace: destroy its data keys first, then delete its data.

    A tenant's history, files, sessions, todos and checkpoints; or, outside tenants, a
    namespace's history, todos and checkpoints (files and sessions take no namespace). Once the
    keys are gone nothing sealed for it decrypts, in the store or in any copy taken from then
    on; an interrupted run leaves nothing readable, and running it again finishes the deletion.
    No keyring is needed. A store that was never sealed has the data deleted.
    """
    from ._sealing import forget_tenant

    report = _run(verbose, lambda: forget_tenant(url, tenant, namespace), as_json=as_json)
    if as_json:
        print_json(report)
        return
    deleted = plural(report["deleted"], "item")
    what = f"tenant {escape(repr(tenant))}" if tenant is not None else f"namespace {escape(repr(namespace))}"
    out.print(f"[bold green]ok[/]: {what} forgotten: data keys destroyed first, {deleted} deleted")


# -- demo ------------------------------------------------------------------------------------------


@app.command(
    cls=Command,
    epilog="[bold]Examples[/]\n\n"
    "  agent-stores demo                      # run twice: the second run recalls the first\n\n"
    "  agent-stores demo redis://localhost:6379/0\n\n"
    "  OPENAI_BASE_URL=http://127.0.0.1:11434/v1 OPENAI_MODEL=llama3.2 agent-stores demo\n\n"
    "  agent-stores demo --reset",
)
def demo(
    url: Annotated[str, typer.Argument(metavar="URL", help="A store URL.")] = "sqlite:///agent-stores-demo.db",
    reset: Annotated[bool, typer.Option("--reset", help="Forget the demo's session first.")] = False,
    offline: Annotated[
        bool, typer.Option("--offline", help="Use the scripted model even when OPENAI_* is set.")
    ] = False,
    verbose: VerboseOption = False,
) -> None:
    """A harness agent that remembers across runs, its history, memory files and session in the store.

    The first run asks the agent to remember a favourite colour (it writes a memory file), every
    later run asks for it back from what the store holds, and each run prints what the stores
    hold. The real model answers when [bold]OPENAI_API_KEY[/] or [bold]OPENAI_BASE_URL[/] is set
    (OPENAI_MODEL, AGENT_STORES_OPENAI_API=responses for the Responses API); otherwise a clearly
    labelled offline scripted model does. A failing model call (a wrong key, an unreachable
    server) is one error line and exit 2; the stored session is left as it was.
    """
    import asyncio

    from . import demo as demo_module

    if "://" not in url:
        from agent_stores.core import redact_url

        fail(CliError(f"expected a store URL (scheme://...), got {redact_url(url)!r}"), verbose=verbose)
    if reset:
        guarded(verbose, lambda: asyncio.run(demo_module.reset(url)))
    guarded(verbose, lambda: asyncio.run(demo_module.run(url, offline=offline)))
