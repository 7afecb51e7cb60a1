"""``redact_url``: the one way a store URL is shown (in ``repr``, logs and error messages).

Store URLs carry credentials in two places: the user-info part (``scheme://user:PASSWORD@host``)
and the query string (``?secret=…``, ``tlsCertificateKeyFilePassword=…``,
``authMechanismProperties=AWS_SESSION_TOKEN:…``). Both are replaced by ``***``, also in URLs too
malformed to parse (``mongodb:/user:PASSWORD@host``), so an error about a bad URL never shows
the secret it holds.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["SECRET_OPTION", "redact_url"]

#: Query option names that hold secrets (case-insensitive): passwords, keys, tokens, credentials.
SECRET_OPTION: Final = re.compile(
    r"pass|secret|token|credential|signature|authmechanismproperties|(?<![a-z])key(?!_?(prefix|filename|file|path)\b)",
    re.IGNORECASE,
)
# scheme ":" up to three slashes, user ":" password "@": up to the last "@" before the query, so an
# unescaped "@" or "/" in the password is redacted too.
_USERINFO: Final = re.compile(r"^(?P<head>[A-Za-z][A-Za-z0-9+.\-]*:/{0,3}[^:@/?#\s]*):(?P<secret>[^?#]*)@")
_QUERY_PAIR: Final = re.compile(r"(?P<head>[?&;](?P<name>[^=&;#]+)=)(?P<value>[^&;#]*)")


def redact_url(url: str) -> str:
    """Return ``url`` with every credential-bearing part replaced by ``***``.

    The password of the user-info part and the value of every query option whose name says
    it is a secret (see :data:`SECRET_OPTION`) are replaced; the rest is kept so the URL still
    says where the store is. Works on malformed URLs too; never raises.
    """
    if not isinstance(url, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        return repr(url)
    redacted = _USERINFO.sub(lambda m: f"{m['head']}:***@" if m["secret"] else m[0], url, count=1)

    def query(match: re.Match[str]) -> str:
        if SECRET_OPTION.search(match["name"]) and match["value"]:
            return f"{match['head']}***"
        return match[0]

    head, sep, rest = redacted.partition("?")
    return head + sep + _QUERY_PAIR.sub(query, "?" + rest)[1:] if sep else redacted
