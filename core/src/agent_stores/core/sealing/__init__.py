"""Encryption at rest: stores that seal every value before a driver sees it, per-tenant keys, erasure.

``open_stores(url, encryption=Keyring.load("keyring.json"))`` (or the URL option
``keyring=``, or the environment variable ``AGENT_STORES_KEYRING``) returns
:class:`SealedStores`; ``docs/encryption.md`` describes the format, the keys and what stays
visible.
"""

from ._drivers import SealedLogDriver, SealedObjectDriver, scope_of
from ._format import MARKER, DataKey, is_sealed
from ._keys import KEYRING_ENV, KEYS_OBJECT, RESERVED, DataKeys, KeyProvider, Keyring, SealingKeyError
from ._stores import Encryption, SealedStores, forget, resolve_encryption

__all__ = [
    "KEYRING_ENV",
    "KEYS_OBJECT",
    "MARKER",
    "RESERVED",
    "DataKey",
    "DataKeys",
    "Encryption",
    "KeyProvider",
    "Keyring",
    "SealedLogDriver",
    "SealedObjectDriver",
    "SealedStores",
    "SealingKeyError",
    "forget",
    "is_sealed",
    "resolve_encryption",
    "scope_of",
]
