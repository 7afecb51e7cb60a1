"""Store lifecycle shared by the S3 stores: ``from_url`` owns the client, a constructor borrows it."""

from __future__ import annotations

from typing import Any

from ._driver import S3ObjectDriver

__all__ = ["S3Resource"]


class S3Resource:
    """Stops the driver's worker threads on ``aclose()`` even when the client is borrowed.

    ``OwnedResource`` (the core's lifecycle) closes the driver only when the store owns it, and
    warns when an owned one is collected unclosed. A store built on a borrowed client does not
    own its client, but it made the driver, whose threads it still stops; the driver closes the
    client only when it made the client itself.
    """

    driver: Any
    _closed: bool
    _owns_resource: bool
    #: The store made its driver (over a borrowed client), so it stops the driver's threads.
    _made_driver: bool = False

    async def aclose(self) -> None:
        """Close what this store owns and stop its worker threads; a borrowed client stays open."""
        if self._closed:
            return
        await super().aclose()  # type: ignore[misc]
        if self._made_driver and not self._owns_resource and isinstance(self.driver, S3ObjectDriver):
            await self.driver.aclose()
