"""``redact_url``: the one way a store URL is shown (in ``repr``, logs and error messages).

The rule, documented in ``docs/security.md``: everything between ``scheme://`` and the last
``@`` of the URL is the user part and is shown as ``***`` whatever it holds, and so is the value
of every query option :func:`is_secret_option` names.
"""

from __future__ import annotations

import re
from typing import Final
from urllib.parse import unquote_plus

__all__ = ["REDACTED", "is_secret_option", "redact_url"]

#: What a secret reads as once redacted.
REDACTED: Final = "***"

# Option names are compared lower-cased, without "_", "-", "." or spaces.
_SECRET_WORDS: Final = (
    "pass",  # password, passwd, passphrase, tlsCertificateKeyFilePassword, ssl_password
    "pwd",
    "secret",  # aws_secret_access_key, client_secret
    "token",  # session_token, sas_token, AWS_SESSION_TOKEN
    "credential",
    "signature",
    "connectionstring",  # Azure's connection_string (AccountKey=...)
    "authmechanismproperties",  # MongoDB's, may hold AWS_SESSION_TOKEN:...
)
_SECRET_NAMES: Final = frozenset({"sig", "auth", "sas", "cookie"})
# A name ending in "key" is a key (key, account_key, api_key, private_key); a file, path or
# prefix *of* a key (ssl_keyfile, key_filename, key_prefix) does not end in "key".
_SECRET_SUFFIX: Final = "key"
_SEPARATORS: Final = re.compile(r"[\s_.\-]+")
# "name=" inside an option's value: a connection string, a nested URL's query, a list of pairs.
_INNER_NAME: Final = re.compile(r"(?:^|[?&;,\s])\s*([A-Za-z][\w.\-]*)\s*=")
_SCHEME: Final = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*:/{0,3}")


def _secret_name(name: str) -> bool:
    key = _SEPARATORS.sub("", unquote_plus(name)).lower()
    return key in _SECRET_NAMES or key.endswith(_SECRET_SUFFIX) or any(word in key for word in _SECRET_WORDS)


def is_secret_option(name: str, value: str = "") -> bool:
    """Whether a query option holds a secret, by its name or by what its value holds.

    A name is secret when, lower-cased and without ``_ - .``, it contains ``pass``, ``pwd``,
    ``secret``, ``token``, ``credential``, ``signature``, ``connectionstring`` or
    ``authmechanismproperties``; is ``sig``, ``auth``, ``sas`` or ``cookie``; or ends in ``key``
    (``key``, ``account_key``, ``api_key``; not ``key_prefix``, ``ssl_keyfile``,
    ``key_filename``). A value is secret when it holds ``name=`` for such a name (an Azure
    ``AccountKey=``/``SharedAccessSignature=``, a nested URL's ``sig=``), percent-encoded or not.
    """
    if _secret_name(name):
        return True
    return any(_secret_name(inner) for text in {value, unquote_plus(value)} for inner in _INNER_NAME.findall(text))


def _option_spans(url: str, start: int) -> list[tuple[int, int]]:
    """Where the secret option values are in the options of ``url`` after its first ``?`` or ``#`` from ``start``.

    A piece with no ``=`` after a secret value (``token=ab&cd``: an unescaped ``&`` in it) is secret too.
    """
    marks = [i for i in (url.find("?", start), url.find("#", start)) if i >= 0]
    if not marks:
        return []
    spans: list[tuple[int, int]] = []
    hiding = False
    position = min(marks) + 1
    for piece in url[position:].split("&"):
        name, equals, value = piece.partition("=")
        if equals:
            hiding = bool(value) and is_secret_option(name, value)
            if hiding:
                spans.append((position + len(name) + 1, position + len(piece)))
        elif hiding and piece:
            spans.append((position, position + len(piece)))
        position += len(piece) + 1
    return spans


def redact_url(url: str) -> str:
    """Return ``url`` with every credential-bearing part replaced by ``***``.

    The user part (everything between ``scheme://`` and the last ``@``: a user name and a
    password holding ``# ? / @ : %``, escaped or not, included) and the value of every secret
    query option (:func:`is_secret_option`) are replaced; the rest is kept so the URL still
    says where the store is. An ``@`` later in the URL (in a path or an option) hides what
    precedes it too, and options are read from the first ``?`` or ``#`` of the URL and from
    the first after its last ``@``: more is hidden, never less. Works on malformed URLs
    (``mongodb:/u:pw@h``, no scheme at all) too; never raises.
    """
    if not isinstance(url, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        return f"<{type(url).__name__}>"  # not a URL: its repr could hold anything
    scheme = _SCHEME.match(url)
    start = scheme.end() if scheme else 0
    at = url.rfind("@", start)
    spans = [(start, at)] if at > start else []
    spans += _option_spans(url, start) + (_option_spans(url, at + 1) if at >= 0 else [])
    merged: list[list[int]] = []
    for first, last in sorted(spans):
        if merged and first <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], last)
        elif last > first:
            merged.append([first, last])
    shown: list[str] = []
    end = 0
    for first, last in merged:
        shown += [url[end:first], REDACTED]
        end = last
    return "".join(shown) + url[end:]
