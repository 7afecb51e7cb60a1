"""agent-stores backend for MongoDB: history, harness files and sessions on pymongo's native async client.

::

    from agent_stores.mongodb import MongoDBHistoryProvider

    async with MongoDBHistoryProvider.from_url("mongodb://localhost:27017/agents", max_messages=200) as history:
        ...

or every store on one client: ``agent_stores.core.open_stores("mongodb://localhost:27017/agents")``.
No multi-document transactions are used: a standalone server, a replica set and a sharded
cluster all work.
"""

from ._backend import MongoDBBackend
from ._database import DEFAULT_DATABASE, DEFAULT_PREFIX, SCHEMA_VERSION, CollectionNames, MongoDBDatabase
from ._documents import MAX_DOCUMENT_BYTES
from ._files import MongoDBAgentFileStore
from ._history import MongoDBHistoryProvider
from ._log_driver import MongoDBLogDriver
from ._object_driver import MongoDBObjectDriver
from ._sessions import MongoDBSessionStore

__all__ = [
    "DEFAULT_DATABASE",
    "DEFAULT_PREFIX",
    "MAX_DOCUMENT_BYTES",
    "SCHEMA_VERSION",
    "CollectionNames",
    "MongoDBAgentFileStore",
    "MongoDBBackend",
    "MongoDBDatabase",
    "MongoDBHistoryProvider",
    "MongoDBLogDriver",
    "MongoDBObjectDriver",
    "MongoDBSessionStore",
]
