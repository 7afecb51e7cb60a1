"""Scopes: which data keys seal a key — a tenant's, a namespace's (outside tenants), or the store root's.

A scope is a string: ``""`` for the store's root, ``tenants/<tenant>/`` for a tenant, and
``sealing/namespaces/<namespace>/`` for a namespace outside tenants (history logs
``<namespace>/...``, todo lists ``todos/<namespace>/...``, checkpoints
``checkpoints/<namespace>/...``). Files and sessions, which take no namespace, stay in the
root's scope; inside a tenant every kind is the tenant's. Each scope keeps its wrapped data keys
in one object (:func:`keys_object`).
"""

from __future__ import annotations

from ..keys import TENANTS, split_tenant, tenant_root

__all__ = [
    "KEYS_OBJECT",
    "NAMESPACE_SCOPES",
    "RESERVED",
    "is_namespace_scope",
    "keys_object",
    "log_scope_of",
    "namespace_scope",
    "object_scope_of",
    "scope_name",
    "tenant_scope",
]

#: The folder, in each scope, that sealing reserves; stores never write under it.
RESERVED = "sealing/"
#: The object holding a scope's wrapped data keys (under the scope's root).
KEYS_OBJECT = RESERVED + "keys.json"
#: The folder holding the key objects of the namespaces outside tenants.
NAMESPACE_SCOPES = RESERVED + "namespaces/"

_NAMESPACED_OBJECTS = ("todos", "checkpoints")  # object kinds whose second segment is a namespace


def namespace_scope(segment: str) -> str:
    """The scope of the namespace whose key segment is ``segment``, outside tenants."""
    return f"{NAMESPACE_SCOPES}{segment}/"


def tenant_scope(tenant: str) -> str:
    """The scope of ``tenant`` (its root, ``tenants/<segment>/``).

    Raises:
        ValueError: ``tenant`` is not a non-empty string.
    """
    return tenant_root(tenant)


def is_namespace_scope(scope: str) -> bool:
    """Whether ``scope`` is a namespace's (outside tenants)."""
    return scope.startswith(NAMESPACE_SCOPES)


def keys_object(scope: str) -> str:
    """The key of the object holding ``scope``'s wrapped data keys.

    ``sealing/keys.json`` for the root, ``tenants/<t>/sealing/keys.json`` for a tenant,
    ``sealing/namespaces/<ns>/keys.json`` for a namespace.
    """
    return scope + "keys.json" if is_namespace_scope(scope) else scope + KEYS_OBJECT


def object_scope_of(key: str) -> str:
    """The scope whose data keys seal the object ``key``."""
    segment, rest = split_tenant(key)
    if segment is not None:
        return f"{TENANTS}/{segment}/"
    kind, slash, tail = rest.partition("/")
    if slash and kind in _NAMESPACED_OBJECTS:
        namespace, slash, _ = tail.partition("/")
        if slash and namespace:
            return namespace_scope(namespace)
    return ""


def log_scope_of(key: str) -> str:
    """The scope whose data keys seal the history log ``key`` (``<namespace>/<source>/<session>`` outside tenants)."""
    segment, rest = split_tenant(key)
    if segment is not None:
        return f"{TENANTS}/{segment}/"
    namespace, slash, _ = rest.partition("/")
    return namespace_scope(namespace) if slash and namespace else ""


def scope_name(scope: str) -> str:
    """How messages name ``scope``."""
    if not scope:
        return "the store's root"
    if is_namespace_scope(scope):
        return f"the namespace scope {scope[len(NAMESPACE_SCOPES) : -1]!r}"
    return f"the scope {scope!r}"
