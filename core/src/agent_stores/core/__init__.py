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
from .files import ObjectAgentFileStore, decode_text, plain_literal
from .history import LogHistoryProvider, trim_orphans
from .keys import KeySpace, key_segment
from .lifecycle import ConnectedBackend, ConnectedStore, Connector, Handle, OwnedResource, route_options
from .objectlog import ObjectLogDriver
from .prefixed import PrefixedObjectDriver
from .redaction import redact_url
from .sessions import ObjectSessionStore, decode_snapshot, encode_snapshot
from .stores import Backend, BackendFactory, DriverBackend, Stores, open_stores

__all__ = [
    "CODEC_VERSION",
    "Backend",
    "BackendFactory",
    "ConnectedBackend",
    "ConnectedStore",
    "Connector",
    "CorruptRecordError",
    "DriverBackend",
    "Handle",
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
    "OwnedResource",
    "PrefixedObjectDriver",
    "StoreConflictError",
    "StoreError",
    "StoreUnavailableError",
    "StoredObject",
    "Stores",
    "decode_message",
    "decode_snapshot",
    "decode_text",
    "encode_message",
    "encode_record",
    "encode_snapshot",
    "key_segment",
    "message_digest",
    "open_stores",
    "plain_literal",
    "redact_url",
    "route_options",
    "trim_orphans",
]
