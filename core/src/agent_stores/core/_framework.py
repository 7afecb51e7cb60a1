"""Every private Agent Framework helper the core relies on, imported in one place.

The core calls these instead of re-implementing them, so stored bytes, path rules and key
segments stay exactly the framework's. A framework release that moves one of them breaks
this module's import, loudly, rather than drifting silently.
"""

from __future__ import annotations

from agent_framework._filesystem import _storage_key_segment  # pyright: ignore[reportPrivateUsage]
from agent_framework._harness._file_access import (
    _ENCODED_FILE_ACCESS_SESSION_PREFIX,  # pyright: ignore[reportPrivateUsage]
    _FILE_ACCESS_WORKSPACE_NAMESPACE,  # pyright: ignore[reportPrivateUsage]
    _matches_glob,  # pyright: ignore[reportPrivateUsage]
    _normalize_relative_path,  # pyright: ignore[reportPrivateUsage]
)
from agent_framework._harness._file_memory import _ENCODED_SCOPE_PREFIX  # pyright: ignore[reportPrivateUsage]
from agent_framework._sessions import (
    _SESSION_SNAPSHOT_DECODER,  # pyright: ignore[reportPrivateUsage]
    _SESSION_SNAPSHOT_ENCODER,  # pyright: ignore[reportPrivateUsage]
    _SESSION_SNAPSHOT_VERSION,  # pyright: ignore[reportPrivateUsage]
    _default_json_dumps,  # pyright: ignore[reportPrivateUsage]
    _default_json_loads,  # pyright: ignore[reportPrivateUsage]
    _deserialize_state,  # pyright: ignore[reportPrivateUsage]
    _SessionSnapshot,  # pyright: ignore[reportPrivateUsage]
    _SessionStatePayload,  # pyright: ignore[reportPrivateUsage]
    filter_new_messages,
    get_message_identity,
)

__all__ = [
    "FILE_ACCESS_SESSION_PREFIX",
    "FILE_ACCESS_WORKSPACE",
    "FILE_MEMORY_SCOPE_PREFIX",
    "SESSION_SNAPSHOT_DECODER",
    "SESSION_SNAPSHOT_ENCODER",
    "SESSION_SNAPSHOT_VERSION",
    "SessionSnapshot",
    "SessionStatePayload",
    "deserialize_state",
    "filter_new_messages",
    "get_message_identity",
    "json_dumps",
    "json_loads",
    "matches_glob",
    "normalize_relative_path",
    "storage_key_segment",
]

storage_key_segment = _storage_key_segment
FILE_MEMORY_SCOPE_PREFIX = _ENCODED_SCOPE_PREFIX
FILE_ACCESS_SESSION_PREFIX = _ENCODED_FILE_ACCESS_SESSION_PREFIX
FILE_ACCESS_WORKSPACE = _FILE_ACCESS_WORKSPACE_NAMESPACE
normalize_relative_path = _normalize_relative_path
matches_glob = _matches_glob
json_dumps = _default_json_dumps
json_loads = _default_json_loads
deserialize_state = _deserialize_state
SessionSnapshot = _SessionSnapshot
SessionStatePayload = _SessionStatePayload
SESSION_SNAPSHOT_ENCODER = _SESSION_SNAPSHOT_ENCODER
SESSION_SNAPSHOT_DECODER = _SESSION_SNAPSHOT_DECODER
SESSION_SNAPSHOT_VERSION = _SESSION_SNAPSHOT_VERSION
