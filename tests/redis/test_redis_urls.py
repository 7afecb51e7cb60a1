"""Redis URLs: no password in what ``agent-stores check`` shows, strict booleans, TLS options only with TLS."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

import pytest

from agent_stores.redis import RedisConnection, parse_redis_url
from agent_stores.testing.servers import Server
from agent_stores.testing.urls import SECRET, VALUE, StoreURLCapabilities, StoreURLConformance


class TestRedisURLs(StoreURLConformance):
    """A server without ``requirepass`` (it refuses a user it does not know), a closed port, plaintext under TLS."""

    capabilities = StoreURLCapabilities(
        unreachable=True, refused=True, malformed=True, wrong_tls=True, boolean_options=True
    )
    time_limit = 120.0

    @pytest.fixture
    def store_urls(self, redis_single: Server) -> Mapping[str, Sequence[str]]:
        port = urlsplit(redis_single.url).port
        quick = "socket_connect_timeout=1&socket_timeout=2"
        return {
            "unreachable": [
                f"redis://agent:{SECRET}@127.0.0.1:1/0?{quick}",
                f"valkey://:{SECRET}@127.0.0.1:1/0?{quick}",
                f"redis+cluster://agent:{SECRET}@127.0.0.1:1,127.0.0.1:2?{quick}",
            ],
            "refused": [f"redis://agent:{SECRET}@127.0.0.1:{port}/0?{quick}"],
            "malformed": [
                f"redis://agent:{SECRET}@127.0.0.1:{port}/zero",
                f"redis://agent:{SECRET}@127.0.0.1:port/0",
                f"redis://agent:{SECRET}@127.0.0.1:{port}/0?ssl_ca_certs=/ca.pem",
                f"rediss://agent:{SECRET}@127.0.0.1:{port}/0?ssl_check_hostname=required",
                f"redis://127.0.0.1:{port}/0?password={SECRET}",
            ],
            # A TLS hello to a plaintext server waits for an answer that never comes: short timeouts.
            "wrong_tls": [f"rediss://agent:{SECRET}@127.0.0.1:{port}/0?socket_connect_timeout=0.2&socket_timeout=0.2"],
        }

    @pytest.fixture
    def boolean_url_options(self) -> Mapping[str, Sequence[str]]:
        return {
            "ssl_check_hostname": [
                f"rediss://127.0.0.1:1/0?ssl_check_hostname={VALUE}",
                f"valkeys://127.0.0.1:1/0?ssl_check_hostname={VALUE}",
                f"rediss+cluster://127.0.0.1:1?ssl_check_hostname={VALUE}",
            ],
        }


@pytest.mark.parametrize(
    ("text", "expected"), [("1", True), ("TRUE", True), ("on", True), ("0", False), ("No", False), ("off", False)]
)
def test_ssl_check_hostname_means_what_it_says(text: str, expected: bool) -> None:
    assert dict(parse_redis_url(f"rediss://h/0?ssl_check_hostname={text}").options)["ssl_check_hostname"] is expected


@pytest.mark.parametrize("value", ["required", "enabled", "t", "", "2"])
def test_ssl_check_hostname_of_another_spelling_is_refused(value: str) -> None:
    with pytest.raises(ValueError, match="option ssl_check_hostname takes"):
        parse_redis_url(f"rediss://h/0?ssl_check_hostname={value}")
    with pytest.raises(ValueError, match="option ssl_check_hostname takes"):
        RedisConnection.from_url("rediss://h/0", ssl_check_hostname=value)


@pytest.mark.parametrize(
    "url",
    [
        "redis://:pw@h/0?ssl_ca_certs=/ca.pem&ssl_cert_reqs=required",
        "valkey://h/0?ssl_certfile=/c.pem",
        "redis+cluster://h:1,h:2?ssl_check_hostname=true",
    ],
)
def test_tls_options_on_a_plaintext_url_are_refused(url: str) -> None:
    with pytest.raises(ValueError, match=r"use rediss://"):
        parse_redis_url(url)


def test_tls_keywords_need_tls_too_and_ssl_false_cannot_undo_rediss() -> None:
    with pytest.raises(ValueError, match=r"TLS options \(ssl_ca_certs\)"):
        RedisConnection.from_url("redis://h/0", ssl_ca_certs="/ca.pem")
    with pytest.raises(ValueError, match="ssl=False contradicts"):
        RedisConnection.from_url("rediss://h/0", ssl=False)
    with pytest.raises(ValueError, match="option ssl takes"):
        RedisConnection.from_url("redis://h/0", ssl="required")
    RedisConnection.from_url("redis://h/0", ssl="yes", ssl_ca_certs="/ca.pem")  # TLS asked for by keyword


@pytest.mark.parametrize(("text", "expected"), [("REQUIRED", "required"), ("none", "none"), ("Optional", "optional")])
def test_ssl_cert_reqs_takes_three_words(text: str, expected: str) -> None:
    assert dict(parse_redis_url(f"rediss://h/0?ssl_cert_reqs={text}").options)["ssl_cert_reqs"] == expected
    with pytest.raises(ValueError, match="option ssl_cert_reqs takes none, optional, required"):
        parse_redis_url("rediss://h/0?ssl_cert_reqs=requird")


@pytest.mark.parametrize("password", ["Pw#Leak", "Pw?Leak", "Pw/Leak", "Pw%zzLeak"])
def test_a_password_holding_an_unescaped_delimiter_is_refused_without_showing_it(password: str) -> None:
    with pytest.raises(ValueError, match="malformed Redis URL") as caught:
        parse_redis_url(f"redis://default:{password}@host:6380/0")
    assert "Leak" not in str(caught.value) and "Pw" not in str(caught.value)


def test_escaped_and_unescaped_at_and_colon_read_as_the_password() -> None:
    assert parse_redis_url("redis://u:Pw%23%3F%2F%25x@h/0").password == "Pw#?/%x"
    assert parse_redis_url("redis://u:Pw@x:y@h:7/0").password == "Pw@x:y"
