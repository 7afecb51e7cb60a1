"""MongoDB URLs: no password in what ``agent-stores check`` shows, strict booleans, TLS options only with TLS.

pymongo's own client only warns about an option it cannot read and drops it (``tls=yes`` would
connect in plaintext); the backend checks the URL with pymongo's validators before any client
exists, and reads pymongo's boolean options with the core's strict parser.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

import pytest
from pymongo.uri_parser import parse_uri

from agent_stores.core import open_stores
from agent_stores.mongodb._database import parse_mongodb_url
from agent_stores.testing.servers import Server
from agent_stores.testing.urls import SECRET, VALUE, StoreURLCapabilities, StoreURLConformance

QUICK = "serverSelectionTimeoutMS=300&connectTimeoutMS=300"


class TestMongoDBURLs(StoreURLConformance):
    """The run's server (the stand-in fails any login, MongoDB refuses the user), a closed port, plaintext under TLS."""

    capabilities = StoreURLCapabilities(
        unreachable=True, refused=True, malformed=True, wrong_tls=True, boolean_options=True
    )
    time_limit = 120.0

    @pytest.fixture
    def store_urls(self, mongodb: Server) -> Mapping[str, Sequence[str]]:
        port = urlsplit(mongodb.url).port
        return {
            "unreachable": [
                f"mongodb://agent:{SECRET}@127.0.0.1:1/db?{QUICK}",
                f"mongodb://agent:{SECRET}@127.0.0.1:1,127.0.0.1:2/db?{QUICK}",
            ],
            "refused": [f"mongodb://agent:{SECRET}@127.0.0.1:{port}/db?{QUICK}"],
            "malformed": [
                f"mongodb://agent:{SECRET}@127.0.0.1:port/db",
                f"mongodb://agent:{SECRET}@127.0.0.1:{port}/db?readPreference=sideways",
                f"mongodb://agent:{SECRET}@127.0.0.1:{port}/db?tls=false&tlsCAFile=/ca.pem",
                f"mongodb+srv://agent:{SECRET}@cluster.example:27017/db",
            ],
            "wrong_tls": [f"mongodb://agent:{SECRET}@127.0.0.1:{port}/db?tls=true&{QUICK}"],
        }

    @pytest.fixture
    def boolean_url_options(self) -> Mapping[str, Sequence[str]]:
        return {
            "tls": [f"mongodb://127.0.0.1:1/db?tls={VALUE}", f"mongodb://127.0.0.1:1/db?retryWrites=true;tls={VALUE}"],
            "tlsAllowInvalidHostnames": [f"mongodb://127.0.0.1:1/db?tlsAllowInvalidHostnames={VALUE}"],
            "retryWrites": [f"mongodb://127.0.0.1:1/db?retryWrites={VALUE}"],
        }


@pytest.mark.parametrize(
    ("query", "handed_on"),
    [
        ("tls=yes&retryWrites=OFF", "tls=true&retryWrites=false"),
        ("tls=1;directConnection=No", "tls=true;directConnection=false"),
        ("appName=a&tls=true", "appName=a&tls=true"),
    ],
)
def test_booleans_reach_pymongo_as_true_or_false(query: str, handed_on: str) -> None:
    assert parse_mongodb_url(f"mongodb://u:p@h/db?{query}") == (f"mongodb://u:p@h/db?{handed_on}", "db")


@pytest.mark.parametrize(
    ("query", "match"),
    [
        ("tls=required", "option tls takes"),
        ("tls=", "option tls takes"),
        ("tlsInsecure=enabled", "option tlsInsecure takes"),
        ("tls=false&tlsCAFile=/ca.pem", r"TLS options \(tlsCAFile\) with tls=false"),
        ("ssl=0&tlsCertificateKeyFile=/c.pem", r"TLS options \(tlsCertificateKeyFile\) with tls=false"),
        ("readPreference=sideways", "Not a valid read preference"),
        ("colour=blue", "Unknown option"),
        ("tlsCAFile=/no/such/ca.pem", "not readable"),
    ],
)
def test_an_option_pymongo_would_drop_is_an_error_before_any_client(query: str, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        open_stores(f"mongodb://u:Pw-Leak@h/db?{query}")


@pytest.mark.parametrize("password", ["Pw#Leak", "Pw?Leak", "Pw/Leak", "Pw%zzLeak"])
def test_a_password_holding_an_unescaped_delimiter_is_refused_without_showing_it(password: str) -> None:
    with pytest.raises(ValueError, match="malformed MongoDB URL") as caught:
        parse_mongodb_url(f"mongodb://agent:{password}@h/db")
    assert "Leak" not in str(caught.value)


def test_what_pymongo_reads_from_tls_yes_is_tls_on() -> None:
    options = parse_uri(parse_mongodb_url("mongodb://h/db?tls=yes&tlsAllowInvalidHostnames=NO").url)["options"]
    assert options["tls"] is True and options["tlsAllowInvalidHostnames"] is False
