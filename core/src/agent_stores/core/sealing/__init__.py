"""Encryption at rest: stores that seal every value before a driver sees it, per-tenant keys, erasure.

``open_stores(url, encryption=Keyring.load("keyring.json"))`` (or the URL option
``keyring=``, or the environment variable ``AGENT_STORES_KEYRING``; for AWS KMS
``kms_key_id=`` or ``AGENT_STORES_KMS_KEY_ID``) returns :class:`SealedStores`;
``docs/encryption.md`` describes the format, the keys (per tenant, per namespace outside
tenants), rotation and what stays visible.
"""

from ..sealmark import KMS_KEY_ENV, SEALED_MARKER, PlaintextStoreError, SealedStoreError, SealMarker
from ._drivers import SealedLogDriver, SealedObjectDriver, scope_of
from ._format import MARKER, DataKey, is_sealed, sealed_key_id
from ._keys import KEYRING_ENV, KEYS_OBJECT, RESERVED, DataKeys, KeyProvider, Keyring, SealingKeyError
from ._scopes import NAMESPACE_SCOPES, keys_object, log_scope_of, namespace_scope, object_scope_of, tenant_scope
from ._stores import KEY_PROVIDERS, Encryption, SealedStores, forget, kms_provider, resolve_encryption
from ._sweep import reseal_logs, reseal_objects

__all__ = [
    "KEYRING_ENV",
    "KEYS_OBJECT",
    "KEY_PROVIDERS",
    "KMS_KEY_ENV",
    "MARKER",
    "NAMESPACE_SCOPES",
    "RESERVED",
    "SEALED_MARKER",
    "DataKey",
    "DataKeys",
    "Encryption",
    "KeyProvider",
    "Keyring",
    "PlaintextStoreError",
    "SealMarker",
    "SealedLogDriver",
    "SealedObjectDriver",
    "SealedStoreError",
    "SealedStores",
    "SealingKeyError",
    "forget",
    "is_sealed",
    "keys_object",
    "kms_provider",
    "log_scope_of",
    "namespace_scope",
    "object_scope_of",
    "reseal_logs",
    "reseal_objects",
    "resolve_encryption",
    "scope_of",
    "sealed_key_id",
    "tenant_scope",
]
