"""The real-server layer the Redis tests (and every other backend) rely on: image rule, no-pull, URL order."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_stores.testing import servers
from agent_stores.testing.servers import (
    NO_PULL_ENV,
    ServerUnavailable,
    container_image,
    docker_engine,
    redact,
    run_container,
)
from agent_stores.testing.servers.redis import REDIS_URL_ENV, LocalRedis, ping, redis_server, server_binary


def test_image_comes_from_the_environment_else_the_official_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_STORES_REDIS_IMAGE", raising=False)
    assert container_image("AGENT_STORES_REDIS_IMAGE", "redis:7") == "redis:7"
    monkeypatch.setenv("AGENT_STORES_REDIS_IMAGE", "agent-stores/redis:local")
    assert container_image("AGENT_STORES_REDIS_IMAGE", "redis:7") == "agent-stores/redis:local"


def test_a_missing_image_fails_clearly_and_is_never_pulled(monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        docker_engine()
    except ServerUnavailable as err:
        pytest.skip(f"needs a Docker engine: {err}")
    monkeypatch.setenv(NO_PULL_ENV, "1")
    with (
        pytest.raises(pytest.fail.Exception, match="not present locally"),  # type: ignore[attr-defined]
        run_container("agent-stores/no-such-image:never-built", 6379),
    ):
        pass


def test_url_from_the_environment_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(REDIS_URL_ENV, "redis://user:pw@127.0.0.1:1/0")
    with redis_server() as server:
        assert (server.url, server.via) == ("redis://user:pw@127.0.0.1:1/0", "url")
        assert "pw" not in str(server) and redact(server.url) == "redis://***@127.0.0.1:1/0"
    # This fake server was never used by a store: keep it out of the run's server summary.
    servers._announced.remove(str(server))  # pyright: ignore[reportPrivateUsage]


def test_local_server_stops_and_restarts_on_its_port(tmp_path: Path) -> None:
    binary = server_binary()
    if binary is None:
        pytest.skip("needs redis-server")
    server = LocalRedis(binary, tmp_path)
    server.start()
    try:
        assert ping("127.0.0.1", server.port)
        server.stop()
        assert not ping("127.0.0.1", server.port)
        server.start()
        assert ping("127.0.0.1", server.port)
    finally:
        server.stop()
