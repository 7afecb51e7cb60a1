"""``collect_stats`` on SQLite, Redis (log driver) and SeaweedFS S3 (object-store log)."""

from __future__ import annotations

from datetime import datetime

import pytest

from agent_stores.core import open_stores
from agent_stores.core.stats import collect_stats
from ops_support import CHECKPOINT_TIME, seed


@pytest.mark.asyncio
async def test_stats_count_known_contents_per_tenant_and_namespace(ops_url: str) -> None:
    async with open_stores(ops_url) as stores:
        await seed(stores, None)
        await seed(stores, "acme")
        stats = await collect_stats(stores)
        assert [t.tenant for t in stats.tenants] == [None, "acme"]
        assert stats.next_after is None
        for tenant in stats.tenants:
            assert (tenant.files, tenant.snapshots, tenant.complete) == (2, 1, True)
            by_name = {n.namespace: n for n in tenant.namespaces}
            assert sorted(by_name) == ["", "ns2"]
            default, ns2 = by_name[""], by_name["ns2"]
            assert (default.sessions, default.messages, default.todos, default.checkpoints) == (2, 5, 1, 0)
            assert (ns2.sessions, ns2.messages, ns2.todos, ns2.checkpoints) == (1, 1, 0, 1)
            assert not default.sampled and default.bytes > 0
            assert ns2.oldest_activity == ns2.newest_activity == datetime.fromisoformat(CHECKPOINT_TIME)

        # a sample smaller than the namespace: estimated, and said so
        sampled = await collect_stats(stores, tenant="acme", sample=1)
        default = next(n for n in sampled.tenants[0].namespaces if n.namespace == "")
        assert (default.sessions, default.sampled, default.sample_size) == (2, True, 1)
        assert default.messages in (4, 6)  # 2 sessions x (3 or 2) messages

        # a listing bound: counts are lower bounds, and said so
        bounded = await collect_stats(stores, tenant="acme", max_keys=1)
        assert not bounded.tenants[0].complete
        assert next(n for n in bounded.tenants[0].namespaces if n.namespace == "").sessions == 1

        # paged by tenant: the unscoped stores first, then one tenant per page
        await seed(stores, "zeta")
        first = await collect_stats(stores, limit=1)
        assert [t.tenant for t in first.tenants] == [None, "acme"] and first.next_after is not None
        second = await collect_stats(stores, limit=1, after=first.next_after)
        assert [t.tenant for t in second.tenants] == ["zeta"]
