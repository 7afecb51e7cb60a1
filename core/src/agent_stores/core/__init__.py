"""agent-stores core: the rules every store shares, and generic adapters over small drivers.

Build a store from any driver::

    from agent_stores.core import LogHistoryProvider, ObjectAgentFileStore, ObjectSessionStore
    from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver

    history = LogHistoryProvider(MemoryLogDriver(), source_id="history")
    objects = MemoryObjectDriver()
    files, sessions = ObjectAgentFileStore(objects), ObjectSessionStore(objects)
"""

from .codec import CODEC_VERSION, decode_message, encode_message, encode_record, message_digest
from .drivers import Listing, LogDriver, LogInfo, LogRecord, LogTail, LogVersion, ObjectDriver, StoredObject
from .errors import CorruptRecordError, StoreConflictError, StoreError, StoreUnavailableError
from .files import ObjectAgentFileStore
from .history import LogHistoryProvider, trim_orphans
from .keys import KeySpace, key_segment
from .objectlog import ObjectLogDriver
from .sessions import ObjectSessionStore, decode_snapshot, encode_snapshot
from .stores import Backend, BackendFactory, Stores, open_stores

__all__ = [
    "CODEC_VERSION",
    "Backend",
    "BackendFactory",
    "CorruptRecordError",
    "KeySpace",
    "Listing",
    "LogDriver",
    "LogHistoryProvider",
    "LogInfo",
    "LogRecord",
    "LogTail",
    "LogVersion",
    "ObjectAgentFileStore",
    "ObjectDriver",
    "ObjectLogDriver",
    "ObjectSessionStore",
    "StoreConflictError",
    "StoreError",
    "StoreUnavailableError",
    "StoredObject",
    "Stores",
    "decode_message",
    "decode_snapshot",
    "encode_message",
    "encode_record",
    "encode_snapshot",
    "key_segment",
    "message_digest",
    "open_stores",
    "trim_orphans",
]
