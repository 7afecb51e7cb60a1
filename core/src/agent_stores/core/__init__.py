"""agent-stores core: the rules every store shares, and generic adapters over small drivers.

Build a store from any driver::

    from agent_stores.core import LogHistoryProvider, ObjectAgentFileStore, ObjectSessionStore
    from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver

    history = LogHistoryProvider(MemoryLogDriver(), source_id="history")
    objects = MemoryObjectDriver()
    files, sessions = ObjectAgentFileStore(objects), ObjectSessionStore(objects)
"""

from .codec import CODEC_VERSION, decode_message, encode_message, message_digest
from .drivers import Listing, LogDriver, LogRecord, LogTail, ObjectDriver, StoredObject
from .errors import CorruptRecordError, StoreConflictError, StoreError, StoreUnavailableError
from .files import ObjectAgentFileStore
from .history import LogHistoryProvider, trim_orphans
from .keys import KeySpace, key_segment
from .sessions import ObjectSessionStore, decode_snapshot, encode_snapshot

__all__ = [
    "CODEC_VERSION",
    "CorruptRecordError",
    "KeySpace",
    "Listing",
    "LogDriver",
    "LogHistoryProvider",
    "LogRecord",
    "LogTail",
    "ObjectAgentFileStore",
    "ObjectDriver",
    "ObjectSessionStore",
    "StoreConflictError",
    "StoreError",
    "StoreUnavailableError",
    "StoredObject",
    "decode_message",
    "decode_snapshot",
    "encode_message",
    "encode_snapshot",
    "key_segment",
    "message_digest",
    "trim_orphans",
]
