"""agent-stores core: the rules every store shares, and generic adapters over small drivers.

Build a store from any driver::

    from agent_stores.core import LogHistoryProvider, ObjectAgentFileStore, ObjectSessionStore
    from agent_stores.core.memory import MemoryLogDriver, MemoryObjectDriver

    history = LogHistoryProvider(MemoryLogDriver(), source_id="history")
    objects = MemoryObjectDriver()
    files, sessions = ObjectAgentFileStore(objects), ObjectSessionStore(objects)
"""

from .cache import BoundedCache
from .codec import (
    CODEC_VERSION,
    DecodeCache,
    decode_message,
    decode_messages,
    encode_message,
    encode_record,
    message_digest,
)
from .compaction import CompactionRecord, StoreCompactionProvider
from .drivers import (
    Listing,
    LogDriver,
    LogInfo,
    LogRecord,
    LogTail,
    LogVersion,
    ObjectDriver,
    OrderedPut,
    StoredObject,
    put_in_order,
)
from .errors import (
    CorruptRecordError,
    StoreConflictError,
    StoreError,
    StoreNotFoundError,
    StoreUnavailableError,
    TlsFailure,
    tls_failure,
)
from .files import ObjectAgentFileStore, decode_text, plain_literal
from .fork import ForkReport, fork_session
from .harness import OPENAI_API_ENV, harness_kwargs, openai_client
from .history import LogHistoryProvider, hide_unanswered_calls, trim_orphans
from .keys import TENANTS, KeySpace, decode_segment, key_segment, tenant_root
from .lifecycle import MUST_EXIST, ConnectedBackend, ConnectedStore, Connector, Handle, OwnedResource, route_options
from .listing import Segment
from .objectlog import ObjectLogDriver
from .prefixed import PrefixedLogDriver, PrefixedObjectDriver
from .redaction import redact_url
from .sealmark import PlaintextStoreError, SealedStoreError
from .sessions import ObjectSessionStore, SessionUpdate, VersionedSession, decode_snapshot, encode_snapshot
from .stores import Backend, BackendFactory, DriverBackend, Stores, open_stores
from .tenants import TenantStores

__all__ = [
    "CODEC_VERSION",
    "MUST_EXIST",
    "OPENAI_API_ENV",
    "TENANTS",
    "Backend",
    "BackendFactory",
    "BoundedCache",
    "CompactionRecord",
    "ConnectedBackend",
    "ConnectedStore",
    "Connector",
    "CorruptRecordError",
    "DecodeCache",
    "DriverBackend",
    "ForkReport",
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
    "OrderedPut",
    "OwnedResource",
    "PlaintextStoreError",
    "PrefixedLogDriver",
    "PrefixedObjectDriver",
    "SealedStoreError",
    "Segment",
    "SessionUpdate",
    "StoreCompactionProvider",
    "StoreConflictError",
    "StoreError",
    "StoreNotFoundError",
    "StoreUnavailableError",
    "StoredObject",
    "Stores",
    "TenantStores",
    "TlsFailure",
    "VersionedSession",
    "decode_message",
    "decode_messages",
    "decode_segment",
    "decode_snapshot",
    "decode_text",
    "encode_message",
    "encode_record",
    "encode_snapshot",
    "fork_session",
    "harness_kwargs",
    "hide_unanswered_calls",
    "key_segment",
    "message_digest",
    "open_stores",
    "openai_client",
    "plain_literal",
    "put_in_order",
    "redact_url",
    "route_options",
    "tenant_root",
    "tls_failure",
    "trim_orphans",
]
