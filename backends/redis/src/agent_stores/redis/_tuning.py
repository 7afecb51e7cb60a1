"""Whether an owned client's connections are tuned (see ``_hiredis``): only on the redis-py releases it is tested on."""

from __future__ import annotations

import importlib
import logging
import re
from typing import Final

import redis
from redis.asyncio import ConnectionPool, RedisCluster
from redis.utils import HIREDIS_AVAILABLE

__all__ = ["REDIS_PY_VERSION", "TESTED_REDIS_PY", "tune_cluster", "tune_pool", "tuning_unavailable"]

logger = logging.getLogger("agent_stores.redis")

#: The redis-py releases (major, minor) the tuning is tested on: CI runs the Redis tests on the
#: lock's redis-py and again on the newest release. On every other release, older or newer, an
#: owned client keeps redis-py's own connections.
TESTED_REDIS_PY: Final = frozenset({(7, 1), (8, 2)})

#: The installed redis-py's version: what :func:`tuning_unavailable` reads.
REDIS_PY_VERSION: str = redis.__version__


def tuning_unavailable() -> str | None:
    """Why an owned client keeps redis-py's own connections here, or ``None`` when they are tuned.

    The tuning needs a redis-py release in :data:`TESTED_REDIS_PY`, hiredis, and the redis-py
    internals ``_hiredis`` builds on.
    """
    release = re.match(r"(\d+)\.(\d+)", REDIS_PY_VERSION)
    if release is None or (int(release[1]), int(release[2])) not in TESTED_REDIS_PY:
        tested = ", ".join(f"{major}.{minor}" for major, minor in sorted(TESTED_REDIS_PY))
        return f"redis-py {REDIS_PY_VERSION} is not a release it is tested on ({tested})"
    if not HIREDIS_AVAILABLE:
        return "hiredis is not installed"
    try:
        importlib.import_module(f"{__package__}._hiredis")
    except (ImportError, AttributeError) as err:
        return f"redis-py {REDIS_PY_VERSION} lacks an internal it needs ({type(err).__name__}: {err})"
    return None


def tune_pool(pool: ConnectionPool) -> None:
    """Tune the connections ``pool`` creates (see ``_hiredis``) where :func:`tuning_unavailable` allows.

    Elsewhere ``pool`` is left as redis-py built it, and a debug line on the
    ``agent_stores.redis`` logger says why.
    """
    reason = tuning_unavailable()
    if reason is not None:
        logger.debug("the owned client keeps redis-py's own connections: %s", reason)
        return
    from ._hiredis import tune

    tune(pool)


def tune_cluster(client: RedisCluster) -> None:
    """Tune the connections a cluster client opens to its nodes (``_hiredis.tune_cluster``), as for a pool."""
    reason = tuning_unavailable()
    if reason is not None:
        logger.debug("the owned cluster client keeps redis-py's own connections: %s", reason)
        return
    from ._hiredis import tune_cluster as tune

    tune(client)
