"""The error hierarchy every agent-stores backend raises.

``StoreError`` subclasses the framework's ``IntegrationException``, so code that already
catches Agent Framework integration failures catches ours. Errors the protocols name
(``FileExistsError``, ``ValueError``, ``TypeError``) are raised as those built-ins.
"""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agent_framework.exceptions import IntegrationException

if TYPE_CHECKING:
    from .drivers import LogTail

__all__ = [
    "CorruptRecordError",
    "StoreConflictError",
    "StoreError",
    "StoreNotFoundError",
    "StoreUnavailableError",
    "TlsFailure",
    "tls_failure",
]


class StoreError(IntegrationException):
    """A storage operation failed. The driver's own exception is chained as ``__cause__``."""

    def __init__(self, message: str) -> None:
        # The framework base logs every instance at DEBUG; keep that, but never attach the
        # inner exception to ``args``: the cause travels on ``__cause__`` (``raise ... from``).
        super().__init__(message)


class StoreUnavailableError(StoreError):
    """The backing server could not be reached or did not answer in time; retrying may succeed."""


class StoreNotFoundError(StoreError):
    """The store a URL names does not exist: no such database file, folder or bucket.

    Raised where a store may not be created: a store opened with ``must_exist=True`` (see
    :func:`~agent_stores.core.open_stores`), or a bucket a backend is not asked to create.
    Nothing was created.
    """


class StoreConflictError(StoreError):
    """A conditional write lost to a concurrent writer (expected version or length did not hold).

    Attributes:
        log_end: For a log append that lost, the log's end as the driver found it while losing
            (what the winners wrote, up to the first free slot), or ``None``. The log may have
            moved on since: a retry appending at its version is a fair try right away (no read,
            no back-off), and the conditional append tells whether it still holds (see
            ``docs/reliability.md``, fair claims).
    """

    log_end: LogTail | None = None


class CorruptRecordError(StoreError, ValueError):
    """A stored record could not be decoded. Nothing was changed; the record is left for inspection.

    Also a ``ValueError``, which is what the framework's own stores raise for undecodable data.
    """


#: How OpenSSL's failures read once a client library has turned them into text.
_VERIFY_TEXT = re.compile(r"certificate verify failed: ([^(\]\n]+)", re.IGNORECASE)
_SSL_TEXT = re.compile(r"\[SSL: ([A-Z0-9_]+)\]")
#: OpenSSL's words for a connection that ended, which is not a TLS problem of its own.
_NOT_TLS = frozenset({"UNEXPECTED_EOF_WHILE_READING", "UNEXPECTED_EOF"})


@dataclass(frozen=True)
class TlsFailure:
    """What failed in a TLS handshake.

    Attributes:
        verification: The client refused the server's certificate (unknown authority, wrong
            host name, expired); else the handshake failed otherwise (often: the server asked
            for a client certificate that was not given).
        reason: OpenSSL's reason, e.g. ``self-signed certificate in certificate chain``.
    """

    verification: bool
    reason: str

    def __str__(self) -> str:
        what = "TLS certificate verification failed" if self.verification else "TLS handshake failed"
        return f"{what}: {self.reason}"

    def advice(self, ca_option: str, client_cert_option: str) -> str:
        """This failure and which of the store's options to check, e.g. ``... (check ssl_ca_certs)``."""
        return f"{self} (check {ca_option if self.verification else client_cert_option})"


def tls_failure(err: BaseException) -> TlsFailure | None:
    """Return what failed in the TLS handshake behind ``err`` (its causes and messages), or ``None``.

    Client libraries wrap OpenSSL's error in their own connection error, some only as text. A
    backend's error funnel uses this to tell a certificate problem from a server that is down:
    the first never heals by retrying, so it is a :class:`StoreError` naming the problem, not a
    :class:`StoreUnavailableError`.
    """
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, ssl.SSLCertVerificationError):
            return TlsFailure(True, str(current.verify_message or current))
        if type(current).__name__ == "CertificateError":  # urllib3's own host name check
            return TlsFailure(True, str(current))
        if isinstance(current, ssl.SSLError) and not isinstance(current, ssl.SSLEOFError | ssl.SSLZeroReturnError):
            return TlsFailure(False, str(current.reason or current))
        text = str(current)
        if match := _VERIFY_TEXT.search(text):
            return TlsFailure(True, match.group(1).strip().rstrip("."))
        if (match := _SSL_TEXT.search(text)) and match.group(1) not in _NOT_TLS:
            return TlsFailure(False, match.group(1))
        current = current.__cause__ or current.__context__
    return None
