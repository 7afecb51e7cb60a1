"""PostgreSQL URLs: no password in what ``agent-stores check`` shows, on every error path; strict parsing."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

import pytest

from agent_stores.postgresql import PostgreSQLDatabase, parse_postgresql_url
from agent_stores.testing.servers import Server, free_port
from agent_stores.testing.urls import SECRET, StoreURLCapabilities, StoreURLConformance


class TestPostgreSQLURLs(StoreURLConformance):
    """A closed port, a role the server asks a password of, malformed URLs, TLS required of a plaintext server."""

    capabilities = StoreURLCapabilities(unreachable=True, refused=True, malformed=True, wrong_tls=True)
    time_limit = 120.0

    @pytest.fixture
    def store_urls(self, postgresql: Server) -> Mapping[str, Sequence[str]]:
        port = urlsplit(postgresql.url).port
        quick = "connect_timeout=2&pool_timeout=2"
        return {
            "unreachable": [
                f"postgresql://agent:{SECRET}@127.0.0.1:{free_port()}/agents?{quick}",
                f"postgres://agent:{SECRET}@127.0.0.1:{free_port()}/agents?{quick}",
            ],
            "refused": [f"postgresql://agent:{SECRET}@127.0.0.1:{port}/agent_stores?{quick}"],
            "malformed": [
                f"postgresql://agent:{SECRET}@127.0.0.1:port/agents",
                f"postgresql://agent:{SECRET}@127.0.0.1:{port}/agents?no_such_option=1",
                f"postgresql://agent:{SECRET}@127.0.0.1:{port}/agents?pool_size=many",
                f"postgresql://127.0.0.1:{port}/agents?password={SECRET}",
            ],
            "wrong_tls": [f"postgresql://agent:{SECRET}@127.0.0.1:{port}/agent_stores?sslmode=require&{quick}"],
        }


def test_options_split_between_the_pool_and_libpq() -> None:
    options = parse_postgresql_url(
        "postgresql://u:p@h:5/db?pool_size=3&pool_timeout=1.5&read_timeout=7&sslmode=verify-full"
    )
    assert (options.pool_size, options.pool_timeout, options.read_timeout) == (3, 1.5, 7.0)
    assert "sslmode=verify-full" in options.conninfo and "pool_size" not in options.conninfo
    assert "read_timeout" not in options.conninfo
    assert parse_postgresql_url("postgresql://h/db", read_timeout=2.5).read_timeout == 2.5
    assert "p@h" in options.conninfo and "p@h" not in repr(options)  # the password stays out of repr


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("postgresql://h/db?pool_size=0", "option pool_size takes a whole positive number"),
        ("postgresql://h/db?pool_size=1e3", "option pool_size takes a whole positive number"),
        ("postgresql://h/db?pool_timeout=-1", "option pool_timeout takes a positive, finite number of seconds"),
        ("postgresql://h/db?read_timeout=0", "option read_timeout takes a positive, finite number of seconds"),
        ("postgresql://h/db?read_timeout=inf", "option read_timeout takes a positive, finite number of seconds"),
        ("postgresql://h/db?read_timeout=soon", "option read_timeout takes a positive, finite number of seconds"),
        ("postgresql://h/db?no_such_option=1", "invalid PostgreSQL URL"),
        ("postgresql://h/db?pool_size=1&pool_size=2", "more than once"),
        ("postgresql://h/db#frag", "no fragment"),
        ("mysql://h/db", "not a PostgreSQL URL"),
        ("postgresql://u:Pw#Leak@h/db", "malformed PostgreSQL URL"),
    ],
)
def test_a_bad_url_is_a_clear_value_error(url: str, match: str) -> None:
    with pytest.raises(ValueError, match=match) as caught:
        PostgreSQLDatabase.from_url(url)
    assert "Leak" not in str(caught.value)


def test_a_password_holding_url_delimiters_reaches_libpq_whole() -> None:
    from psycopg.conninfo import conninfo_to_dict

    for written in ["postgresql://u:Pw@x:y@h:5/db", "postgresql://u:Pw%40x%3Ay@h:5/db"]:
        parsed = conninfo_to_dict(parse_postgresql_url(written).conninfo)
        assert (parsed["user"], parsed["password"], parsed["host"]) == ("u", "Pw@x:y", "h")


def test_unknown_keyword_options_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown PostgreSQL options"):
        parse_postgresql_url("postgresql://h/db", poolsize=3)
