"""``FsspecHistoryProvider``: chat history as immutable segment files on any fsspec filesystem."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Unpack

from agent_stores.core import LogHistoryProvider, ObjectLogDriver
from agent_stores.core.history import HistoryOptions, window_cache_options
from agent_stores.core.objectlog import LOG_OPTIONS
from fsspec import AbstractFileSystem  # pyright: ignore[reportMissingTypeStubs]

from ._capabilities import FilesystemCapabilities
from ._connect import FsspecStore
from ._driver import FsspecObjectDriver

__all__ = ["FsspecHistoryProvider"]


class FsspecHistoryProvider(FsspecStore, LogHistoryProvider):
    """The framework's ``HistoryProvider`` on any fsspec filesystem with atomic exclusive create.

    History is the core's :class:`~agent_stores.core.ObjectLogDriver` over an
    :class:`FsspecObjectDriver`: each save writes **one** new, immutable segment file
    (``<root>/<namespace>/<source>/<session>/s<inverted seq>``) claimed with an exclusive
    create, so a steady conversation costs one file creation per save whatever the history's
    length, and of two writers that read the same end exactly one wins (the other re-reads
    and retries, as the core's de-duplication requires). A load lists the session's folder
    once and reads the newest segments in parallel; a window this store loaded before is one
    listing and one file read (it remembers the newest records of the sessions it loaded,
    16 MiB in all); long histories are compacted into checkpoint files. Messages are stored
    verbatim (the JSON of ``Message.to_dict()``).

    Concurrency it survives depends on the filesystem's ``atomic_create``
    (:attr:`capabilities`): a local directory (``link()``), OpenSSH SFTP (``RENAME``) and S3
    (``If-None-Match: *``) are safe for any number of writers in any number of processes on
    one session; fsspec's
    memory filesystem for any number of writers in one process (it lives in one process);
    any other filesystem, used through the plain fsspec API, only for one writer per session
    at a time (two concurrent saves can overwrite each other's segment).

    ``ttl`` is recorded in the segments: an expired session reads as empty and is blanked by
    its next save or by :meth:`purge_expired` (run it on a schedule to reclaim storage). Never
    expire or remove history objects by age (no bucket lifecycle rule, no clean-up job): a
    removed segment is a gap that makes the session unreadable, and the empty placeholders of
    deleted sessions are what make a stale writer conflict.

    Security posture:
        Messages are stored as plaintext (msgpack framing around the message JSON) in
        files under ``root``: protect the folder as you would the conversations. Keys
        derive injectively from the tenant, ``namespace``, ``source_id`` and the session id,
        so no id can reach another session's files or leave the root; each tenant's data lies
        in its own folder (``tenants/<tenant>/``), but anyone who can read the root reads
        every tenant.

    Borrowing and owning the filesystem work as in :class:`FsspecAgentFileStore`; the history
    lives directly under the root.

    Args:
        fs: The fsspec filesystem to borrow (never closed), or an :class:`FsspecObjectDriver`
            shared with other stores.
        root: The directory on ``fs`` holding the history (created on first write; omitted with a driver).
        fsync: Local only: flush each segment to disk before it becomes visible.
        capabilities: Override the capabilities declared for the filesystem.
        clock: Seconds since the epoch, for expiry (tests pass a fake one).
        fair_claims: Writers of one session take turns when they contend (the default; see
            ``docs/reliability.md``); ``False`` claims as earlier releases did: a little less
            waiting per save, but the writer that lost most may keep losing. Also the URL option
            ``?fair_claims=false``.
        concurrency: Most filesystem requests one operation keeps in flight (a whole positive number).
        compact_after: A full load that read more segments than this writes a checkpoint.
        tail_after: A load that read more segments than this below the newest writes a tail
            file holding what it read; ``None`` (``none`` in a URL) writes and reads no tails.
        tail_records: Most messages a tail file holds.
            These four are the :class:`~agent_stores.core.objectlog.ObjectLogDriver`'s, read as it
            reads them; each is also a URL option (``?compact_after=128&tail_after=none``).
        **options: The options of every history provider (``source_id``, ``namespace``,
            ``tenant``, ``max_messages``, ``ttl``, ``skip_excluded``, ``cache_bytes``...), as
            :class:`~agent_stores.core.LogHistoryProvider` documents them; expired sessions
            read as empty and :meth:`purge_expired` blanks them; ``cache_bytes`` also bounds
            the remembered windows.
    """

    def __init__(
        self,
        fs: AbstractFileSystem | FsspecObjectDriver,
        root: str | None = None,
        *,
        fsync: bool | None = None,
        capabilities: FilesystemCapabilities | None = None,
        clock: Callable[[], float] = time.time,
        fair_claims: bool = True,
        concurrency: int = 32,
        compact_after: int = 64,
        tail_after: int | None = 8,
        tail_records: int = 1000,
        **options: Unpack[HistoryOptions],
    ) -> None:
        settings = {
            "fair_claims": fair_claims,
            "concurrency": concurrency,
            "compact_after": compact_after,
            "tail_after": tail_after,
            "tail_records": tail_records,
        }
        log_settings = {name: LOG_OPTIONS[name](value) for name, value in settings.items()}  # refused before connecting
        objects = self._connect_root(fs, root, fsync=fsync, capabilities=capabilities)
        self.objects = objects
        log = ObjectLogDriver(objects, prefix="", clock=clock, **window_cache_options(options), **log_settings)
        super().__init__(log, **options)

    @property
    def capabilities(self) -> FilesystemCapabilities:
        """What the filesystem guarantees (declared, never probed)."""
        return self.objects.capabilities
