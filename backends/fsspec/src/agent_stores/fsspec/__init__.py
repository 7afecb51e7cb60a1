"""agent-stores backend for fsspec: history, harness files and sessions on any filesystem.

::

    from agent_stores.fsspec import FsspecAgentFileStore

    async with FsspecAgentFileStore.from_url("file:///srv/agent/files") as files:
        await files.write("notes/today.md", "remember this")

or every store under one root: ``agent_stores.core.open_stores("file:///srv/agent")``,
``open_stores("fsspec+sftp://agent@host:22/srv/agent")``, ``open_stores("fsspec+memory://agent")``.
(``memory://`` is the core's in-process backend, not fsspec's memory filesystem.)
"""

from ._backend import FsspecBackend
from ._capabilities import FilesystemCapabilities
from ._driver import FsspecObjectDriver
from ._history import FsspecHistoryProvider
from ._stores import FsspecAgentFileStore, FsspecSessionStore
from ._url import FilesystemSpec, parse_url

__all__ = [
    "FilesystemCapabilities",
    "FilesystemSpec",
    "FsspecAgentFileStore",
    "FsspecBackend",
    "FsspecHistoryProvider",
    "FsspecObjectDriver",
    "FsspecSessionStore",
    "parse_url",
]
