"""``tls_failure`` finds OpenSSL's reason however a client library wrapped it."""

from __future__ import annotations

import ssl

from agent_stores.core import tls_failure


def _wrapped(inner: BaseException) -> Exception:
    try:
        try:
            raise inner
        except BaseException as err:
            raise ConnectionError("Error 1 connecting to host:6380.") from err
    except ConnectionError as outer:
        return outer


def test_a_verification_error_in_the_chain() -> None:
    inner = ssl.SSLCertVerificationError(1, "[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    inner.verify_message = "self-signed certificate in certificate chain"
    failure = tls_failure(_wrapped(inner))
    assert failure is not None and failure.verification
    assert str(failure) == "TLS certificate verification failed: self-signed certificate in certificate chain"
    assert failure.advice("ca", "cert").endswith("(check ca)")


def test_a_reason_only_in_the_message() -> None:
    text = (
        "h:1: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: IP address mismatch, "
        "certificate is not valid for '127.0.0.1'. (_ssl.c:1006) (configured timeouts...)"
    )
    failure = tls_failure(RuntimeError(text))
    assert failure is not None and failure.verification
    assert failure.reason == "IP address mismatch, certificate is not valid for '127.0.0.1'"


def test_a_handshake_refused_for_want_of_a_client_certificate() -> None:
    failure = tls_failure(
        RuntimeError("h:1: [SSL: TLSV13_ALERT_CERTIFICATE_REQUIRED] tlsv13 alert certificate required")
    )
    assert failure is not None and not failure.verification
    assert failure.advice("ca", "cert").endswith("(check cert)")


def test_a_closed_connection_or_a_refused_one_is_not_a_tls_failure() -> None:
    assert tls_failure(_wrapped(ConnectionRefusedError(111, "Connection refused"))) is None
    assert tls_failure(_wrapped(ssl.SSLEOFError(8, "EOF occurred in violation of protocol"))) is None
    assert tls_failure(RuntimeError("[SSL: UNEXPECTED_EOF_WHILE_READING] unexpected eof while reading")) is None
