"""agent-stores backend for S3 and S3-compatible servers: history, harness files and sessions in one bucket.

::

    from agent_stores.s3 import S3AgentFileStore

    async with S3AgentFileStore.from_url("s3://my-bucket/agents/a1?region=eu-west-1") as files:
        await files.write("notes/today.md", "# Today")

or every store on one client: ``agent_stores.core.open_stores("s3://my-bucket/agents/a1")``.
Object keys are the real paths (``agents/a1/files/notes/today.md``), so the bucket stays browsable.
"""

from ._backend import S3Backend
from ._connect import S3Bucket, S3Location, client_config, parse_s3_url
from ._driver import MAX_KEY_BYTES, S3ObjectDriver, check_key
from ._files import S3AgentFileStore
from ._history import S3HistoryProvider
from ._kms import KMSKeyProvider
from ._sessions import S3SessionStore

__all__ = [
    "MAX_KEY_BYTES",
    "KMSKeyProvider",
    "S3AgentFileStore",
    "S3Backend",
    "S3Bucket",
    "S3HistoryProvider",
    "S3Location",
    "S3ObjectDriver",
    "S3SessionStore",
    "check_key",
    "client_config",
    "parse_s3_url",
]
