"""How every command opens a store URL: a one-line error for a bad URL, and nothing created by a read."""

from __future__ import annotations

from agent_stores.core import MUST_EXIST, Stores, open_stores, redact_url

from ._errors import CliError

__all__ = ["open_url", "store_location"]


def open_url(url: str, *, must_exist: bool) -> Stores:
    """``open_stores(url)``, with a malformed URL or a missing backend as a one-line error.

    ``must_exist``: the store must exist and nothing is created (``open_stores``'s
    ``must_exist``): what commands that read use, so a mistyped URL is an error naming it
    (``StoreNotFoundError`` on first use) rather than a new, empty store.

    Raises:
        CliError: The URL is malformed, its backend is not installed, or the backend cannot
            open a store without creating it.
    """
    if "://" not in url:
        raise CliError(f"expected a store URL (scheme://...), got {redact_url(url)!r}")
    try:
        return open_stores(url, **({MUST_EXIST: True} if must_exist else {}))
    except ValueError as err:
        raise CliError(str(err)) from err


def store_location(stores: Stores) -> str:
    """Where the stores' data lives, one spelling per place (the backend's ``location()``, else the redacted URL)."""
    location = getattr(stores.backend, "location", None)
    return str(location()) if callable(location) else redact_url(stores.url)
