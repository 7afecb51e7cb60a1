"""What every backend's URL parser shares: strict booleans, and a user part that must be percent-encoded.

``docs/security.md`` says why: a lenient boolean turned ``ssl_check_hostname=required`` into
*false*, and a password holding an unescaped ``#`` was read as a host name and shown in errors.
"""

from __future__ import annotations

import re
from typing import Final

__all__ = ["FALSE_SPELLINGS", "TRUE_SPELLINGS", "check_user_part", "parse_bool", "parse_bytes"]

#: The spellings of true every boolean option takes (compared case-insensitively).
TRUE_SPELLINGS: Final = frozenset({"1", "true", "yes", "on"})
#: The spellings of false every boolean option takes (compared case-insensitively).
FALSE_SPELLINGS: Final = frozenset({"0", "false", "no", "off"})

_SHOWN = 40
_BAD_ESCAPE: Final = re.compile(r"%(?![0-9A-Fa-f]{2})")


def parse_bool(value: object, *, option: str) -> bool:
    """Read a boolean option: ``1/true/yes/on`` or ``0/false/no/off`` (any case), a ``bool``, or the ints 0 and 1.

    Raises:
        ValueError: Anything else (``required``, ``t``, an empty value, ``2``, ``" true"``),
            naming ``option``: an unknown spelling never reads as false.
    """
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        text = value.lower()
        if text in TRUE_SPELLINGS:
            return True
        if text in FALSE_SPELLINGS:
            return False
        shown = repr(value) if len(value) <= _SHOWN else f"{value[:_SHOWN]!r}..."
    else:
        shown = f"a {type(value).__name__}"
    raise ValueError(f"option {option} takes 1, true, yes, on or 0, false, no, off; got {shown}")


def parse_bytes(value: object, *, option: str) -> int:
    """Read a size in bytes: a whole non-negative number (``0``, ``8388608``), as an ``int`` or as its digits.

    Raises:
        ValueError: Anything else (``-1``, ``1.5``, ``8MiB``, ``" 8"``, an empty value, a ``bool``), naming ``option``.
    """
    if isinstance(value, str):
        if value.isascii() and value.isdigit():
            return int(value)
        shown = repr(value) if len(value) <= _SHOWN else f"{value[:_SHOWN]!r}..."
    elif isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    else:
        shown = repr(value) if isinstance(value, int) else f"a {type(value).__name__}"
    raise ValueError(f"option {option} takes a whole non-negative number of bytes; got {shown}")


def check_user_part(url: str, *, what: str = "store URL") -> None:
    """Refuse a URL whose user part a parser would misread, without quoting any of it.

    The user part is what precedes the last ``@`` of the authority (``scheme://user:password@host``).
    A ``/``, ``?`` or ``#`` in it ends the authority early (``redis://:pw#x@host`` reads as host
    ``:pw``), so an authority followed by an ``@`` later in the URL is refused, as is a ``%`` in
    the user part that starts no ``%XX`` escape. ``:`` and ``@`` need no escape in a password.
    A URL with an empty authority (``file:///a@b``) or none (``sqlite:relative``) passes.

    Raises:
        ValueError: Naming ``what`` and the escape to use, never the user part itself.
    """
    _, sep, rest = url.partition("://")
    if not sep:
        return
    end = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    authority, after = rest[:end], rest[end:]
    if authority and "@" in after:
        raise ValueError(
            f"malformed {what}: a '/', '?' or '#' in the user name or password, or an '@' after the host, "
            "must be percent-encoded (%2F, %3F, %23, %40)"
        )
    user_part = authority.rpartition("@")[0]
    if _BAD_ESCAPE.search(user_part):
        raise ValueError(f"malformed {what}: a '%' in the user name or password must be written %25")
