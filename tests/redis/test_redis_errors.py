"""``translate()`` of the Redis backend as a table: each redis-py error, made as redis-py makes it, and its class.

Server replies go through redis-py's own parser (``parse_error``), which picks the class from the
reply's code, exactly as it does for a reply off the wire.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable

import pytest
from redis import exceptions as redis_errors
from redis._parsers.base import BaseParser

from agent_stores.core import CorruptRecordError, StoreError, StoreUnavailableError
from agent_stores.redis._errors import translate


def reply(text: str) -> BaseException:
    """The exception redis-py raises for the error reply ``text``."""
    return BaseParser.parse_error(text)


def chained(outer: BaseException, cause: BaseException) -> BaseException:
    outer.__cause__ = cause
    return outer


def unverified_certificate() -> BaseException:
    cause = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    cause.verify_message = "self-signed certificate in certificate chain"
    return chained(redis_errors.ConnectionError("Error 1 connecting to localhost:6380."), cause)


TABLE: list[tuple[str, BaseException, type[Exception] | None]] = [
    ("wrong password", reply("WRONGPASS invalid username-password pair or user is disabled."), StoreError),
    ("no password given", reply("NOAUTH Authentication required."), StoreError),
    ("acl command denied", reply("NOPERM User agent has no permissions to run the 'get' command"), StoreError),
    ("tls certificate refused", unverified_certificate(), StoreError),
    (
        "connection refused",
        redis_errors.ConnectionError("Error 111 connecting to 127.0.0.1:6379."),
        StoreUnavailableError,
    ),
    ("read timed out", redis_errors.TimeoutError("Timeout reading from socket"), StoreUnavailableError),
    ("deadline passed", TimeoutError("the operation did not finish within 5.0 s"), StoreUnavailableError),
    ("connection reset", ConnectionResetError(104, "Connection reset by peer"), StoreUnavailableError),
    ("loading", reply("LOADING Redis is loading the dataset in memory"), StoreUnavailableError),
    ("read-only replica", reply("READONLY You can't write against a read only replica."), StoreUnavailableError),
    ("cluster down", reply("CLUSTERDOWN The cluster is down"), StoreUnavailableError),
    ("try again", reply("TRYAGAIN Multiple keys request during rehashing of slot"), StoreUnavailableError),
    ("master down", reply("MASTERDOWN Link with MASTER is down"), StoreUnavailableError),
    ("busy script", reply("BUSY Redis is busy running a script."), StoreUnavailableError),
    ("out of memory", reply("OOM command not allowed when used memory > 'maxmemory'."), StoreUnavailableError),
    (
        "no cluster node reachable",
        chained(
            redis_errors.RedisClusterException("Redis Cluster cannot be connected."),
            redis_errors.ConnectionError("Error 111 connecting to 127.0.0.1:7000."),
        ),
        StoreUnavailableError,
    ),
    (
        "cluster refused the credentials",
        chained(
            redis_errors.RedisClusterException("Redis Cluster cannot be connected."),
            reply("WRONGPASS invalid username-password pair or user is disabled."),
        ),
        StoreError,
    ),
    (
        "slot not covered",
        redis_errors.SlotNotCoveredError('Slot "7" not covered by the cluster.'),
        StoreUnavailableError,
    ),
    (
        "foreign key type",
        reply("WRONGTYPE Operation against a key holding the wrong kind of value"),
        CorruptRecordError,
    ),
    ("script error", reply("ERR user_script:3: Script attempted to access nonexistent global variable"), None),
    ("unknown command", reply("ERR unknown command 'FOO', with args beginning with:"), None),
    ("cross-slot keys", reply("CROSSSLOT Keys in request don't hash to the same slot"), None),
    ("bad argument", redis_errors.DataError("Invalid input of type: 'dict'."), None),
    ("a bug", KeyError("payload"), None),
]


@pytest.mark.parametrize(("err", "expected"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_translate(
    err: BaseException, expected: type[Exception] | None, check_translation: Callable[..., None]
) -> None:
    translated = translate(err, what="save", address="127.0.0.1:6379")
    check_translation(err, translated, expected, prefix="save: ")


def test_the_parser_makes_the_classes_the_table_relies_on() -> None:
    assert type(reply("WRONGPASS x")) is redis_errors.AuthenticationError
    assert type(reply("NOPERM x")) is redis_errors.NoPermissionError
    assert type(reply("LOADING x")) is redis_errors.BusyLoadingError
    assert type(reply("ERR x")) is redis_errors.ResponseError


def test_messages_name_the_server_and_what_to_check() -> None:
    refused = translate(reply("WRONGPASS invalid username-password pair"), what="save", address="10.0.0.1:6379")
    assert refused is not None and "10.0.0.1:6379" in str(refused) and "password" in str(refused)
    tls = translate(unverified_certificate(), what="save", address="10.0.0.1:6380")
    assert tls is not None and "ssl_ca_certs" in str(tls)
