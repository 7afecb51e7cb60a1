"""``translate()`` of the MongoDB backend as a table: each pymongo error, made as pymongo makes it, and its class.

A server's error reply goes through pymongo's own ``_check_command_response``, which picks the
class from the reply's code, exactly as it does for a reply off the wire; the text is never read.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from typing import Any

import pytest
from pymongo.errors import (
    AutoReconnect,
    BulkWriteError,
    ConfigurationError,
    InvalidOperation,
    NetworkTimeout,
    ServerSelectionTimeoutError,
    WaitQueueTimeoutError,
)
from pymongo.helpers_shared import _check_command_response  # pyright: ignore[reportPrivateUsage]

from agent_stores.core import StoreConflictError, StoreError, StoreUnavailableError
from agent_stores.mongodb._errors import translate


def reply(code: int, name: str, text: str = "some text the translation never reads") -> BaseException:
    """The exception pymongo raises for a server's error reply with ``code``."""
    response: dict[str, Any] = {"ok": 0, "errmsg": text, "code": code, "codeName": name}
    try:
        _check_command_response(response, max_wire_version=21)
    except Exception as err:
        return err
    raise AssertionError("pymongo accepted an error reply")


def tls_refused() -> BaseException:
    cause = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    cause.verify_message = "unable to get local issuer certificate"
    err = ServerSelectionTimeoutError("localhost:27018: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    err.__cause__ = cause
    return err


TABLE: list[tuple[str, BaseException, type[Exception] | None]] = [
    ("duplicate key", reply(11000, "DuplicateKey", "E11000 duplicate key error"), StoreConflictError),
    (
        "duplicate key in a bulk write",
        BulkWriteError({"writeErrors": [{"index": 0, "code": 11000, "errmsg": "E11000"}], "nInserted": 0}),
        StoreConflictError,
    ),
    ("wrong credentials", reply(18, "AuthenticationFailed", "Authentication failed."), StoreError),
    ("no such user", reply(11, "UserNotFound"), StoreError),
    ("role lacks the action", reply(13, "Unauthorized", "not authorized on db to execute command"), StoreError),
    ("tls certificate refused", tls_refused(), StoreError),
    ("unusable configuration", ConfigurationError("Unknown option foo"), StoreError),
    ("no server selected", ServerSelectionTimeoutError("127.0.0.1:27017: connection refused"), StoreUnavailableError),
    ("connection dropped", AutoReconnect("127.0.0.1:27017: connection closed"), StoreUnavailableError),
    ("socket timed out", NetworkTimeout("127.0.0.1:27017: timed out"), StoreUnavailableError),
    ("pool exhausted", WaitQueueTimeoutError("timed out waiting for a connection"), StoreUnavailableError),
    ("not primary", reply(10107, "NotWritablePrimary"), StoreUnavailableError),
    ("stepped down", reply(189, "PrimarySteppedDown"), StoreUnavailableError),
    ("shutting down", reply(91, "ShutdownInProgress"), StoreUnavailableError),
    ("time limit", reply(50, "MaxTimeMSExpired"), StoreUnavailableError),
    ("cursor lost to a restart", reply(43, "CursorNotFound"), StoreUnavailableError),
    ("text is never read", reply(2, "BadValue", "E11000 duplicate key error; not authorized; shutting down"), None),
    ("client closed", InvalidOperation("Cannot use AsyncMongoClient after close"), None),
    ("a bug", KeyError("payload"), None),
]


@pytest.mark.parametrize(("err", "expected"), [row[1:] for row in TABLE], ids=[row[0] for row in TABLE])
def test_translate(
    err: BaseException, expected: type[Exception] | None, check_translation: Callable[..., None]
) -> None:
    translated = translate(err, "MongoDB save failed")
    check_translation(err, translated, expected, prefix="MongoDB save failed: ")
    if expected is StoreError:
        assert "check" in str(translated)
