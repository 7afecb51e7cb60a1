"""``PrefixedObjectDriver``: one object driver seen from under a key prefix."""

from __future__ import annotations

from .drivers import Listing, ObjectDriver, StoredObject

__all__ = ["PrefixedObjectDriver"]


class PrefixedObjectDriver:
    """An :class:`~agent_stores.core.drivers.ObjectDriver` whose keys all live under ``prefix`` of another.

    Every key is ``prefix + key`` on the underlying driver, and listings come back without the
    prefix, so a store built on the view never sees, lists or writes a key outside it (an S3
    location's prefix, one application's corner of a shared bucket). The underlying driver is
    borrowed: :meth:`aclose` leaves it open.

    Args:
        driver: The driver to view.
        prefix: ``""`` or a prefix ending with ``/``.

    Raises:
        ValueError: ``prefix`` is neither empty nor ends with ``/``.
    """

    def __init__(self, driver: ObjectDriver, prefix: str) -> None:
        if prefix and not prefix.endswith("/"):
            raise ValueError(f"a driver prefix is empty or ends with '/': {prefix!r}")
        self.driver = driver
        self.prefix = prefix

    async def get(self, key: str) -> StoredObject | None:
        """Return the object under ``prefix + key``."""
        return await self.driver.get(self.prefix + key)

    async def head(self, key: str) -> str | None:
        """Return the version of ``prefix + key``."""
        return await self.driver.head(self.prefix + key)

    async def put(self, key: str, data: bytes, *, if_absent: bool = False, if_version: str | None = None) -> str:
        """Store ``data`` under ``prefix + key`` (conditions as the underlying driver)."""
        return await self.driver.put(self.prefix + key, data, if_absent=if_absent, if_version=if_version)

    async def delete(self, key: str, *, if_version: str | None = None) -> bool:
        """Remove ``prefix + key``."""
        return await self.driver.delete(self.prefix + key, if_version=if_version)

    async def list(
        self, prefix: str, *, delimiter: str | None = "/", after: str | None = None, limit: int | None = None
    ) -> Listing:
        """List under ``self.prefix + prefix``; keys and common prefixes come back relative to the view."""
        cut = len(self.prefix)
        listing = await self.driver.list(
            self.prefix + prefix,
            delimiter=delimiter,
            after=None if after is None else self.prefix + after,
            limit=limit,
        )
        return Listing([k[cut:] for k in listing.keys], [p[cut:] for p in listing.prefixes])

    async def aclose(self) -> None:
        """Nothing to release: the underlying driver is borrowed."""
        return None

    def __repr__(self) -> str:
        return f"PrefixedObjectDriver({self.driver!r}, prefix={self.prefix!r})"
